package tenure_test

// Regression test of an adversary's finding: two Electors of one process
// given one Holder and one explicit Instance (as Config.Instance invites
// with ProcessInstance()) for one key leapfrogged, each one's Acquire
// superseding the other's grant, and led at once ~90% of the time. Run now
// refuses the second; the oracle still judges every act, so that an
// overlap is caught if the refusal goes.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/identity"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestSameInstanceElectors: two Electors in one process, given the
// same Holder and the same Instance, run for one key on one coordinator.
// To the coordinator they are one identity, so the second's Acquire would
// supersede the first's grant instead of being refused: the second's Run
// must be refused, naming the key and the identity, and no act of either
// may be unbacked by the coordinator. Once the first's Run has returned,
// the second may run and lead.
func TestSameInstanceElectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		o := newOracle(c, "scheduler")
		cfg := testConfig("web")
		cfg.Instance = identity.ProcessInstance()
		stop1 := runLoop(t, newElector(t, c, cfg), o.lead("web-1", 0, nil), 0)
		time.Sleep(100 * time.Millisecond) // the first leads
		e2 := newElector(t, c, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e2.Run(ctx, o.lead("web-2", 0, nil)) }()
		time.Sleep(10 * time.Second)
		cancel()
		err := <-done
		stop1()

		want := []string{`"scheduler"`, display.Holder(e2.Identity())}
		if !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), want[0]) || !strings.Contains(err.Error(), want[1]) {
			t.Errorf("second Elector's Run() = %v; want ErrInvalidConfig naming %s", err, strings.Join(want, " and "))
		}
		// The first has left the registry: the second runs now.
		stop2 := runLoop(t, e2, o.lead("web-2", 0, nil), 0)
		time.Sleep(time.Second)
		led := e2.IsLeader()
		stop2()
		if !led {
			t.Errorf("second Elector after the first's Run returned: not leading; want it to run and lead")
		}
		o.check(t)
	})
}
