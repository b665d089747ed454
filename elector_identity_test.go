package tenure_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/identity"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestElectorsWithOneHolderAreTwoContenders: two Electors in one process
// given the same Holder and no Instance draw an instance each, so they are
// two contenders: the second is refused while the first leads, and their
// terms never overlap. (Before, both took the process's instance: the
// second superseded the first, and both led until the first renewed.)
func TestElectorsWithOneHolderAreTwoContenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		cfg := testConfig("web")
		e1, e2 := newElector(t, c, cfg), newElector(t, c, cfg)

		var mu sync.Mutex
		leading := map[*tenure.Elector]bool{}
		overlaps, terms := 0, 0
		lead := func(e *tenure.Elector) func(ctx context.Context, term *tenure.Term) error {
			return func(ctx context.Context, term *tenure.Term) error {
				mu.Lock()
				terms++
				for o, on := range leading {
					if on && o != e {
						overlaps++
					}
				}
				leading[e] = true
				mu.Unlock()
				select { // lead for 4s, then resign
				case <-ctx.Done():
				case <-time.After(4 * time.Second):
				}
				mu.Lock()
				leading[e] = false
				mu.Unlock()
				return nil
			}
		}
		stop1 := start(e1, lead(e1))
		time.Sleep(100 * time.Millisecond) // e1 leads
		stop2 := start(e2, lead(e2))
		time.Sleep(10 * time.Second)
		stop2()
		stop1()
		if overlaps > 0 {
			t.Fatalf("two Electors with one Holder led at once %d times; want never", overlaps)
		}
		if terms < 2 {
			t.Fatalf("%d terms in 10s; want both Electors to lead in turn", terms)
		}
		if e1.Identity() == e2.Identity() {
			t.Fatalf("two Electors made from one Config share the identity %q; want one instance each", e1.Identity())
		}
		if name, inst := display.SplitIdentity(e1.Identity()); name != "web" || len(inst) != 8 {
			t.Fatalf("Identity() = %q; want web#<8 hex digits>", e1.Identity())
		}
	})
}

// TestProcessInstanceSharedWhenAsked: an Instance set explicitly is kept, so
// that `tenure run` can give every Elector of a process one identity.
func TestProcessInstanceSharedWhenAsked(t *testing.T) {
	c := memory.New()
	defer c.Close()
	cfg := testConfig("web")
	cfg.Instance = identity.ProcessInstance()
	e := newElector(t, c, cfg)
	if want := tenure.Identity("web", identity.ProcessInstance()); e.Identity() != want {
		t.Fatalf("Identity() = %q; want %q", e.Identity(), want)
	}
}
