package tenure_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestDriftAtTheBound: the least margin (MinMargin, 50ms), so
// that little but the MaxDrift allowance (1%) keeps a inside its lease. The coordinator's clock
// runs as fast as the bound allows (a lease of 3s lasts 2.97s of real
// time), or as slow. a is cut off 1.5s into its term (its requests vanish)
// and b campaigns: a's last act must come before b's grant, with only the
// margin to spare at the fast edge. Beyond the bound by more than the
// margin covers (3%: the lease ends 86ms early, 36ms past the margin) the
// oracle must see a act outside its lease: the check is shown able to
// fail.
func TestDriftAtTheBound(t *testing.T) {
	const drift = 0.01
	for _, tc := range []struct {
		name    string
		rate    float64
		overlap bool
	}{
		{"fast at the bound", 1 / (1 - drift), false},
		{"slow at the bound", 1 - drift, false},
		{"real rate", 1, false},
		{"fast beyond the bound by 3%", 1.03 / (1 - drift), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				c.SetClockRate(tc.rate)
				o := newOracle(c, "scheduler")
				cfg := func(h string) tenure.Config {
					cfg := testConfig(h)
					cfg.Margin, cfg.MaxDrift = timing.MinMargin, drift
					return cfg
				}
				var once sync.Once
				during := func(*tenure.Term) {
					once.Do(func() {
						time.Sleep(1500 * time.Millisecond)
						c.Block("a")
					})
				}
				stopA := runLoop(t, newElector(t, c, cfg("a")), o.lead("a", 0, during), 0)
				time.Sleep(100 * time.Millisecond)
				stopB := runLoop(t, newElector(t, c, cfg("b")), o.lead("b", 0, nil), 0)
				time.Sleep(8 * time.Second)
				c.HealAll()
				stopA()
				stopB()
				a, b := o.termsOf("a"), o.termsOf("b")
				if len(a) == 0 || len(b) == 0 {
					t.Fatalf("want a then b to lead; terms:\n%s", o.describe())
				}
				v := o.violations()
				if tc.overlap {
					if len(v) == 0 {
						t.Fatalf("clock rate %.4f beyond the bound: no act of a found outside its lease; the oracle cannot fail; terms:\n%s", tc.rate, o.describe())
					}
					t.Logf("beyond the bound, as expected: %d violations, first: %s", len(v), v[0])
					return
				}
				o.check(t)
				gap := b[0].start.Sub(a[0].end)
				t.Logf("a's last act to b's grant: %s", gap)
			})
		})
	}
}

// TestCoordinatorClockJump: the coordinator's clock jumps forward
// (a step of its wall clock, as PostgreSQL's CURRENT_TIMESTAMP would take)
// while a, cut off, runs out its term. A jump within the allowance a holds
// back (Margin + MaxDrift·TTL = 330ms) cannot carry a past its lease; a
// jump beyond it does, and the oracle sees a act while b holds the key.
func TestCoordinatorClockJump(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jump    time.Duration
		overlap bool
	}{
		{"320ms, within the allowance", 320 * time.Millisecond, false},
		{"400ms, beyond it", 400 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				o := newOracle(c, "scheduler")
				var once sync.Once
				during := func(*tenure.Term) {
					once.Do(func() {
						time.Sleep(1500 * time.Millisecond)
						c.Block("a")
						c.JumpClock(tc.jump)
					})
				}
				stopA := runLoop(t, newElector(t, c, testConfig("a")), o.lead("a", 0, during), 0)
				time.Sleep(100 * time.Millisecond)
				stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 0, nil), 0)
				time.Sleep(8 * time.Second)
				c.HealAll()
				stopA()
				stopB()
				if len(o.termsOf("b")) == 0 {
					t.Fatalf("b never led; terms:\n%s", o.describe())
				}
				if v := o.violations(); tc.overlap {
					if len(v) == 0 {
						t.Fatalf("a %s jump beyond the allowance went unseen; terms:\n%s", tc.jump, o.describe())
					}
					return
				}
				o.check(t)
			})
		})
	}
}
