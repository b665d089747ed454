package bench

import (
	"fmt"
	"io"
	"time"
)

// WriteText writes r as a table of figures beside their targets.
func (r PartitionsResult) WriteText(w io.Writer, ttl time.Duration) {
	fmt.Fprintf(w, "%-44s %-22s %s\n", "figure", "target", "measured")
	for _, f := range r.Figures(ttl) {
		fmt.Fprintf(w, "%-44s %-22s %s\n", f.What, f.Target, f.Measured)
	}
}

// A Figure is one line of a PartitionsResult's report.
type Figure struct {
	What, Target, Measured string
}

// Figures returns r's figures beside their targets (Target is empty for a
// figure without one), as WriteText prints them.
func (r PartitionsResult) Figures(ttl time.Duration) []Figure {
	var out []Figure
	row := func(what, target, got string) { out = append(out, Figure{what, target, got}) }
	row(fmt.Sprintf("balance max/mean (P=%d, N=%d)", r.Partitions, r.Members), "≤ 1.001 (max ≤ ⌈P/N⌉)", fmt.Sprintf("%.4f (max %d, cap %d)", r.Imbalance, r.MaxOwned, r.Cap))
	row("cold start to fully owned", "< 20s", r.ColdStart.Round(time.Millisecond).String())
	row("claims/s in the cold start (P / cold start)", "", fmt.Sprintf("%.0f", r.ClaimsPerSecond))
	if r.WritesPerSecond >= 0 {
		row("coordinator writes/s, steady state", "", fmt.Sprintf("%.2f", r.WritesPerSecond))
	}
	if r.WritesRatio > 0 {
		row(fmt.Sprintf("coordinator writes/s at P=%d (reference)", r.ReferencePartitions), "", fmt.Sprintf("%.2f", r.ReferenceWritesPerSecond))
		row(fmt.Sprintf("writes(P=%d) / writes(P=%d)", r.Partitions, r.ReferencePartitions), "≤ 1.1", fmt.Sprintf("%.3f", r.WritesRatio))
	}
	row("CPU per member, steady state", "< 5% of a core", fmt.Sprintf("%.2f%%", 100*r.CPUPerMember))
	row("moves on a join", fmt.Sprintf("≤ %.0f (1.1·P/N)", 1.1*float64(r.Partitions)/float64(r.Members)), fmt.Sprint(r.JoinMoves))
	row("moves on a graceful leave", fmt.Sprintf("≤ %.0f (1.1·P/N)", 1.1*float64(r.Partitions)/float64(r.Members+1)), fmt.Sprint(r.LeaveMoves))
	row("planned leave hand-over p99 (max)", "≤ 1s", fmt.Sprintf("%s (%s)", r.LeaveP99.Round(time.Millisecond), r.LeaveMax.Round(time.Millisecond)))
	row("crash takeover p99 (max)", fmt.Sprintf("≤ TTL+1s = %s", ttl+time.Second), fmt.Sprintf("%s (%s)", r.CrashP99.Round(time.Millisecond), r.CrashMax.Round(time.Millisecond)))
	row("partitions re-run with a token not greater", "0", fmt.Sprint(r.StaleTokens))
	return out
}
