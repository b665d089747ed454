package termcheck_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// handover runs, in a bubble, Electors a and b for one key on the memory
// coordinator, a's behind bug (plant.None: none), every act of both
// recorded in a Log: a leads first, is cut off from the coordinator 2s
// in for two TTLs, and b takes the key once a's lease has expired.
func handover(t *testing.T, bug string) *termcheck.Log {
	var l *termcheck.Log
	synctest.Test(t, func(t *testing.T) {
		l = termcheck.New() // its times on the bubble's clock
		c := memory.New()
		defer c.Close()
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.TTL = "k", 3*time.Second
		lead := func(who string) func(context.Context, *tenure.Term) error {
			return func(ctx context.Context, term *tenure.Term) error {
				defer l.Run(cfg.Key, who, term)()
				for ctx.Err() == nil && l.Act(cfg.Key, who, term) {
					time.Sleep(10 * time.Millisecond)
				}
				return nil
			}
		}
		run, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, who := range []string{"a", "b"} {
			ecfg := cfg
			ecfg.Holder = who
			co := tenure.Coordinator(c)
			if who == "a" {
				co = plant.Wrap(c, bug, ecfg)
			}
			e, err := tenure.NewElector(co, ecfg)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = e.Run(run, lead(who)) })
			time.Sleep(time.Second) // a leads first
		}
		time.Sleep(time.Second)
		c.Partition("a")
		time.Sleep(2 * cfg.TTL)
		c.Heal("a")
		time.Sleep(2 * time.Second)
		stop()
		wg.Wait()
	})
	return l
}

// TestLogCatchesPlantedBug: with a renewal after expiry planted (a's failed
// renewals reported renewed, so its term acts on past its lease), the Log
// reports a and b both live at an act of one of them, and a passing Check
// after b had; as shipped, on the same schedule, it
// reports nothing, and both a and b lead.
func TestLogCatchesPlantedBug(t *testing.T) {
	v := handover(t, plant.RenewAfterExpiry).Violations()
	all := strings.Join(v, "\n")
	for _, want := range []string{"both live", "passed Check at", "two holders at once"} {
		if !strings.Contains(all, want) {
			t.Errorf("renewal after expiry planted: no violation says %q; violations:\n%s", want, all)
		}
	}
	if len(v) > 0 {
		t.Logf("planted: %d violations, the first: %s", len(v), v[0])
	}
	l := handover(t, plant.None)
	l.Verify(t)
	if a, b := l.Terms("a"), l.Terms("b"); a == 0 || b == 0 {
		t.Errorf("as shipped: %d terms of a, %d of b; want both to lead", a, b)
	}
}

// TestLogViolations: one term of a memory coordinator run by two holders
// is a token run twice, and held by both.
func TestLogViolations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.TTL = "k", "a", 3*time.Second
		e, err := tenure.NewElector(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := termcheck.New()
		_ = e.Run(context.Background(), func(ctx context.Context, term *tenure.Term) error {
			l.Run("k", "a", term)()
			done := l.Run("k", "a2", term)
			defer done()
			if !l.Act("k", "a", term) || !l.Act("k", "a2", term) {
				t.Error("Act: Check failed on a live term")
			}
			return nil
		})
		v := strings.Join(l.Violations(), "\n")
		for _, want := range []string{"token 1 run by a and again by a2", "token 1 held by a and by a2"} {
			if !strings.Contains(v, want) {
				t.Errorf("violations %q; want %q among them", v, want)
			}
		}
	})
}
