package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/worker"
)

func TestNewRejectsBadArguments(t *testing.T) {
	src := newQueue()
	proc := func(context.Context, uint64, string) error { return nil }
	tests := []struct {
		name  string
		src   worker.Source[string]
		proc  worker.Processor[string]
		opts  []worker.Option
		wants []string // substrings of the error, one per problem
	}{
		{"nil source", nil, proc, nil, []string{"worker: New: the source must not be nil"}},
		{"nil processor", src, nil, nil, []string{"worker: New: the processor must not be nil"}},
		{"zero batch", src, proc, []worker.Option{worker.WithBatchSize(0)}, []string{"worker: WithBatchSize(0): the batch size must be positive"}},
		{"zero poll", src, proc, []worker.Option{worker.WithPollInterval(0)}, []string{"worker: WithPollInterval(0s): the poll interval must be positive"}},
		{"negative margin", src, proc, []worker.Option{worker.WithMinRemaining(-time.Second)}, []string{"worker: WithMinRemaining(-1s): the minimum must not be negative"}},
		{"nil handler", src, proc, []worker.Option{worker.WithErrorHandler(nil)}, []string{"worker: WithErrorHandler(nil): the handler must not be nil"}},
		{"all at once", nil, nil, []worker.Option{worker.WithBatchSize(-3), worker.WithPollInterval(-time.Millisecond)},
			[]string{"source", "processor", "WithBatchSize(-3)", "WithPollInterval(-1ms)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := worker.New(tc.src, tc.proc, tc.opts...)
			if w != nil || err == nil {
				t.Fatalf("New() = %v, %v; want nil, an error", w, err)
			}
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Errorf("New() error %q does not match tenure.ErrInvalidConfig", err)
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New() error %q does not mention %q", err, want)
				}
			}
		})
	}
	if _, err := worker.New[string](src, proc, worker.WithBatchSize(1), worker.WithPollInterval(time.Millisecond), worker.WithMinRemaining(0)); err != nil {
		t.Errorf("New() with good options = %v; want nil", err)
	}
}

// TestItemsCarryTheTermsToken: every item is processed once, with the token
// of the term that was elected, and a register fenced by it accepts them.
func TestItemsCarryTheTermsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue("a", "b", "c", "d", "e")
		reg := fence.NewRegister[string]()
		var rec recorder
		w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
			rec.add(record{item: item, token: token})
			if err := reg.Write(token, item); err != nil {
				return err
			}
			q.done(item)
			return nil
		}, worker.WithBatchSize(2))
		n := startNode(t, w.Run, nil)
		elected := n.next(tenure.Elected)
		synctest.Wait()

		if got := rec.items(); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
			t.Errorf("processed %v; want a..e once each, in order", got)
		}
		for _, r := range rec.all() {
			if r.token != elected.Token {
				t.Errorf("item %s processed with token %d; want the term's token %d", r.item, r.token, elected.Token)
			}
		}
		if v, tok := reg.Read(); v != "e" || tok != elected.Token {
			t.Errorf("register = %q, %d; want \"e\", %d", v, tok, elected.Token)
		}
		if st := w.Stats(); st.Processed != 5 || st.Failed != 0 || st.Fetches < 4 {
			t.Errorf("Stats() = %+v; want 5 processed, 0 failed, at least 4 fetches (3 batches, then an empty one)", st)
		}
		if err := n.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Elector.Run() = %v; want context.Canceled", err)
		}
		if err := n.result(); !errors.Is(err, context.Canceled) {
			t.Errorf("worker Run() after resignation = %v; want context.Canceled (told to stop while the term was live)", err)
		}
	})
}

// TestShutdownDrainsInFlightItem: when the elector shuts down while an item
// is in flight, that item completes under a live term, no other item starts,
// and the key is not released until it has completed.
func TestShutdownDrainsInFlightItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue("a", "b", "c")
		gate := make(chan struct{})
		var started, rec recorder
		w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
			started.add(record{item: item})
			if item == "a" {
				<-gate // a slow item that does not give up when its context ends
			}
			rec.add(record{item: item, token: token, ctxErr: ctx.Err()})
			q.done(item)
			return nil
		})
		n := startNode(t, w.Run, nil)
		n.next(tenure.Elected)
		synctest.Wait()
		if got := started.items(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("started %v; want [a] in flight", got)
		}

		n.cancel() // shut down: the elector resigns
		synctest.Wait()
		if g, held, err := n.coord.Leader(t.Context(), "jobs"); err != nil || !held || func() bool { name, _ := display.SplitIdentity(g.Holder); return name != holder }() {
			t.Errorf("Leader() while the item is in flight = %v, %v, %v; want still held by %s", g, held, err, holder)
		}
		if got := rec.items(); len(got) != 0 {
			t.Errorf("completed %v before the in-flight item was let go", got)
		}

		close(gate)
		if err := n.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Elector.Run() = %v; want context.Canceled", err)
		}

		recs := rec.all()
		if len(recs) != 1 || recs[0].item != "a" {
			t.Fatalf("completed %v; want only the in-flight item a", rec.items())
		}
		if recs[0].ctxErr != nil {
			t.Errorf("in-flight item's context error = %v; want live (the term stays live while it drains)", recs[0].ctxErr)
		}
		if got := started.items(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("started %v; want no item started after shutdown", got)
		}
		if got := q.left(); !slices.Equal(got, []string{"b", "c"}) {
			t.Errorf("items left = %v; want [b c]", got)
		}
		if err := n.result(); !errors.Is(err, context.Canceled) {
			t.Errorf("worker Run() = %v; want context.Canceled (stopped, not deposed)", err)
		}
	})
}

// TestStopDrainsWithLiveTerm: Run's own context ending (the term still live)
// lets the in-flight item finish with a live context, starts nothing more,
// and returns ctx's error; the elector then resigns.
func TestStopDrainsWithLiveTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue("a", "b")
		gate := make(chan struct{})
		var rec recorder
		var starts atomic.Int32
		w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
			starts.Add(1)
			<-gate
			rec.add(record{item: item, ctxErr: ctx.Err()})
			q.done(item)
			return nil
		})
		stopCtx, stopWorker := context.WithCancel(t.Context())
		n := startNode(t, func(_ context.Context, term *tenure.Term) error { return w.Run(stopCtx, term) }, nil)
		n.next(tenure.Elected)
		synctest.Wait()

		stopWorker()
		synctest.Wait()
		close(gate)
		if err := n.result(); !errors.Is(err, context.Canceled) {
			t.Errorf("worker Run() = %v; want context.Canceled", err)
		}
		if tr := n.next(tenure.Resigned); tr.Key != "jobs" {
			t.Errorf("transition %+v; want Resigned on jobs", tr)
		}
		if err := n.stop(); !errors.Is(err, context.Canceled) {
			t.Errorf("Elector.Run() = %v; want the worker's context.Canceled", err)
		}
		recs := rec.all()
		if len(recs) != 1 || recs[0].item != "a" || recs[0].ctxErr != nil {
			t.Errorf("completed %+v; want only a, with a live context", recs)
		}
		if starts.Load() != 1 {
			t.Errorf("%d items started; want 1", starts.Load())
		}
	})
}

// TestStaleRejectionStepsDown: when a fenced register rejects the term's
// token, the worker steps the term down at once, starts no further item and
// returns the stale error; the elector records "fenced".
func TestStaleRejectionStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := fence.NewRegister[string]()
		if err := reg.Write(100, "written by a newer leader"); err != nil {
			t.Fatal(err)
		}
		q := newQueue("a", "b", "c")
		var calls atomic.Int32
		w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
			calls.Add(1)
			if err := reg.Write(token, item); err != nil {
				return fmt.Errorf("write %s: %w", item, err)
			}
			q.done(item)
			return nil
		})
		var n *node
		n = newNode(t, func(tr tenure.Transition) {
			if tr.Kind == tenure.Fenced {
				n.cancel() // one fenced term is enough: do not campaign again
			}
		})
		n.start(w.Run)
		term := <-n.terms
		fenced := n.next(tenure.Fenced)

		err := n.result()
		var se *fence.StaleError
		if !errors.As(err, &se) || se.Presented != term.Token() || se.Required != 100 {
			t.Errorf("worker Run() = %v; want a *StaleError presenting %d, requiring 100", err, term.Token())
		}
		if fenced.Token != term.Token() || !errors.Is(fenced.Err, tenure.ErrStaleToken) {
			t.Errorf("Fenced transition = %+v; want token %d and an error matching ErrStaleToken", fenced, term.Token())
		}
		if cerr := n.checked(); !errors.Is(cerr, tenure.ErrNotLeader) || !errors.Is(cerr, tenure.ErrStaleToken) {
			t.Errorf("term.Check() as the worker returned = %v; want ErrNotLeader caused by ErrStaleToken: the worker steps down itself", cerr)
		}
		if calls.Load() != 1 {
			t.Errorf("processor called %d times; want 1: nothing after the rejection", calls.Load())
		}
		if v, tok := reg.Read(); v != "written by a newer leader" || tok != 100 {
			t.Errorf("register = %q, %d; want the newer leader's write untouched", v, tok)
		}
		if st := w.Stats(); st.Processed != 0 || st.Failed != 1 {
			t.Errorf("Stats() = %+v; want 0 processed, 1 failed", st)
		}
		n.stop()
	})
}

// TestStaleFetchStepsDown: a fenced Source that rejects the token steps the
// term down like a fenced processor does.
func TestStaleFetchStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fetches atomic.Int32
		src := worker.SourceFunc[string](func(ctx context.Context, max int) ([]string, error) {
			fetches.Add(1)
			return nil, fmt.Errorf("claim jobs: %w", &fence.StaleError{Presented: 1, Required: 2})
		})
		w := newWorker(t, src, func(context.Context, uint64, string) error {
			t.Error("processor called")
			return nil
		}, worker.WithErrorHandler(func(err error) error {
			t.Errorf("error handler called with %v; a stale error is not a failure to handle", err)
			return nil
		}))
		var n *node
		n = newNode(t, func(tr tenure.Transition) {
			if tr.Kind == tenure.Fenced {
				n.cancel()
			}
		})
		n.start(w.Run)
		n.next(tenure.Fenced)
		if err := n.result(); !errors.Is(err, tenure.ErrStaleToken) {
			t.Errorf("worker Run() = %v; want the stale error", err)
		}
		if cerr := n.checked(); !errors.Is(cerr, tenure.ErrStaleToken) {
			t.Errorf("term.Check() as the worker returned = %v; want it stepped down as stale", cerr)
		}
		if fetches.Load() != 1 {
			t.Errorf("%d fetches; want 1", fetches.Load())
		}
		n.stop()
	})
}

// TestExpiredTermProcessesNothingMore: cut off from the coordinator, the
// leader cannot renew and its term ends at the local deadline. The worker
// checks the term before every item of a large batch: no item starts at or
// after the deadline, nor, with WithMinRemaining, when less than the minimum
// remains.
func TestExpiredTermProcessesNothingMore(t *testing.T) {
	tests := []struct {
		name         string
		partition    bool
		minRemaining time.Duration
		wantItems    int
	}{
		// Items take 1s each from the acquire: 0s, 1s, … 8s < 8.9s.
		{name: "partitioned", partition: true, wantItems: 9},
		// Only while 3s remain: 0s … 5s, as 8.9s − 5s ≥ 3s > 8.9s − 6s.
		{name: "partitioned, 3s minimum", partition: true, minRemaining: 3 * time.Second, wantItems: 6},
		// Renewals keep at least 8.9s − 10s/3 ≈ 5.6s remaining: no waiting.
		{name: "renewing, 3s minimum", partition: false, minRemaining: 3 * time.Second, wantItems: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var items []string
				for i := range 20 {
					items = append(items, fmt.Sprint(i))
				}
				q := newQueue(items...)
				var rec recorder
				n := newNode(t, nil)
				w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
					term := n.e.Term()
					r := record{item: item, token: token, start: time.Now()}
					if term != nil {
						r.deadline = term.Deadline()
					}
					rec.add(r)
					time.Sleep(time.Second) // slow work that ignores its context
					q.done(item)
					return nil
				}, worker.WithBatchSize(100), worker.WithMinRemaining(tc.minRemaining))
				n.start(w.Run)
				elected := n.next(tenure.Elected)
				term := <-n.terms
				if tc.partition {
					n.coord.Partition(holder)
				}
				acquired := time.Now()

				if tc.partition {
					n.next(tenure.Expired)
					if err := n.result(); !errors.Is(err, tenure.ErrNotLeader) {
						t.Errorf("worker Run() = %v; want ErrNotLeader", err)
					}
					if got, want := term.Deadline(), acquired.Add(testSafeLease); !got.Equal(want) {
						t.Errorf("term deadline = %s after acquire; want %s", got.Sub(acquired), testSafeLease)
					}
				} else {
					time.Sleep(30 * time.Second)
				}
				synctest.Wait()
				n.stop()

				recs := rec.all()
				if len(recs) != tc.wantItems {
					t.Errorf("%d items started; want %d", len(recs), tc.wantItems)
				}
				for _, r := range recs {
					if r.token != elected.Token {
						t.Errorf("item %s had token %d; want %d", r.item, r.token, elected.Token)
					}
					if tc.partition && !r.start.Before(term.Deadline()) {
						t.Errorf("item %s started %s after the term's deadline", r.item, r.start.Sub(term.Deadline()))
					}
					if left := r.deadline.Sub(r.start); left < tc.minRemaining {
						t.Errorf("item %s started with %s of the term left; want at least %s", r.item, left, tc.minRemaining)
					}
				}
			})
		})
	}
}

// TestCheckBeforeEveryItem: a term stepped down by the processor itself in
// the middle of a fetched batch starts no further item of that batch.
func TestCheckBeforeEveryItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue("a", "b", "c", "d")
		var rec recorder
		var n *node
		n = newNode(t, func(tr tenure.Transition) {
			if tr.Kind == tenure.SteppedDown {
				n.cancel()
			}
		})
		w := newWorker(t, q, func(ctx context.Context, token uint64, item string) error {
			rec.add(record{item: item})
			if item == "b" {
				n.e.Term().StepDown(errors.New("operator asked to step down"))
			}
			q.done(item)
			return nil
		}, worker.WithBatchSize(10))
		n.start(w.Run)
		n.next(tenure.SteppedDown)
		if err := n.result(); !errors.Is(err, tenure.ErrNotLeader) {
			t.Errorf("worker Run() = %v; want ErrNotLeader", err)
		}
		n.stop()
		if got := rec.items(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("processed %v; want [a b]: nothing after the step-down", got)
		}
	})
}

// TestPollInterval: with no work, the source is asked once per poll interval.
func TestPollInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorker(t, newQueue(), func(context.Context, uint64, string) error {
			t.Error("processor called with no work")
			return nil
		}, worker.WithPollInterval(2*time.Second))
		n := startNode(t, w.Run, nil)
		n.next(tenure.Elected)
		time.Sleep(9 * time.Second) // fetches at 0, 2, 4, 6, 8s
		synctest.Wait()
		if got := w.Stats().Fetches; got != 5 {
			t.Errorf("Fetches = %d after 9s with a 2s poll interval; want 5", got)
		}
		n.stop()
	})
}

// TestErrors: failures that are not stale tokens go to the error handler;
// the worker goes on when it returns nil, and stops when it returns an error.
func TestErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue("ok1", "bad", "ok2")
		var fetchFails atomic.Int32
		fetchFails.Store(1)
		src := worker.SourceFunc[string](func(ctx context.Context, max int) ([]string, error) {
			if fetchFails.Add(-1) >= 0 {
				return nil, errors.New("queue unavailable")
			}
			return q.Fetch(ctx, max)
		})
		var (
			mu      sync.Mutex
			handled []error
			done    recorder
		)
		handledErrs := func() []error {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(handled)
		}
		w := newWorker(t, src, func(ctx context.Context, token uint64, item string) error {
			q.done(item)
			if item == "bad" {
				return errors.New("cannot parse")
			}
			done.add(record{item: item})
			return nil
		}, worker.WithErrorHandler(func(err error) error {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, err)
			if len(handled) == 3 {
				return fmt.Errorf("giving up: %w", err)
			}
			return nil
		}), worker.WithPollInterval(time.Second))
		n := startNode(t, w.Run, nil)
		n.next(tenure.Elected)
		synctest.Wait()
		if got := done.items(); len(got) != 0 {
			t.Errorf("processed %v before the failed fetch was retried; want nothing", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := done.items(); !slices.Equal(got, []string{"ok1", "ok2"}) {
			t.Errorf("processed %v; want [ok1 ok2]: a failed item does not stop the worker", got)
		}
		if handled := handledErrs(); len(handled) != 2 || handled[0].Error() != "worker: fetch: queue unavailable" || handled[1].Error() != "worker: process: cannot parse" {
			t.Errorf("error handler got %v; want the fetch error, then the process error", handled)
		}

		fetchFails.Store(1)
		time.Sleep(time.Second) // next poll fails; the handler gives up
		if err := n.result(); err == nil || err.Error() != "giving up: worker: fetch: queue unavailable" {
			t.Errorf("worker Run() = %v; want the handler's error", err)
		}
		if tr := n.next(tenure.Resigned); tr.Token == 0 {
			t.Errorf("Resigned transition without a token: %+v", tr)
		}
		if st := w.Stats(); st.Processed != 2 || st.Failed != 1 {
			t.Errorf("Stats() = %+v; want 2 processed, 1 failed", st)
		}
		if err := n.stop(); err == nil || err.Error() != "giving up: worker: fetch: queue unavailable" {
			t.Errorf("Elector.Run() = %v; want the worker's error", err)
		}
	})
}

// TestFailingItemIsNotRetriedInAHotLoop: an item that keeps failing is
// fetched again, but only once per poll interval.
func TestFailingItemIsNotRetriedInAHotLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		w := newWorker(t, newQueue("poison"), func(context.Context, uint64, string) error {
			attempts.Add(1)
			return errors.New("cannot parse")
		}, worker.WithPollInterval(time.Second))
		n := startNode(t, w.Run, nil)
		n.next(tenure.Elected)
		time.Sleep(4500 * time.Millisecond) // attempts at 0, 1, 2, 3, 4s
		if got := attempts.Load(); got != 5 {
			t.Errorf("%d attempts in 4.5s with a 1s poll interval; want 5", got)
		}
		n.stop()
	})
}

func TestRunWithoutTerm(t *testing.T) {
	w := newWorker(t, newQueue(), func(context.Context, uint64, string) error { return nil })
	if err := w.Run(t.Context(), nil); err == nil {
		t.Error("Run(ctx, nil) = nil; want an error")
	}
}
