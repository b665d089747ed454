package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
)

func stallCfg(ttl, margin time.Duration) tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.TTL, cfg.Margin, cfg.MaxDrift = ttl, margin, 0.01
	return cfg
}

// TestStallTermAt: SIGTERM at --kill-grace before the deadline, never
// before the next renewal is overdue, and none when that is at or past the
// deadline.
func TestStallTermAt(t *testing.T) {
	ms := func(n int) boottime.Instant { return boottime.Instant(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name          string
		ttl, margin   time.Duration
		grace         time.Duration
		group         bool
		deadline, now boottime.Instant
		want          boottime.Instant
	}{
		// --ttl 3s: renewed after min(1s, 3s/3, 1.97s/2) = 985ms, overdue
		// 300ms later.
		{"grace does not fit: at overdue", 3 * time.Second, time.Second, time.Second, false, ms(1970), 0, ms(1285)},
		{"grace fits", 3 * time.Second, time.Second, 500 * time.Millisecond, false, ms(1970), 0, ms(1470)},
		{"overdue past the deadline: none", 3 * time.Second, 2500 * time.Millisecond, time.Second, false, ms(470), 0, 0},
		{"default flags", 10 * time.Second, time.Second, 2 * time.Second, false, ms(8900), 0, ms(6900)},
		// A member renews every min(1s, safe lease 1.97s/3) = 656ms.
		{"group", 3 * time.Second, time.Second, 1200 * time.Millisecond, true, ms(1970), 0, ms(956)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stallPlan{cfg: stallCfg(tc.ttl, tc.margin), grace: tc.grace, group: tc.group}
			got := p.termAt(tc.now, tc.deadline, tc.ttl)
			if d := got.Sub(tc.want); d < -2*time.Millisecond || d > 2*time.Millisecond {
				t.Errorf("termAt = %s; want %s", time.Duration(got), time.Duration(tc.want))
			}
		})
	}
}

// TestStallWarning: a --kill-grace that cannot fit is warned about with
// the arithmetic and what would fit; one that fits is not.
func TestStallWarning(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ttl, margin time.Duration
		grace       time.Duration
		want        []string // "" for no warning
	}{
		{"issue #19: --ttl 3s --kill-grace 1s", 3 * time.Second, time.Second, time.Second, []string{
			"--kill-grace 1s does not fit", "only 685ms before SIGKILL", "the local deadline is 1.97s after a renewal",
			"overdue 1.285s after it (due after 985ms, unanswered for the retry period 300ms)",
			"use --kill-grace 685ms or less, or --ttl 4s or more"}},
		{"no SIGTERM at all", 3 * time.Second, 2500 * time.Millisecond, time.Second, []string{
			"gets no SIGTERM, only SIGKILL", "use --ttl 6s or more"}},
		{"default flags", 10 * time.Second, time.Second, 2 * time.Second, nil},
		{"fits exactly", 3 * time.Second, time.Second, 685 * time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stallPlan{cfg: stallCfg(tc.ttl, tc.margin), grace: tc.grace}.warning()
			if (got == "") != (tc.want == nil) {
				t.Fatalf("warning() = %q; want one: %v", got, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning() = %q; want it to say %q", got, w)
				}
			}
		})
	}
}
