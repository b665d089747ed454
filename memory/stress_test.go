package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// Many holders race for a few keys while faults, clock changes and restarts
// come and go. Every grant's token must exceed every token granted before
// the call began; nothing may deadlock, race or panic.
func TestStress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		keys := []string{"k0", "k1", "k2"}
		var mu sync.Mutex
		granted := map[string]uint64{} // highest token returned per key
		seen := map[string]map[uint64]bool{}
		for _, k := range keys {
			seen[k] = map[uint64]bool{}
		}
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup

		for i := range 6 {
			holder := fmt.Sprintf("node-%d", i)
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(i), 1))
				var mine []tenure.Grant
				for ctx.Err() == nil {
					k := keys[r.IntN(len(keys))]
					mu.Lock()
					floor := granted[k]
					mu.Unlock()
					cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					g, err := c.Acquire(cctx, k, holder, time.Duration(1+r.IntN(500))*time.Millisecond)
					cancel()
					if err == nil {
						mu.Lock()
						if g.Token <= floor || seen[k][g.Token] {
							t.Errorf("%s got token %d on %s; want > %d and never reused", holder, g.Token, k, floor)
						}
						seen[k][g.Token] = true
						granted[k] = max(granted[k], g.Token)
						mu.Unlock()
						mine = append(mine, g)
					}
					if len(mine) > 0 {
						cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
						kept := mine[:0]
						for _, g := range mine {
							r, err := c.Renew(cctx, g)
							switch {
							case err == nil:
								kept = append(kept, r)
							case !errors.Is(err, tenure.ErrLost):
								kept = append(kept, g) // a fault: outcome unknown, try again
							}
						}
						mine = kept
						if len(mine) > 0 && r.IntN(3) == 0 {
							_ = c.Release(cctx, mine[0])
							mine = mine[1:]
						}
						cancel()
					}
					time.Sleep(time.Duration(r.IntN(50)) * time.Millisecond)
				}
			})
		}
		for _, k := range keys {
			wg.Go(func() {
				for ctx.Err() == nil {
					ch, err := c.Watch(ctx, k)
					if err != nil {
						return
					}
					for ev := range ch {
						if ev.Key != k {
							t.Errorf("watch of %s got an event about %s", k, ev.Key)
						}
					}
				}
			})
		}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(99, 2))
			for ctx.Err() == nil {
				h := fmt.Sprintf("node-%d", r.IntN(6))
				switch r.IntN(9) {
				case 0:
					c.Partition(h)
				case 1:
					c.Block(h)
				case 2:
					c.SetLatency(h, time.Duration(r.IntN(100))*time.Millisecond, time.Duration(r.IntN(100))*time.Millisecond)
				case 3:
					c.DropReplies(h, r.IntN(2) == 0)
				case 4:
					c.Heal(h)
				case 5:
					c.SetClockRate(0.5 + r.Float64())
				case 6:
					c.JumpClock(time.Duration(r.IntN(400)-200) * time.Millisecond)
				case 7:
					c.Restart()
				case 8:
					c.HealAll()
				}
				time.Sleep(time.Duration(r.IntN(200)) * time.Millisecond)
			}
		})

		time.Sleep(time.Minute)
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			t.Logf("%s: %d grants, last token %d", k, len(seen[k]), granted[k])
			if len(seen[k]) < 10 {
				t.Errorf("only %d grants on %s in a simulated minute; want the stress to make progress", len(seen[k]), k)
			}
		}
	})
}
