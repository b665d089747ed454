package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// termLog records the terms of one key, each from the moment its holder may
// act to the moment it must stop, and checks the safety properties: no two
// terms overlap in time, no token is given twice, tokens grow in the order
// terms begin, etcd holds the key with the term's token when a term begins,
// and (with a leaseLog) no local deadline falls after its lease's last
// extension send plus the safe lease.
type termLog struct {
	t      testing.TB
	ek     string           // the etcd key
	cl     *clientv3.Client // reads etcd for the checks, without faults
	leases *leaseLog        // nil: deadlines are not checked
	base   time.Time

	mu      sync.Mutex
	spans   []termSpan
	bad     []string
	changed chan struct{} // closed and replaced on every change
}

// termSpan is one term: a holder acted on token from start to end.
type termSpan struct {
	holder     string
	token      uint64
	start, end time.Time // end is zero while the term runs
}

func newTermLog(t testing.TB, cl *clientv3.Client, ek string, leases *leaseLog) *termLog {
	return &termLog{t: t, ek: ek, cl: cl, leases: leases, base: time.Now(), changed: make(chan struct{})}
}

// begin records that holder began to act on token now, and returns the
// term's index for end.
func (l *termLog) begin(holder string, token uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans = append(l.spans, termSpan{holder: holder, token: token, start: time.Now()})
	l.notifyLocked()
	return len(l.spans) - 1
}

// end records that term i stopped acting at at.
func (l *termLog) end(i int, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spans[i].end = at
	l.notifyLocked()
}

func (l *termLog) violation(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bad = append(l.bad, fmt.Sprintf(format, args...))
}

func (l *termLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// lead returns an Elector function that records each term of holder under
// cfg, checks it at its start and, every 20ms, its deadline, and acts until
// the term ends or until work, when not nil, returns.
func (l *termLog) lead(holder string, cfg tenure.Config, work func(ctx context.Context, t *tenure.Term)) func(context.Context, *tenure.Term) error {
	return func(ctx context.Context, term *tenure.Term) error {
		i := l.begin(holder, term.Token())
		l.checkHeld(holder, term)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if work != nil {
				work(ctx, term)
			} else {
				<-ctx.Done()
			}
		}()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for ok := true; ; {
			if ok { // one violation per term is enough
				ok = l.checkDeadline(holder, cfg, term)
			}
			select {
			case <-tick.C:
				continue
			case <-done:
			}
			break
		}
		// The term's context ends at the local deadline; a function that
		// sees it a moment later has stopped acting at the deadline.
		l.end(i, minTime(time.Now(), term.Deadline()))
		return nil
	}
}

// checkHeld reads the key: when a term begins, etcd must hold it with the
// term's token, unless the term's deadline passed during the read.
func (l *termLog) checkHeld(holder string, term *tenure.Term) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := l.cl.Get(ctx, l.ek)
	if err != nil || !time.Now().Before(term.Deadline()) {
		return
	}
	if len(resp.Kvs) == 0 {
		l.violation("%s began a term with token %d while etcd had %s free", holder, term.Token(), l.ek)
		return
	}
	if kv := resp.Kvs[0]; uint64(kv.ModRevision) != term.Token() {
		l.violation("%s began a term with token %d, %s before its local deadline, while etcd held %s with token %d for %q",
			holder, term.Token(), time.Until(term.Deadline()).Round(time.Millisecond), l.ek, kv.ModRevision, kv.Value)
	}
}

// checkDeadline checks term's local deadline against its lease, and
// reports whether it passed (or could not be checked).
func (l *termLog) checkDeadline(holder string, cfg tenure.Config, term *tenure.Term) bool {
	if l.leases == nil {
		return true
	}
	id, ok := l.leases.leaseOfToken(term.Token())
	if !ok {
		// Not put by a client of the lease log (a hand-off, on an old
		// tree): find the lease in etcd.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := l.cl.Get(ctx, l.ek)
		if err != nil || len(resp.Kvs) == 0 || uint64(resp.Kvs[0].ModRevision) != term.Token() {
			return true
		}
		id = clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	if err := l.leases.checkDeadline(cfg, id, term.Deadline(), term.BootDeadline()); err != nil {
		l.violation("%s's term with token %d: %v", holder, term.Token(), err)
		return false
	}
	return true
}

// waitFor waits until cond holds of the terms recorded, at most timeout,
// and reports whether it did.
func (l *termLog) waitFor(timeout time.Duration, cond func([]termSpan) bool) bool {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		ok := cond(l.spans)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

// leads is a waitFor condition: holder has begun a term.
func leads(holder string) func([]termSpan) bool {
	return func(spans []termSpan) bool {
		for _, s := range spans {
			if s.holder == holder {
				return true
			}
		}
		return false
	}
}

// verify reports every violation seen and every pair of terms that break
// the properties; a term still running counts as running now.
func (l *termLog) verify() {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		l.t.Error(b)
	}
	spans := append([]termSpan(nil), l.spans...)
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	at := func(x time.Time) string { return x.Sub(l.base).Round(time.Millisecond).String() }
	now := time.Now()
	given := map[uint64]string{}
	for i, a := range spans {
		if h, ok := given[a.token]; ok {
			l.t.Errorf("token %d given twice: to %s and to %s (at %s)", a.token, h, a.holder, at(a.start))
		}
		given[a.token] = a.holder
		end, until := a.end, "to "+at(a.end)
		if end.IsZero() {
			end, until = now, "still running"
		}
		for _, b := range spans[i+1:] {
			if b.start.Before(end) {
				l.t.Errorf("two holders at once: %s with token %d from %s %s, and %s with token %d from %s",
					a.holder, a.token, at(a.start), until, b.holder, b.token, at(b.start))
			}
			if b.token < a.token {
				l.t.Errorf("token went back: %s began with token %d at %s, after %s began with token %d at %s",
					b.holder, b.token, at(b.start), a.holder, a.token, at(a.start))
			}
		}
	}
	l.t.Logf("%d terms of %s", len(spans), l.ek)
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// runElector runs an Elector for cfg on c, campaigning again whenever Run
// returns after a resignation, until the returned stop is called (also at
// cleanup). A Run that fails otherwise fails the test.
func runElector(t testing.TB, c tenure.Coordinator, cfg tenure.Config, fn func(context.Context, *tenure.Term) error) (stop func()) {
	t.Helper()
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := e.Run(ctx, fn); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run() = %v", cfg.Holder, err)
				return
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}
