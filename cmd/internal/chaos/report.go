package chaos

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
)

// MinAcceptedWrites is the fewest writes the register must accept for a
// run to prove anything: with fewer, the checkers had nothing to judge. A
// leader writes every 30ms, so a run with any leadership accepts hundreds.
const MinAcceptedWrites = 10

// vacuity returns why the run proved nothing, or "" when it tested
// something: no node was ever elected, or the register accepted fewer than
// MinAcceptedWrites writes.
func (r *Report) vacuity() string {
	switch {
	case len(r.Spans) == 0:
		return "no node was ever elected leader, so nothing was tested (could the nodes reach the coordinator?)"
	case r.WritesAccepted < MinAcceptedWrites:
		return fmt.Sprintf("the register accepted %d write(s), fewer than %d: too little happened to judge", r.WritesAccepted, MinAcceptedWrites)
	}
	return ""
}

// Conclusive reports whether the run tested enough to be judged: some node
// was elected and the register accepted at least MinAcceptedWrites writes.
// An inconclusive run is no pass, even with no violation; Inconclusive says
// why.
func (r *Report) Conclusive() bool { return r.Inconclusive == "" }

// Verdict is the report's verdict in a few words.
func (r *Report) Verdict() string {
	switch {
	case !r.OK():
		return fmt.Sprintf("%d safety violation(s)", r.Violations)
	case !r.Conclusive():
		return "inconclusive: " + r.Inconclusive
	}
	return "no safety violation"
}

// linearizabilityWords says porcupine's answers in words.
var linearizabilityWords = map[string]string{
	string(porcupine.Ok):      "linearizable",
	string(porcupine.Illegal): "not linearizable",
	string(porcupine.Unknown): "no verdict in time",
}

// WriteSummary writes the report as an aligned table.
func (r *Report) WriteSummary(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	plant := "none"
	if r.Plant != "" {
		plant = r.Plant
	}
	fmt.Fprintf(tw, "seed\t%d\t(replay: --seed %d)\n", r.Seed, r.Seed)
	fmt.Fprintf(tw, "run\t%s, %d nodes, %s, TTL %s, margin %s, max drift %s, planted bug: %s\n", r.Duration, r.Nodes, r.Coordinator, r.TTL, r.Margin, percent(r.MaxDrift), plant)
	fmt.Fprintf(tw, "faults\t%d\t%s\n", len(r.Faults), cmp.Or(r.faultCounts(), "none struck"))
	if line := r.clockLine(); line != "" {
		fmt.Fprintf(tw, "clock faults\t%d\t%s\n", r.count(FamilyClock), line)
	}
	fmt.Fprintf(tw, "writes\t%d\taccepted %d, rejected %d, outcome unknown %d; %d reads\n", r.WritesAttempted, r.WritesAccepted, r.WritesRejected, r.WritesUnknown, r.Reads)
	fmt.Fprintf(tw, "late writes across a pause\t%d\t%s\n", r.LateWritesAcrossPause, r.lateLine())
	for _, c := range r.Checks() {
		verdict := "ok"
		if c.Count > 0 {
			verdict = "VIOLATED"
		}
		extra := c.Note
		if c == &r.Overlap && c.Count > 0 {
			extra = fmt.Sprintf("%s of overlap in all", r.OverlapTotal.Round(time.Millisecond))
		}
		if c == &r.Linearizable {
			extra = strings.Join(nonEmpty(linearizabilityWords[r.LinearizabilityResult], c.Note), ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Name, c.Count, strings.TrimSpace(verdict+" "+extra))
	}
	r.writeLiveness(tw)
	tw.Flush()
	r.writePartitions(w)
	for _, c := range r.Checks() {
		if c.Count == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d\n", c.Name, c.Count)
		for _, d := range c.Details {
			fmt.Fprintf(w, "  %s\n", d)
		}
		if c.Count > len(c.Details) {
			fmt.Fprintf(w, "  … and %d more (see --json)\n", c.Count-len(c.Details))
		}
	}
	for _, e := range r.NodeErrors {
		fmt.Fprintf(w, "\nnode error: %s\n", e)
	}
	fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict())
}

// writeLiveness writes the liveness rows of the summary.
func (r *Report) writeLiveness(tw io.Writer) {
	l := r.Liveness
	if len(l.Recoveries) == 0 {
		fmt.Fprintf(tw, "recovery after faults\tnone measured\tno fault was followed by an accepted write before the next\n")
	} else {
		fmt.Fprintf(tw, "recovery after faults\tp50 %s\tp99 %s, max %s, bound %s (TTL + renew interval + retry period): %d of %d over\n",
			l.P50.Round(time.Millisecond), l.P99.Round(time.Millisecond), l.Max.Round(time.Millisecond), l.Bound.Round(time.Millisecond), l.OverBound, len(l.Recoveries))
	}
	fmt.Fprintf(tw, "time with no leader\t%.1f%%\t\n", 100*l.NoLeaderShare)
}

func (r *Report) faultCounts() string {
	n := map[string]int{}
	for _, f := range r.Faults {
		n[f.Family]++
	}
	var parts []string
	for _, f := range Families() {
		if n[f] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f, n[f]))
		}
	}
	return strings.Join(parts, ", ")
}

// nonEmpty returns the strings of ss that are not empty.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// lateLine explains the late writes across a pause in the summary.
func (r *Report) lateLine() string {
	s := "sent before their node was paused, landed after their lease: only fencing can decide them, and it did"
	if r.LateWritesAcrossPause == 0 {
		return s
	}
	return fmt.Sprintf("%s: %d rejected (a newer token had written), %d accepted (none had yet)", s,
		r.LateWritesRejected, r.LateWritesAcrossPause-r.LateWritesRejected)
}
