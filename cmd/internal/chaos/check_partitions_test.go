package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// member records a membership of holder with epoch: a join sent at from
// (reply 10ms later) and a renewal every 600ms until to.
func (h *hist) member(node int, holder string, epoch uint64, from, to int64) *hist {
	h.Events = append(h.Events, history.Event{Node: node, Holder: holder, Kind: history.KindJoin, Sent: ms(from), At: ms(from + 10), OK: true, Epoch: epoch, TTL: h.Options.TTL})
	for r := from + 600; r+10 < to; r += 600 {
		h.Events = append(h.Events, history.Event{Node: node, Holder: holder, Kind: history.KindRenewMember, Sent: ms(r), At: ms(r + 10), OK: true, Epoch: epoch, TTL: h.Options.TTL})
	}
	return h
}

// pterm records a claim of partition part by holder's membership epoch at
// from, the term's election 10ms later and its end at to.
func (h *hist) pterm(node int, part, holder string, epoch, token uint64, from, to int64) *hist {
	h.Events = append(h.Events,
		history.Event{Node: node, Holder: holder, Kind: history.KindClaim, Sent: ms(from), At: ms(from + 5), OK: true, Partition: part, Token: token, Epoch: epoch, TTL: h.Options.TTL},
		history.Event{Node: node, Holder: holder, Kind: history.KindElected, At: ms(from + 10), Token: token, Partition: part},
		history.Event{Node: node, Holder: holder, Kind: history.KindEnd, At: ms(to), Token: token, Deadline: ms(to), Partition: part})
	return h
}

// pwrite records a write to partition part's resource, as write does.
func (h *hist) pwrite(node int, part, holder string, token uint64, value string, at int64, accepted bool) *hist {
	h.write(node, holder, token, value, at, accepted)
	h.Events[len(h.Events)-2].Partition = part
	h.Events[len(h.Events)-1].Partition = part
	h.Decisions[len(h.Decisions)-1].Partition = part
	return h
}

// legalPartitioned is a partitioned run of two partitions that breaks no
// rule, with tokens that repeat across partitions (each partition's key
// has its own): partition 0 moves from n0.1 to n1.1 after a fault, and n1.1
// owns partition 1 throughout.
func legalPartitioned() *hist {
	h := newHist()
	h.Options.Partitions = 2
	h.Faults = []FaultRecord{{Fault: Fault{Family: FamilyPartition}, Target: 0, Holder: "n0.1", Start: ms(1000), End: ms(2000)}}
	h.member(0, "n0.1", 1, 0, 1300).member(1, "n1.1", 2, 0, 6000)
	h.pterm(0, "0", "n0.1", 1, 1, 0, 1500).pterm(1, "0", "n1.1", 2, 2, 2600, 6000)
	h.pterm(1, "1", "n1.1", 2, 1, 0, 6000)
	h.pwrite(0, "0", "n0.1", 1, "a", 100, true).pwrite(1, "0", "n1.1", 2, "b", 2700, true)
	h.pwrite(1, "1", "n1.1", 1, "c", 200, true).pwrite(1, "1", "n1.1", 1, "d", 3000, true)
	h.read(2750, 2760, 2, "b")
	h.Reads[0].Partition = "0"
	return h
}

func TestPartitionedLegalHistory(t *testing.T) {
	rep := Analyze(&legalPartitioned().History)
	for _, c := range rep.Checks() {
		if c.Count != 0 {
			t.Errorf("%s: %d violations on a legal partitioned history: %v", c.Name, c.Count, c.Details)
		}
	}
	if rep.Partitions != 2 || len(rep.PerPartition) != 2 || len(rep.Spans) != 3 || rep.WritesAccepted != 4 {
		t.Fatalf("partitions %d, figures %d, spans %d, writes accepted %d; want 2, 2, 3, 4", rep.Partitions, len(rep.PerPartition), len(rep.Spans), rep.WritesAccepted)
	}
	if got, want := rep.PerPartition[0].MaxReown, 701*time.Millisecond; got != want {
		t.Errorf("partition 0 re-owned %s after the heal; want %s (its next accepted write)", got, want)
	}
	if got, want := rep.Liveness.Max, 1001*time.Millisecond; got != want {
		t.Errorf("recovery after the fault = %s; want %s (the slowest partition, 1)", got, want)
	}
	if len(rep.NotReowned) != 0 || !rep.PerPartition[1].Reowned {
		t.Errorf("not re-owned = %v; want none", rep.NotReowned)
	}
	if rep.PerPartition[0].Terms != 2 || rep.PerPartition[1].Owned < 0.5 {
		t.Errorf("figures = %+v; want 2 terms of partition 0, partition 1 owned most of the run", rep.PerPartition)
	}
}

// Each checker reports, per partition, the violation it exists for.
func TestPartitionedViolations(t *testing.T) {
	testViolations(t, legalPartitioned, []violationCase{
		{"overlap", func(r *Report) *history.Check { return &r.Overlap }, func(h *hist) {
			h.pterm(0, "1", "n0.1", 1, 2, 1000, 1200) // while n1.1 owns partition 1
		}, "partition 1: n1.1 (token 1)"},
		{"token order", func(r *Report) *history.Check { return &r.TokenOrder }, func(h *hist) {
			h.pterm(1, "0", "n1.1", 2, 2, 7000, 8000) // token 2 of partition 0 again
		}, "partition 0: n1.1 began term 2"},
		{"stale write accepted", func(r *Report) *history.Check { return &r.StaleWrites }, func(h *hist) {
			h.pwrite(0, "0", "n0.1", 1, "late", 2800, true) // after token 2 wrote
		}, "partition 0: "},
		{"lease overrun", func(r *Report) *history.Check { return &r.LeaseOverrun }, func(h *hist) {
			// n0.1's membership (epoch 1) was last renewed at 1200: its
			// partition 2 lives until 1200 + TTL·(1−drift) = 3180, although
			// the term went on to 3500 and n0.1 joined again (epoch 3).
			h.Options.Partitions = 3
			h.member(0, "n0.1", 3, 3000, 6000)
			h.pterm(0, "2", "n0.1", 1, 1, 0, 3500).pwrite(0, "2", "n0.1", 1, "overrun", 3300, true)
		}, "partition 2: 3.301s: write overrun"},
		{"lease overrun after a hand-over", func(r *Report) *history.Check { return &r.LeaseOverrun }, func(h *hist) {
			// n1.1 hands partition 2 over at 1000 while its membership
			// (epoch 2) goes on renewing until 6000: the renewals sent
			// after the hand-over do not extend the partition's lease,
			// which ends at 600 + TTL·(1−drift) = 2580.
			h.Options.Partitions = 3
			h.pterm(1, "2", "n1.1", 2, 1, 0, 1000).pwrite(1, "2", "n1.1", 1, "late", 3500, true)
		}, "partition 2: 3.501s: write late (token 1, sent 3.500s) landed 921ms after its lease could have expired (2.580s)"},
	})
}

// A partition with no write accepted after the last fault healed is named.
func TestPartitionNotReowned(t *testing.T) {
	h := legalPartitioned()
	h.Faults = append(h.Faults, FaultRecord{Fault: Fault{Family: FamilyCrash}, Target: 1, Holder: "n1.1", Start: ms(2900), End: ms(2950)})
	rep := Analyze(&h.History)
	if len(rep.NotReowned) != 1 || rep.NotReowned[0] != "0" {
		t.Fatalf("not re-owned = %v; want partition 0 (its last write landed before the last heal)", rep.NotReowned)
	}
	var b strings.Builder
	rep.WriteSummary(&b)
	if !strings.Contains(b.String(), "not re-owned after the last fault: 1 (0)") {
		t.Errorf("summary does not name the partition not re-owned:\n%s", b.String())
	}
}

// partitionHistory turns a term's membership leases into the term's
// acquire and renewals, and keeps only the partition's events, decisions
// and reads.
func TestPartitionHistory(t *testing.T) {
	h := legalPartitioned()
	ph := partitionHistory(&h.History, "0")
	renewals, others := 0, 0
	for _, ev := range ph.Events {
		switch {
		case ev.Kind == history.KindRenew && ev.Holder == "n0.1" && ev.Token == 1:
			renewals++
		case ev.Partition != "0":
			others++
		}
	}
	if renewals != 3 || others != 0 {
		t.Errorf("partition 0: %d leases of n0.1's term 1, %d events of other partitions; want 3 (join and two renewals), 0", renewals, others)
	}
	if len(ph.Decisions) != 2 || len(ph.Reads) != 1 || ph.Options.Partitions != 0 {
		t.Errorf("partition 0: %d decisions, %d reads, partitions %d; want 2, 1, 0", len(ph.Decisions), len(ph.Reads), ph.Options.Partitions)
	}
}

// A partition's violations are drawn on the timeline too, named by their
// partition.
func TestPartitionedViolationIsMarked(t *testing.T) {
	h := legalPartitioned()
	h.pwrite(0, "0", "n0.1", 1, "late", 2800, true) // after token 2 wrote
	rep := Analyze(&h.History)
	if len(rep.StaleWrites.Marks) == 0 {
		t.Fatalf("stale write accepted in partition 0: no mark on the timeline (details %q)", rep.StaleWrites.Details)
	}
	if m := rep.StaleWrites.Marks[0]; !strings.HasPrefix(m.Text, "partition 0: ") || m.Node != 0 {
		t.Errorf("mark = %+v; want node 0, text naming partition 0", m)
	}
}
