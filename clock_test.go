package tenure_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
)

// TestClockDriftWithinBoundNeverOverlaps runs chaos with the least margin
// (MinMargin, 50ms), so that little but the MaxDrift allowance protects the
// leader, while the coordinator's clock runs at the edge of the assumed
// bound: as fast as 1/(1−MaxDrift) (leases expire early in real time) or as
// slow as 1−MaxDrift.
func TestClockDriftWithinBoundNeverOverlaps(t *testing.T) {
	fams := []family{famPartition, famBlock, famLatency, famDegrade, famDropReplies, famPause, famCrash}
	for _, rate := range []float64{1 / (1 - chaosDrift), 1 - chaosDrift} {
		for seed := uint64(1); seed <= 50; seed++ {
			t.Run(fmt.Sprintf("rate=%.4f/seed=%d", rate, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					res := runChaos(t, chaosOptions{seed: seed, nodes: 3, length: 120 * time.Second, fams: fams, rate: rate, margin: timing.MinMargin})
					if res.violations() > 0 {
						t.Fatalf("clock rate %.4f within MaxDrift %.2f produced overlapping leases:\n%s", rate, chaosDrift, res.describe(seed))
					}
				})
			})
		}
	}
}

// TestClockJumpBeyondAssumptions jumps the coordinator's clock forward by
// more than a TTL: the leader's lease expires at the coordinator at once and
// another node is granted the key while the old leader still, rightly by
// its own clock, believes it leads. No lease can prevent that overlap; the
// fenced register must still accept no stale write, and the old leader must
// step down the moment the register tells it a newer token exists.
func TestClockJumpBeyondAssumptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		hist := newSimHistory()
		reg := fence.NewRegister[string](fence.WithObserver(hist.observe))
		var rec recorder
		run := func(node int, holder string) (stop func()) {
			cfg := testConfig(holder)
			cfg.OnTransition = rec.add
			e := newElector(t, c, cfg)
			return start(e, func(ctx context.Context, term *tenure.Term) error {
				hist.lead(node, holder, term)
				for ctx.Err() == nil && term.Check() == nil {
					if err := reg.Write(term.Token(), holder); err != nil {
						return err
					}
					time.Sleep(writeEvery)
				}
				return nil
			})
		}
		stopA := run(0, "a")
		time.Sleep(time.Second) // a leads
		stopB := run(1, "b")
		time.Sleep(5*time.Second + writeEvery/2) // between two of a's writes

		c.JumpClock(2 * chaosTTL) // far beyond MaxDrift
		time.Sleep(5 * time.Second)
		stopB()
		stopA()
		synctest.Wait() // the AfterFuncs that record term ends have run

		v := hist.check(t)
		if v.overlap.Count == 0 {
			t.Fatalf("a clock jump beyond the assumptions produced no overlap; terms %+v; transitions %v", v.spans, rec.kinds())
		}
		total := v.overlapTotal
		t.Logf("overlap after a %s jump: %v (%s in all)", 2*chaosTTL, v.overlap.Details, total)
		if v.stale.Count > 0 {
			t.Fatalf("the register accepted a stale write: %v", v.stale.Details)
		}
		if total > writeEvery {
			t.Fatalf("overlap lasted %s; want the old leader fenced at its next write (≤ %s)", total, writeEvery)
		}
		var fenced bool
		for _, tr := range rec.ts {
			if name, _ := display.SplitIdentity(tr.Holder); name == "a" && tr.Kind == tenure.Fenced && errors.Is(tr.Err, tenure.ErrStaleToken) {
				fenced = true
			}
		}
		if !fenced {
			t.Fatalf("the old leader was not fenced by the register; transitions: %v", rec.kinds())
		}
		if st := reg.Stats(); st.Rejected == 0 {
			t.Fatal("the register rejected nothing; want the old leader's write rejected")
		}
	})
}
