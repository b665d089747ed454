package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// A Report is the outcome of one benchmark run: every figure, the samples
// behind the latency figures, and what the reader must know about them.
type Report struct {
	// Benchmark is handover, failover, throughput or ttl.
	Benchmark string `json:"benchmark"`
	// Backend is the coordinator: etcd or postgres.
	Backend string `json:"backend"`
	// Command is the command line that produced the report.
	Command string `json:"command,omitempty"`
	// Settings are the run's parameters, by name: numbers, durations in
	// milliseconds under names ending in _ms, or lists.
	Settings map[string]any `json:"settings"`
	// Rows are the figures, tenure's rows before its peers'.
	Rows []Row `json:"rows"`
	// Series are the samples behind latency rows, for CDF plots.
	Series []Series `json:"series,omitempty"`
	// Failures are trials that broke a safety property (a successor that
	// acted before the old lease could have expired).
	Failures []string `json:"failures"`
	// Notes say what the figures mean and what was simulated.
	Notes []string `json:"notes,omitempty"`
	// Recommendation is the ttl benchmark's conclusion.
	Recommendation string `json:"recommendation,omitempty"`
	// Goals bound tenure's figures over its peer's (footprint), each met
	// or not.
	Goals []Goal `json:"goals,omitempty"`
	// Elapsed is how long the run took.
	Elapsed float64 `json:"elapsed_ms"`
}

// A Row is one implementation's figures in one case.
type Row struct {
	// Impl names the implementation: tenure, or its peer.
	Impl string `json:"impl"`
	// Case names the setting, when a benchmark has several
	// ("clients=10", "ttl=2s").
	Case string `json:"case,omitempty"`
	// Latency is the distribution of the measured times, if any.
	Latency *Summary `json:"latency,omitempty"`
	// Floor is the distribution of the physical floor measured in the same
	// trials, if any.
	Floor *Summary `json:"floor,omitempty"`
	// OverFloor is Latency's p50 over Floor's p50.
	OverFloor float64 `json:"over_floor,omitempty"`
	// VsPeer is tenure's figure over the peer's in the same case: p50 for
	// latencies (below 1 is faster), operations per second for throughput
	// (above 1 is faster). Set on tenure's rows.
	VsPeer float64 `json:"vs_peer,omitempty"`
	// Peer names the implementation VsPeer compares with.
	Peer string `json:"peer,omitempty"`
	// OpsPerSec is the throughput, if measured.
	OpsPerSec float64 `json:"ops_per_sec,omitempty"`
	// Usage is a cost that is neither a latency nor a throughput
	// (resident memory, CPU time), if measured: lower is better.
	Usage *Usage `json:"usage,omitempty"`
	// Failures is how many trials broke a safety property.
	Failures int `json:"failures"`
	// Extra holds benchmark-specific figures, units in their names.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Usage is an amount of a resource used, in Unit ("MiB", "ms", "ms/min").
type Usage struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// String formats u as "12.34 MiB".
func (u Usage) String() string { return fmt.Sprintf("%.2f %s", u.Value, u.Unit) }

// A Goal bounds tenure's figure over its peer's in one case (VsPeer).
type Goal struct {
	Case string `json:"case"`
	Peer string `json:"peer"`
	// Max is the largest ratio that meets the goal.
	Max float64 `json:"max_ratio"`
	// Ratio is the ratio measured, Met whether it is at most Max.
	Ratio float64 `json:"ratio"`
	Met   bool    `json:"met"`
}

// String says g in words: "goal (case): tenure at most 1.50× peer: 2.10×,
// NOT met".
func (g Goal) String() string {
	met := "met"
	if !g.Met {
		met = "NOT met"
	}
	return fmt.Sprintf("goal (%s): tenure at most %.2f× %s: %.2f×, %s", g.Case, g.Max, g.Peer, g.Ratio, met)
}

// addGoal bounds the VsPeer of tenure's row in case c by limit.
func (r *Report) addGoal(c string, limit float64) {
	for _, row := range r.Rows {
		if row.Impl == "tenure" && row.Case == c && row.VsPeer > 0 {
			r.Goals = append(r.Goals, Goal{Case: c, Peer: row.Peer, Max: limit, Ratio: row.VsPeer, Met: row.VsPeer <= limit})
		}
	}
}

// Series is the samples of one row, in milliseconds, for a CDF plot.
type Series struct {
	Impl    string    `json:"impl"`
	Case    string    `json:"case,omitempty"`
	Samples []float64 `json:"samples_ms"`
}

// AddLatency appends a row for impl in case c with samples ds, and their
// series for the CDF plots, for a benchmark measured outside this package
// (tenure bench partitions).
func (r *Report) AddLatency(impl, c string, ds []time.Duration) {
	r.addLatency(impl, c, ds, nil, 0)
}

// addLatency appends a row for impl in case c with samples ds and their
// floors (nil when the benchmark has no per-trial floor), and its series.
func (r *Report) addLatency(impl, c string, ds, floors []time.Duration, failures int) *Row {
	row := Row{Impl: impl, Case: c, Failures: failures}
	s := Summarize(ds)
	row.Latency = &s
	if len(floors) > 0 {
		f := Summarize(floors)
		row.Floor = &f
		row.OverFloor = ratio(s.P50, f.P50)
	}
	r.Rows = append(r.Rows, row)
	samples := make([]float64, len(ds))
	for i, d := range ds {
		samples[i] = ms(d)
	}
	r.Series = append(r.Series, Series{Impl: impl, Case: c, Samples: samples})
	return &r.Rows[len(r.Rows)-1]
}

// compare sets VsPeer on tenure's row in each case against the row of peer:
// latency p50 over p50, usage over usage, or ops/s over ops/s.
func (r *Report) compare(tenure, peer string) {
	for i := range r.Rows {
		t := &r.Rows[i]
		if t.Impl != tenure {
			continue
		}
		for _, p := range r.Rows {
			if p.Impl != peer || p.Case != t.Case {
				continue
			}
			switch {
			case t.Latency != nil && p.Latency != nil:
				t.VsPeer, t.Peer = ratio(t.Latency.P50, p.Latency.P50), peer
			case t.Usage != nil && p.Usage != nil:
				t.VsPeer, t.Peer = ratio(t.Usage.Value, p.Usage.Value), peer
			case p.OpsPerSec > 0:
				t.VsPeer, t.Peer = ratio(t.OpsPerSec, p.OpsPerSec), peer
			}
		}
	}
}

// Verdicts says in words, for each case, which implementation did better:
// "etcd-election won: 1.38× faster than tenure (p50: tenure 3.42 ms,
// etcd-election 2.49 ms)". Within 2% it is a tie.
func (r *Report) Verdicts() []string {
	var out []string
	for _, t := range r.Rows {
		if t.VsPeer <= 0 || t.Peer == "" {
			continue
		}
		var p Row
		for _, row := range r.Rows {
			if row.Impl == t.Peer && row.Case == t.Case {
				p = row
			}
		}
		where, times := "", max(t.VsPeer, 1/t.VsPeer)
		if t.Case != "" {
			where = " (" + t.Case + ")"
		}
		tenureBetter, fig, word := verdictTerms(t, p)
		win, lose := t.Impl, p.Impl
		if !tenureBetter {
			win, lose = lose, win
		}
		if times < 1.02 {
			out = append(out, fmt.Sprintf("a tie%s: within 2%% (%s)", where, fig))
			continue
		}
		out = append(out, fmt.Sprintf("%s won%s: %.2f× %s than %s (%s)", win, where, times, word, lose, fig))
	}
	return out
}

// verdictTerms says whether tenure's row t did better than its peer's p,
// the figures compared, and the word for "better": faster, or less.
func verdictTerms(t, p Row) (tenureBetter bool, fig, word string) {
	switch {
	case t.Latency != nil && p.Latency != nil: // lower is better
		return t.VsPeer < 1, fmt.Sprintf("p50: %s %.2f ms, %s %.2f ms", t.Impl, t.Latency.P50, p.Impl, p.Latency.P50), "faster"
	case t.Usage != nil && p.Usage != nil: // lower is better
		return t.VsPeer < 1, fmt.Sprintf("%s %s, %s %s", t.Impl, t.Usage, p.Impl, p.Usage), "less"
	}
	// throughput: higher is better
	return t.VsPeer > 1, fmt.Sprintf("ops/s: %s %.0f, %s %.0f", t.Impl, t.OpsPerSec, p.Impl, p.OpsPerSec), "faster"
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// column is one column of the table: its header and how to print a row.
type column struct {
	head string
	has  func(Row) bool
	cell func(Row) string
}

func fms(v float64) string { return fmt.Sprintf("%.2f", v) }

// columns returns the columns the rows of r have values for.
func (r *Report) columns() []column {
	lat := func(row Row) bool { return row.Latency != nil }
	floor := func(row Row) bool { return row.Floor != nil }
	all := []column{
		{"impl", func(Row) bool { return true }, func(row Row) string { return row.Impl }},
		{"case", func(row Row) bool { return row.Case != "" }, func(row Row) string { return row.Case }},
		{"n", lat, func(row Row) string { return fmt.Sprint(row.Latency.N) }},
		{"p50 ms", lat, func(row Row) string { return fms(row.Latency.P50) }},
		{"p99 ms", lat, func(row Row) string { return fms(row.Latency.P99) }},
		{"max ms", lat, func(row Row) string { return fms(row.Latency.Max) }},
		{"floor p50 ms", floor, func(row Row) string { return fms(row.Floor.P50) }},
		{"floor p99 ms", floor, func(row Row) string { return fms(row.Floor.P99) }},
		{"p50/floor", floor, func(row Row) string { return fmt.Sprintf("%.2fx", row.OverFloor) }},
		{"ops/s", func(row Row) bool { return row.OpsPerSec > 0 }, func(row Row) string { return fmt.Sprintf("%.0f", row.OpsPerSec) }},
		{"usage", func(row Row) bool { return row.Usage != nil }, func(row Row) string { return row.Usage.String() }},
		{"vs peer", func(row Row) bool { return row.VsPeer > 0 }, func(row Row) string { return fmt.Sprintf("%.2fx", row.VsPeer) }},
	}
	extras := map[string]bool{}
	for _, row := range r.Rows {
		for k := range row.Extra {
			extras[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extras)) {
		all = append(all, column{k, func(row Row) bool { _, ok := row.Extra[k]; return ok }, func(row Row) string {
			v, ok := row.Extra[k]
			if !ok {
				return "-"
			}
			return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
		}})
	}
	all = append(all, column{"failures", func(Row) bool { return true }, func(row Row) string { return fmt.Sprint(row.Failures) }})
	var out []column
	for _, c := range all {
		if slices.ContainsFunc(r.Rows, c.has) {
			out = append(out, c)
		}
	}
	return out
}

// table returns the rows as cells, the header first.
func (r *Report) table() [][]string {
	cols := r.columns()
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.head
	}
	out := [][]string{head}
	for _, row := range r.Rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = "-"
			if c.has(row) {
				cells[i] = c.cell(row)
			}
		}
		out = append(out, cells)
	}
	return out
}

// WriteTable writes the report for people: an aligned table, then the
// failures, notes and recommendation.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "tenure bench %s on %s", r.Benchmark, r.Backend)
	for _, k := range slices.Sorted(maps.Keys(r.Settings)) {
		fmt.Fprintf(w, ", %s %v", k, r.Settings[k])
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, cells := range r.table() {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.Verdicts() {
		fmt.Fprintln(w, "verdict:", v)
	}
	for _, g := range r.Goals {
		fmt.Fprintln(w, g)
	}
	for _, f := range r.Failures {
		fmt.Fprintln(w, "FAILURE:", f)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if r.Recommendation != "" {
		fmt.Fprintln(w, "recommendation:", r.Recommendation)
	}
	_, err := fmt.Fprintf(w, "took %s\n", time.Duration(r.Elapsed*float64(time.Millisecond)).Round(time.Millisecond))
	return err
}
