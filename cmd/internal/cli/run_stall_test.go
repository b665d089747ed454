package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/timing"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

func stallCfg(ttl, margin time.Duration) tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.TTL, cfg.Margin, cfg.MaxDrift = ttl, margin, 0.01
	return cfg
}

// TestStallTermAt: SIGTERM at --kill-grace before the guard's SIGKILL (its
// lead, 50 ms at these TTLs, before the deadline), never before the next
// renewal is overdue, and none when that is at or past the SIGKILL.
func TestStallTermAt(t *testing.T) {
	ms := func(n int) boottime.Instant { return boottime.Instant(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name          string
		ttl, margin   time.Duration
		grace         time.Duration
		deadline, now boottime.Instant
		want          boottime.Instant
	}{
		// --ttl 3s: renewed after min(1s, 3s/3, 1.97s/2) = 985ms, overdue
		// 300ms later.
		{"grace does not fit: at overdue", 3 * time.Second, time.Second, time.Second, ms(1970), 0, ms(1285)},
		{"grace fits", 3 * time.Second, time.Second, 500 * time.Millisecond, ms(1970), 0, ms(1420)},
		{"overdue past the deadline: none", 3 * time.Second, 2500 * time.Millisecond, time.Second, ms(470), 0, 0},
		{"default flags", 10 * time.Second, time.Second, 2 * time.Second, ms(8900), 0, ms(6850)},
		// Renewed after 340ms (half the time left), overdue at 640ms: after
		// the SIGKILL (630ms) though before the deadline: none.
		{"overdue past the kill: none", 3 * time.Second, time.Second, time.Second, ms(680), 0, 0},
		// A grace that fits only in part: SIGTERM at overdue, not at
		// the SIGKILL − grace (720ms).
		{"part of the grace", 3 * time.Second, time.Second, 1200 * time.Millisecond, ms(1970), 0, ms(1285)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stallPlan{cfg: stallCfg(tc.ttl, tc.margin), grace: tc.grace}
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
			"--kill-grace 1s does not fit", "only 635ms before SIGKILL", "the local deadline is 1.97s after a renewal",
			"SIGKILL comes 50ms before it", "overdue 1.285s after the renewal (due after 985ms, unanswered for the retry period 300ms)",
			"use --kill-grace 635ms or less, or --ttl 4s or more"}},
		{"no SIGTERM at all", 3 * time.Second, 2500 * time.Millisecond, time.Second, []string{
			"gets no SIGTERM, only SIGKILL", "use --ttl 6s or more"}},
		{"default flags", 10 * time.Second, time.Second, 2 * time.Second, nil},
		{"fits exactly", 3 * time.Second, time.Second, 635 * time.Millisecond, nil},
		{"50ms too long", 3 * time.Second, time.Second, 685 * time.Millisecond, []string{"only 635ms before SIGKILL"}},
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

// renewSends is a memory coordinator that records when each membership
// renewal is sent.
type renewSends struct {
	*memory.Coordinator
	mu    sync.Mutex
	sends []time.Time
}

func (c *renewSends) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	c.mu.Lock()
	c.sends = append(c.sends, time.Now())
	c.mu.Unlock()
	return c.Coordinator.RenewMember(ctx, m)
}

// TestStallGroupTermAtFollowsRenewals: the guard of a partition's command
// gets SIGTERM no sooner than a retry period after the member's next
// renewal is sent, as the runner schedules it (the Elector's schedule: a
// third of the TTL, before half the time left has gone), not a retry
// period after a schedule of its own. With --ttl 2s (safe lease 980ms) the
// guard's plan once assumed renewals every 327ms, while the member renews
// 490ms after a reply: the SIGTERM came 37ms after the renewal was sent,
// and on a loaded host ended commands whose renewals were on time.
func TestStallGroupTermAtFollowsRenewals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		const base = boottime.Instant(1 << 40) // the boot clock follows the bubble's
		defer boottime.Simulate(func() boottime.Instant { return base.Add(time.Since(epoch)) })()
		coord := &renewSends{Coordinator: memory.New()}
		defer coord.Close()
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 1, "m1", "1"
		cfg.TTL, cfg.Margin = 2*time.Second, time.Second
		g, err := partition.New(coord, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &supervisor{stall: stallPlan{cfg: cfg.Config, grace: 2 * time.Second, group: true}, group: true}
		var mu sync.Mutex
		type plan struct{ made, sigterm time.Time }
		var plans []plan // when the guard would send SIGTERM, planned after each renewal
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- g.Run(ctx, func(ctx context.Context, _ partition.Partition, term *tenure.Term) error {
				for {
					renewed := term.Renewed()
					m := s.leaseMessage(term)
					mu.Lock()
					p := plan{made: time.Now()}
					if m.TermAt != 0 {
						p.sigterm = epoch.Add(m.TermAt.Sub(base))
					}
					plans = append(plans, p)
					mu.Unlock()
					select {
					case <-ctx.Done():
						return nil
					case <-renewed:
					}
				}
			})
		}()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		retry := timing.RetryPeriod(cfg.TTL, cfg.RetryPeriod)
		mu.Lock()
		defer mu.Unlock()
		if len(plans) < 10 {
			t.Fatalf("%d renewals reached the term in 10s; want at least 10", len(plans))
		}
		checked := 0
		for _, p := range plans {
			// The renewal that the SIGTERM waits for: the first one sent
			// after the plan.
			i := slices.IndexFunc(coord.sends, func(s time.Time) bool { return s.After(p.made) })
			if i < 0 {
				continue
			}
			checked++
			if p.sigterm.IsZero() {
				t.Fatal("no SIGTERM planned for a stalled renewal; want one")
			}
			if d := p.sigterm.Sub(coord.sends[i]); d < retry {
				t.Fatalf("SIGTERM planned %s after the renewal it waits for was sent; want at least the retry period %s", d, retry)
			}
		}
		if checked == 0 {
			t.Fatal("no SIGTERM planned after a renewal was sent")
		}
	})
}
