package tenure_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// a's Run is cancelled at an instant of its first term, while b
// campaigns throughout; every reply to a comes 500ms late, so that its
// term begins 500ms after its grant (deadline 2.17s into the term, under
// testConfig), renewals are in flight from 1s to 1.5s and from 2.5s to 3s
// into it (applied at once at the coordinator; deadline 3.67s after the
// first), and a's release takes 500ms. Whatever the
// instant, every act of a's term is backed by the coordinator and ends
// before b's term begins, so is every act guarded by the term's Check
// alone (outside the leader function, which is stopped first), a's term
// is over once Run has returned, and b
// leads after a with a greater token.
func TestElectorCancelledAtAnyInstant(t *testing.T) {
	for _, at := range []time.Duration{
		0, 500 * time.Millisecond, time.Second, 1200 * time.Millisecond, 1500 * time.Millisecond, 2170 * time.Millisecond,
		2500 * time.Millisecond, 2800 * time.Millisecond, 3 * time.Second, 3500 * time.Millisecond,
	} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { cancelElectorAt(t, at) })
		})
	}
}

// cancelElectorAt runs one case of TestElectorCancelledAtAnyInstant:
// a's Run is cancelled at into its first term.
func cancelElectorAt(t *testing.T, at time.Duration) {
	c := memory.New()
	defer c.Close()
	o := newOracle(c, "scheduler")
	c.SetLatency("a", 0, 500*time.Millisecond)
	began := make(chan *tenure.Term, 1)
	var checked checkGuarded
	during := func(term *tenure.Term) {
		select {
		case began <- term:
		default:
		}
		checked.start(c, term)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	a := newElector(t, c, testConfig("a"))
	go func() { ran <- a.Run(ctx, o.lead("a", 0, during)) }()
	term := await(t, began, 10*time.Second, "a's first term")
	stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 0, nil), 0)
	time.Sleep(at)
	cancel()
	if err := await(t, ran, 10*time.Second, "a's Run after its cancel"); err != context.Canceled {
		t.Fatalf("a.Run() = %v; want context.Canceled", err)
	}
	if err := term.Check(); err == nil {
		t.Fatalf("Check() of a's term after its Run returned = nil; want ErrNotLeader (deadline in %s)", time.Until(term.Deadline()))
	}
	time.Sleep(5 * time.Second)
	stopB()
	o.check(t)
	checked.check(t)
	if bs := o.termsOf("b"); len(bs) == 0 || bs[0].token <= term.Token() {
		t.Fatalf("b's terms after a's (token %d) was cancelled %s in: %v; want one with a greater token\n%s",
			term.Token(), at, bs, o.describe())
	}
}

// checkGuarded acts on every term it is given, every millisecond while the
// term's Check passes, as work that is guarded by Check alone does: each
// act must be backed by the coordinator, which holds the key under the
// term's token when read before a Check that passes.
type checkGuarded struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	bad []string
}

// start acts on term in a goroutine of its own until its Check fails.
func (g *checkGuarded) start(c tenure.Coordinator, term *tenure.Term) {
	g.wg.Go(func() {
		for term.Check() == nil {
			held, ok, err := c.Leader(context.Background(), term.Grant().Key)
			// The act is judged by a Check after the coordinator was read:
			// a term once ended stays ended, so a Check that passes now
			// passed when the coordinator answered. (A Check before the
			// read says nothing of the read: the term may end, and a
			// successor be granted, in between.)
			if term.Check() != nil {
				return
			}
			if err != nil || !ok || held.Token != term.Token() {
				g.mu.Lock()
				g.bad = append(g.bad, fmt.Sprintf("Check() of token %d passed while the coordinator held %v (held %v, err %v)",
					term.Token(), held, ok, err))
				g.mu.Unlock()
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// check waits for every term's acts to end, and fails t if one was not
// backed.
func (g *checkGuarded) check(t *testing.T) {
	t.Helper()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bad) > 0 {
		t.Fatalf("%d acts guarded by Check alone were not backed by the coordinator; the first: %s", len(g.bad), g.bad[0])
	}
}
