package chaos

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/partition"
)

// PartitionFigures are one partition's figures in a partitioned run.
type PartitionFigures struct {
	Name string `json:"name"`
	// Terms is how many terms the partition had.
	Terms int `json:"terms"`
	// Owned is the share of the run during which some term of the
	// partition was live.
	Owned          float64 `json:"owned"`
	WritesAccepted int     `json:"writes_accepted"`
	// Overlaps counts pairs of its terms whose spans overlap, for
	// OverlapTotal in all.
	Overlaps     int           `json:"overlaps"`
	OverlapTotal time.Duration `json:"overlap_total,omitempty"`
	// Violations is the sum of its safety checkers' counts.
	Violations int `json:"violations"`
	// MaxReown is the longest time from a fault's heal to the partition's
	// next accepted write (see Liveness.Recoveries).
	MaxReown time.Duration `json:"max_reown"`
	// Reowned reports whether a write of the partition was accepted after
	// the last fault healed.
	Reowned bool `json:"reowned"`
}

// partitionHistory returns the history of partition name of a partitioned
// run h in the form of a single key's history, so that every checker
// judges one partition as it judges one key: the partition's term and
// write events, its resource's decisions and reads, the run's faults, and
// for each term, the lease events of the membership it was claimed under
// (join and renewals) sent before the term ended, as acquires and renewals
// of that term: a partition lives as long as its owner's membership, but
// a renewal of the membership sent after the partition was handed over
// extends nothing of it.
func partitionHistory(h *History, name string) *History {
	out := &History{Options: h.Options, Faults: h.Faults, History: history.History{Origin: h.Origin, Finish: h.Finish, Kills: h.Kills, Pauses: h.Pauses}}
	out.Options.Partitions = 0
	type membership struct {
		holder string
		epoch  uint64
	}
	type term struct {
		holder string
		token  uint64
	}
	leases := map[membership][]history.Event{}
	ends := map[term]int64{} // when each term of the partition ended
	for _, ev := range h.Events {
		if (ev.Kind == history.KindJoin || ev.Kind == history.KindRenewMember) && ev.OK {
			m := membership{ev.Holder, ev.Epoch}
			leases[m] = append(leases[m], ev)
		}
		if ev.Kind == history.KindEnd && ev.Partition == name {
			ends[term{ev.Holder, ev.Token}] = ev.At
		}
	}
	for _, ev := range h.Events {
		switch {
		case ev.Partition != name:
		case ev.Kind == history.KindClaim:
			end, ended := ends[term{ev.Holder, ev.Token}]
			for _, l := range leases[membership{ev.Holder, ev.Epoch}] {
				if ended && l.Sent > end {
					continue
				}
				l.Kind, l.Token, l.Partition = history.KindRenew, ev.Token, name
				out.Events = append(out.Events, l)
			}
		default:
			out.Events = append(out.Events, ev)
		}
	}
	for _, d := range h.Decisions {
		if d.Partition == name {
			out.Decisions = append(out.Decisions, d)
		}
	}
	for _, rd := range h.Reads {
		if rd.Partition == name {
			out.Reads = append(out.Reads, rd)
		}
	}
	return out
}

// analyzePartitions judges every partition of the partitioned run h on
// its own (partitionHistory, Analyze) and sums the verdicts into rep: each
// checker's count over all partitions, its details naming the partition.
func (rep *Report) analyzePartitions(h *History) {
	rep.Partitions = h.Options.Partitions
	rep.LinearizabilityResult = "Ok"
	rep.late = map[string]bool{}
	lastHeal := h.Origin
	for _, f := range h.Faults {
		lastHeal = max(lastHeal, f.End)
	}
	var hists []*History
	operations := 0
	for _, name := range partition.Names(h.Options.Partitions) {
		ph := partitionHistory(h, name)
		pr := Analyze(ph)
		hists = append(hists, ph)
		for i, c := range pr.Checks() {
			mergeCheck(rep.Checks()[i], name, c)
		}
		rep.OverlapTotal += pr.OverlapTotal
		maps.Copy(rep.late, pr.late)
		rep.LinearizabilityResult = worseResult(rep.LinearizabilityResult, pr.LinearizabilityResult)
		operations += pr.WritesAttempted + len(ph.Reads)
		for _, s := range pr.Spans {
			s.Partition = name
			rep.Spans = append(rep.Spans, s)
		}
		fig := PartitionFigures{Name: name, Terms: len(pr.Spans), Owned: 1 - pr.Liveness.NoLeaderShare,
			WritesAccepted: pr.WritesAccepted, Overlaps: pr.Overlap.Count, OverlapTotal: pr.OverlapTotal,
			Violations: pr.Violations, MaxReown: pr.Liveness.Max, Reowned: acceptedAfter(ph.Decisions, lastHeal)}
		if !fig.Reowned {
			rep.NotReowned = append(rep.NotReowned, name)
		}
		rep.PerPartition = append(rep.PerPartition, fig)
	}
	if rep.Linearizable.Count == 0 {
		rep.Linearizable.Note = fmt.Sprintf("%d operations in %d partitions", operations, h.Options.Partitions)
	}
	rep.Liveness = partitionLiveness(h, hists, rep.PerPartition)
	rep.countLate()
}

// mergeCheck adds the findings of check c of partition name to m.
func mergeCheck(m *history.Check, name string, c *history.Check) {
	m.Name, m.Safety = c.Name, c.Safety
	m.Count += c.Count
	for _, d := range c.Details {
		if len(m.Details) < history.MaxDetails {
			m.Details = append(m.Details, "partition "+name+": "+d)
		}
	}
	for _, k := range c.Marks {
		if len(m.Marks) < history.MaxMarks {
			k.Text = "partition " + name + ": " + k.Text
			m.Marks = append(m.Marks, k)
		}
	}
}

// worseResult returns the worse of two porcupine answers: Illegal, then
// Unknown, then Ok.
func worseResult(a, b string) string {
	rank := map[string]int{"Ok": 0, "Unknown": 1, "Illegal": 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// acceptedAfter reports whether some decision after t accepted a write.
func acceptedAfter(ds []history.Decision, t int64) bool {
	for _, d := range ds {
		if d.Accepted && d.At >= t {
			return true
		}
	}
	return false
}

// firstAccepted returns when the first write at or after t was accepted,
// or math.MaxInt64 when none was.
func firstAccepted(ds []history.Decision, t int64) int64 {
	for _, d := range ds {
		if d.Accepted && d.At >= t {
			return d.At
		}
	}
	return math.MaxInt64
}

// partitionLiveness measures recovery after each fault in a partitioned
// run: the time from the heal until every partition has had a write
// accepted again (its slowest partition), for faults after which every
// partition was written before the next fault. NoLeaderShare is the mean
// share of the run a partition had no live term.
func partitionLiveness(h *History, hists []*History, figs []PartitionFigures) Liveness {
	l := recoveries(h, func(from int64) int64 {
		slowest := from
		for _, ph := range hists {
			slowest = max(slowest, firstAccepted(ph.Decisions, from))
		}
		return slowest
	})
	owned := 0.0
	for _, fig := range figs {
		owned += fig.Owned
	}
	if len(figs) > 0 {
		l.NoLeaderShare = 1 - owned/float64(len(figs))
	}
	return l
}

// summarize fills in the quantiles of l.Recoveries and how many exceed
// l.Bound.
func (l *Liveness) summarize() {
	n := len(l.Recoveries)
	if n == 0 {
		return
	}
	s := slices.Clone(l.Recoveries)
	slices.Sort(s)
	l.P50 = s[(n-1)/2]
	l.P99 = s[min(n-1, int(math.Ceil(0.99*float64(n)))-1)]
	l.Max = s[n-1]
	for _, r := range s {
		if r > l.Bound {
			l.OverBound++
		}
	}
}

// maxPartitionLines bounds the partitions listed one per line in the
// summary; beyond it, the summary lists the worst ones.
const maxPartitionLines = 16

// writePartitions writes the per-partition figures of a partitioned run:
// a line of totals, then one line per partition (the worst ones first when
// there are many: violations, then re-own time).
func (r *Report) writePartitions(w io.Writer) {
	if r.Partitions == 0 {
		return
	}
	minOwned, maxReown := 1.0, time.Duration(0)
	for _, f := range r.PerPartition {
		minOwned, maxReown = min(minOwned, f.Owned), max(maxReown, f.MaxReown)
	}
	fmt.Fprintf(w, "\npartitions: %d; owned %.1f%% of the time on average, %.1f%% at least; overlaps %d; max re-own %s; not re-owned after the last fault: %d",
		r.Partitions, 100*(1-r.Liveness.NoLeaderShare), 100*minOwned, r.Overlap.Count, maxReown.Round(time.Millisecond), len(r.NotReowned))
	if len(r.NotReowned) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(r.NotReowned, ", "))
	}
	fmt.Fprintln(w)
	figs := slices.Clone(r.PerPartition)
	if len(figs) > maxPartitionLines {
		slices.SortStableFunc(figs, func(a, b PartitionFigures) int {
			if a.Violations != b.Violations {
				return b.Violations - a.Violations
			}
			return cmp.Compare(int64(b.MaxReown), int64(a.MaxReown))
		})
		fmt.Fprintf(w, "the %d worst partitions (all in --json):\n", maxPartitionLines)
		figs = figs[:maxPartitionLines]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "partition\towned\tterms\twrites\toverlaps\tviolations\tmax re-own\t")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%d\t%d\t%d\t%d\t%s\t\n", f.Name, 100*f.Owned, f.Terms, f.WritesAccepted, f.Overlaps, f.Violations, f.MaxReown.Round(time.Millisecond))
	}
	tw.Flush()
}
