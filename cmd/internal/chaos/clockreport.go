package chaos

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// leaseRates returns the slowest and fastest rates of a node clock that a
// lease of evs was counted at ({1, 1} when every clock was true).
func leaseRates(evs []history.Event) [2]float64 {
	out := [2]float64{1, 1}
	for _, ev := range evs {
		switch ev.Kind {
		case history.KindAcquire, history.KindRenew, history.KindJoin, history.KindRenewMember:
			if ev.OK && ev.Rate != 0 {
				out[0], out[1] = min(out[0], ev.Rate), max(out[1], ev.Rate)
			}
		}
	}
	return out
}

// count returns how many faults of family fam struck.
func (r *Report) count(fam string) int {
	n := 0
	for _, f := range r.Faults {
		if f.Family == fam {
			n++
		}
	}
	return n
}

// clockLine describes the run's clock faults for the summary: the rates
// the faults set, against the bound the electors assume; how far the wall
// clocks jumped; and the rates the leases were really counted at (which a
// clock plant changes). It is "" when no clock fault struck.
func (r *Report) clockLine() string {
	if r.count(FamilyClock) == 0 {
		return ""
	}
	rates := [2]float64{math.Inf(1), math.Inf(-1)}
	jumps := [2]time.Duration{math.MaxInt64, 0}
	for _, f := range r.Faults {
		if f.Family == FamilyClock {
			rates = [2]float64{min(rates[0], f.Rate), max(rates[1], f.Rate)}
			jumps = [2]time.Duration{min(jumps[0], f.Jump), max(jumps[1], f.Jump)}
		}
	}
	jump := jumps[0].Round(time.Millisecond).String()
	if jumps[1] != jumps[0] {
		jump += "–" + jumps[1].Round(time.Millisecond).String()
	}
	s := fmt.Sprintf("node clocks at %s (the electors assume at most %s), wall clocks %s ahead, back at the heal; leases counted at %s",
		rateRange(rates), percent(r.MaxDrift), jump, rateRange(r.LeaseRates))
	if beyond := math.Max(1-r.LeaseRates[0], r.LeaseRates[1]-1); beyond > r.MaxDrift+1e-9 {
		s += fmt.Sprintf(": %s off, beyond the bound", percent(beyond))
	}
	return s
}

// rateRange writes a range of clock rates: "0.9912×–1.0087×".
func rateRange(r [2]float64) string {
	if r[0] == r[1] {
		return fmt.Sprintf("%.4f×", r[0])
	}
	return fmt.Sprintf("%.4f×–%.4f×", r[0], r[1])
}

// percent writes a share as a percentage: 0.01 is "1%".
func percent(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e4)/1e2, 'f', -1, 64) + "%"
}
