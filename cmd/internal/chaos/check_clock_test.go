package chaos

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// clockedHist returns a history whose term n0.1 (token 1) was last renewed
// by a request sent at 1200ms, every lease of it counted on a node clock
// running at rate, and a write of that term accepted at 1200ms + after.
func clockedHist(rate float64, after time.Duration) *hist {
	h := newHist().term(0, "n0.1", 1, 0, 1300)
	for i := range h.Events {
		h.Events[i].Rate = rate
	}
	at := 1200 + after.Milliseconds()
	return h.write(0, "n0.1", 1, "w", at-1, true) // decided at `at`
}

// The lease-overrun checker judges each lease by the rate of the clock
// the node counted it on: the coordinator's clock may run up to MaxDrift
// faster than the node's, so a lease counted on a node clock running at
// rate r may end TTL·(1−MaxDrift)/r after its send, but never later than
// the TTL the coordinator itself keeps: a node clock slower than the bound
// allows is judged against the real lease. (TTL 2s, MaxDrift 1%.)
func TestLeaseOverrunHonoursClockRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    float64
		after   time.Duration // the write's decision, after the last send
		overrun bool
	}{
		{"true clock, inside TTL·(1−drift)", 0, 1975 * time.Millisecond, false},
		{"true clock, after TTL·(1−drift)", 0, 1985 * time.Millisecond, true},
		{"rate 1 is a true clock", 1, 1985 * time.Millisecond, true},
		{"slow clock within the bound: lease ends at 1989.9ms", 0.995, 1985 * time.Millisecond, false},
		{"slow clock within the bound, after its lease", 0.995, 1995 * time.Millisecond, true},
		{"fast clock: lease ends at 1970.1ms", 1.005, 1975 * time.Millisecond, true},
		{"fast clock, inside its lease", 1.005, 1965 * time.Millisecond, false},
		{"clock beyond the bound: the real lease, 2s", 0.9, 1995 * time.Millisecond, false},
		{"clock beyond the bound, after the real lease", 0.9, 2005 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := checkLeaseOverrun(&clockedHist(tc.rate, tc.after).History)
			if got := c.Count > 0; got != tc.overrun {
				t.Errorf("rate %v, write decided %s after the send: overrun %v (%q); want %v", tc.rate, tc.after, got, c.Details, tc.overrun)
			}
		})
	}
}

// In a partitioned run a partition's leases are its owner's membership's:
// the rate each membership lease was counted at carries over to the
// partition's history.
func TestPartitionLeaseKeepsClockRate(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		overrun bool
	}{{0, true}, {0.995, false}} {
		h := newHist()
		h.Options.Partitions = 1
		h.member(0, "n0.1", 1, 0, 1300).pterm(0, "0", "n0.1", 1, 1, 20, 1300)
		for i := range h.Events {
			if h.Events[i].Kind == history.KindJoin || h.Events[i].Kind == history.KindRenewMember {
				h.Events[i].Rate = tc.rate
			}
		}
		h.pwrite(0, "0", "n0.1", 1, "w", 1200+1984, true) // decided 1985ms after the last send
		rep := Analyze(&h.History)
		if got := rep.LeaseOverrun.Count > 0; got != tc.overrun {
			t.Errorf("membership counted at rate %v: overrun %v (%q); want %v", tc.rate, got, rep.LeaseOverrun.Details, tc.overrun)
		}
	}
}

// The summary describes the clock faults: the rates they set against the
// bound, the wall-clock jumps, and the rates leases were really counted
// at, saying so when a clock ran beyond the bound.
func TestSummaryDescribesClockFaults(t *testing.T) {
	for _, tc := range []struct {
		leaseRate float64
		want      string
	}{
		{0.995, "node clocks at 0.9950× (the electors assume at most 1%), wall clocks 2s ahead, back at the heal; leases counted at 0.9950×–1.0000×\n"},
		{0.712, "leases counted at 0.7120×–1.0000×: 28.8% off, beyond the bound\n"},
	} {
		h := clockedHist(tc.leaseRate, time.Second)
		h.Events[0].Rate = 0 // the acquire, on a true clock
		h.Faults = []FaultRecord{{Fault: Fault{Family: FamilyClock, Dur: 4 * time.Second, Rate: 0.995, Jump: 2 * time.Second}, Holder: "n0.1", Start: ms(500), End: ms(4500)}}
		var b strings.Builder
		Analyze(&h.History).WriteSummary(&b)
		if !regexp.MustCompile(`\nclock faults +1 +node clocks`).MatchString(b.String()) || !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), "max drift 1%") {
			t.Errorf("lease rate %v: summary lacks %q and the max drift:\n%s", tc.leaseRate, tc.want, b.String())
		}
	}
	var b strings.Builder
	Analyze(&clockedHist(0, time.Second).History).WriteSummary(&b)
	if strings.Contains(b.String(), "clock faults") {
		t.Errorf("a run with no clock fault describes clock faults:\n%s", b.String())
	}
}
