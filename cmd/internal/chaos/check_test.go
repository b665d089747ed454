package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// ms is a Mono reading d milliseconds after the origin of a hand-built
// history.
func ms(d int64) int64 { return d * int64(time.Millisecond) }

// hist builds histories by hand for the checkers' unit tests.
type hist struct{ History }

func newHist() *hist {
	return &hist{History{
		Options: Options{Nodes: 2, TTL: 2 * time.Second, MaxDrift: 0.01, CheckTimeout: 10 * time.Second},
		History: history.History{Finish: ms(10_000), Kills: map[string]int64{}, Pauses: map[string][][2]int64{}},
	}}
}

// term records an acquire sent at `from` (reply 10ms later), the term's
// election, a renewal every 600ms until `to`, and its end at `to`.
func (h *hist) term(node int, holder string, token uint64, from, to int64) *hist {
	h.Events = append(h.Events,
		history.Event{Node: node, Holder: holder, Kind: history.KindAcquire, Sent: ms(from), At: ms(from + 10), OK: true, Token: token, TTL: h.Options.TTL},
		history.Event{Node: node, Holder: holder, Kind: history.KindElected, At: ms(from + 10), Token: token})
	for r := from + 600; r+10 < to; r += 600 {
		h.Events = append(h.Events, history.Event{Node: node, Holder: holder, Kind: history.KindRenew, Sent: ms(r), At: ms(r + 10), OK: true, Token: token, TTL: h.Options.TTL})
	}
	h.Events = append(h.Events, history.Event{Node: node, Holder: holder, Kind: history.KindEnd, At: ms(to), Token: token, Deadline: ms(to)})
	return h
}

// write records a write sent at `at` and decided by the register 1ms later
// (accepted or stale), its writer learning the result 1ms after that.
func (h *hist) write(node int, holder string, token uint64, value string, at int64, accepted bool) *hist {
	res := history.ResultAccepted
	if !accepted {
		res = history.ResultStale
	}
	h.Events = append(h.Events,
		history.Event{Node: node, Holder: holder, Kind: history.KindWriteStart, At: ms(at), Token: token, Value: value},
		history.Event{Node: node, Holder: holder, Kind: history.KindWrite, At: ms(at + 2), Sent: ms(at), Token: token, Value: value, Result: res})
	h.Decisions = append(h.Decisions, history.Decision{Seq: uint64(len(h.Decisions) + 1), At: ms(at + 1), Token: token, Value: value, Path: "fenced", Accepted: accepted})
	return h
}

func (h *hist) read(call, ret int64, token uint64, value string) *hist {
	h.Reads = append(h.Reads, history.Read{Call: ms(call), Return: ms(ret), OK: true, Token: token, Value: value})
	return h
}

// legal is a history with two terms and concurrent operations that breaks
// no rule: the first term's last write races the second term's first and
// is rejected as stale, reads overlap writes.
func legal() *hist {
	h := newHist()
	h.term(0, "n0.1", 1, 0, 1500).term(1, "n1.1", 2, 2600, 6000)
	h.write(0, "n0.1", 1, "a", 100, true).write(0, "n0.1", 1, "b", 1400, true)
	h.write(1, "n1.1", 2, "c", 2700, true)
	// n0.1's write sent at 1400 and held in the network lands at 2800.
	h.Events = append(h.Events,
		history.Event{Node: 0, Holder: "n0.1", Kind: history.KindWriteStart, At: ms(1450), Token: 1, Value: "late"},
		history.Event{Node: 0, Holder: "n0.1", Kind: history.KindWrite, At: ms(2802), Sent: ms(1450), Token: 1, Value: "late", Result: history.ResultStale})
	h.Decisions = append(h.Decisions, history.Decision{Seq: 4, At: ms(2801), Token: 1, Value: "late", Path: "fenced"})
	h.read(50, 150, 1, "a").read(2650, 2750, 2, "c").read(3000, 3001, 2, "c")
	return h
}

func TestCheckersPassALegalHistory(t *testing.T) {
	rep := Analyze(&legal().History)
	for _, c := range rep.Checks() {
		if c.Count != 0 {
			t.Errorf("%s: %d violations on a legal history: %v", c.Name, c.Count, c.Details)
		}
	}
	if rep.LinearizabilityResult != "Ok" {
		t.Errorf("porcupine = %s; want Ok", rep.LinearizabilityResult)
	}
	if len(rep.Spans) != 2 || rep.WritesAccepted != 3 || rep.WritesRejected != 1 {
		t.Errorf("spans %d, writes accepted %d, rejected %d; want 2, 3, 1", len(rep.Spans), rep.WritesAccepted, rep.WritesRejected)
	}
}

// Each checker reports the violation it exists for, on a history that is
// legal but for that one violation.
func TestCheckersReportViolations(t *testing.T) {
	testViolations(t, legal, []violationCase{
		{"stale write accepted", func(r *Report) *history.Check { return &r.StaleWrites }, func(h *hist) {
			h.Decisions[3].Accepted = true // the late write of token 1, after token 2
			h.Events[len(h.Events)-1].Result = history.ResultAccepted
			h.Reads = nil
		}, "token 1 accepted (fenced path) after token 2"},
		{"token order", func(r *Report) *history.Check { return &r.TokenOrder }, func(h *hist) {
			h.term(0, "n0.2", 1, 7000, 8000) // a later term reusing token 1
		}, "n0.2 began term 1"},
		{"overlap", func(r *Report) *history.Check { return &r.Overlap }, func(h *hist) {
			h.term(0, "n0.2", 3, 5000, 7000) // begins while n1.1 (token 2) leads until 6s
		}, "overlap"},
		{"lease overrun", func(r *Report) *history.Check { return &r.LeaseOverrun }, func(h *hist) {
			// n1.1 writes 2s after its last renewal was sent (5600):
			// past TTL·(1−MaxDrift).
			h.write(1, "n1.1", 2, "overrun", 5600+2000, true)
		}, "landed"},
		{"non-linearizable read", func(r *Report) *history.Check { return &r.Linearizable }, func(h *hist) {
			h.read(3100, 3200, 1, "a") // the value token 2 overwrote
		}, "not linearizable"},
	})
}

// violationCase is a history that is legal but for one violation, and
// what its checker must report.
type violationCase struct {
	name  string
	check func(*Report) *history.Check
	build func(h *hist) // adds the violation to a legal history
	want  string        // in the checker's details
}

// testViolations checks that each case's checker reports its violation
// on the history legal returns with the case's violation added, and that
// the run fails.
func testViolations(t *testing.T, legal func() *hist, cases []violationCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := legal()
			tc.build(h)
			rep := Analyze(&h.History)
			c := tc.check(rep)
			if c.Count == 0 {
				t.Fatalf("%s: no violation reported", c.Name)
			}
			if !strings.Contains(strings.Join(c.Details, "\n"), tc.want) {
				t.Errorf("%s details = %q; want one containing %q", c.Name, c.Details, tc.want)
			}
			if rep.OK() || rep.Violations < c.Count {
				t.Errorf("report OK() = %v, violations %d; want a failed run counting %d", rep.OK(), rep.Violations, c.Count)
			}
		})
	}
}

// When porcupine cannot decide in time, the run fails and says why.
func TestLinearizabilityUnknownFails(t *testing.T) {
	h := newHist()
	h.Options.CheckTimeout = 20 * time.Millisecond
	h.term(0, "n0.1", 1, 0, 9000)
	// Many writes whose outcome nobody learned, all concurrent with a read
	// of a value never written: porcupine must try every subset.
	for i := range 40 {
		v := fmt.Sprintf("w%d", i)
		h.Events = append(h.Events, history.Event{Node: 0, Holder: "n0.1", Kind: history.KindWriteStart, At: ms(int64(100 + i)), Token: uint64(i + 1), Value: v})
	}
	h.read(200, 300, 999, "never")
	c, res := checkLinearizable(&h.History)
	if res != "Unknown" {
		t.Fatalf("porcupine = %s; want Unknown (timed out)", res)
	}
	if c.Count != 1 || !strings.Contains(c.Details[0], "no verdict") {
		t.Fatalf("check = %+v; want one violation saying there is no verdict", c)
	}
}

func TestSpans(t *testing.T) {
	h := newHist().term(0, "n0.1", 1, 0, 1500)
	h.Events = append(h.Events,
		history.Event{Node: 1, Holder: "n1.1", Kind: history.KindElected, At: ms(2000), Token: 2},
		history.Event{Node: 2, Holder: "n2.1", Kind: history.KindElected, At: ms(4000), Token: 3},
		history.Event{Node: 2, Holder: "n2.1", Kind: history.KindEnd, At: ms(5000), Token: 3, Deadline: ms(4800)})
	h.Kills["n1.1"] = ms(3000)
	want := [][2]int64{{10, 1500}, {2000, 3000}, {4000, 4800}}
	sp := history.Spans(&h.History.History)
	if len(sp) != len(want) {
		t.Fatalf("Spans() = %+v; want %d spans", sp, len(want))
	}
	for i, w := range want {
		if sp[i].Start != ms(w[0]) || sp[i].End != ms(w[1]) {
			t.Errorf("span %d = [%d, %d]ns; want [%d, %d]ms: the end is the earlier of end and deadline, or the kill", i, sp[i].Start, sp[i].End, w[0], w[1])
		}
	}
}
