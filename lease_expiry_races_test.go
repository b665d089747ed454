package tenure_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// raceLease is a lease on the real clock whose renewals are answered near
// its deadline, some just before and some just after, so that the timer's
// resets race its expiry; terms start on it one after another, and
// goroutines Check the latest without pause. Every answer and every Check
// is recorded with the instants it was made.
type raceLease struct {
	l    *tenure.Lease
	safe time.Duration // the safe lease: a deadline is sent + safe

	mu      sync.Mutex
	answers []answered // in the order answered
	terms   []*raceTerm
}

// raceTerm is one term and the Checks made of it.
type raceTerm struct {
	term    *tenure.Term
	started time.Time
	checks  []raceCheck
}

// raceCheck is one Check: called at, returned at, passed or not.
type raceCheck struct {
	at, returned time.Time
	ok           bool
}

// renew answers one renewal: most at once, one in four within 3ms of the
// deadline as it stands (before or after it). Its deadline is recorded
// before the reply is returned, so that the lease can only apply it later.
func (r *raceLease) renew(context.Context, time.Time) (tenure.Grant, time.Time, error) {
	sent := tenure.Now()
	if rand.IntN(4) == 0 {
		dl := r.l.Deadline().Time()
		time.Sleep(time.Until(dl) + time.Duration(rand.Int64N(int64(6*time.Millisecond))) - 3*time.Millisecond)
	}
	r.mu.Lock()
	r.answers = append(r.answers, answered{at: time.Now(), deadline: sent.Time().Add(r.safe)})
	r.mu.Unlock()
	return tenure.Grant{TTL: 300 * time.Millisecond, Sent: sent}, time.Time{}, nil
}

// checkLatest Checks the latest term until stop, with no pause.
func (r *raceLease) checkLatest(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		r.mu.Lock()
		rt := r.terms[len(r.terms)-1]
		r.mu.Unlock()
		at := time.Now()
		ok := rt.term.Check() == nil
		c := raceCheck{at: at, returned: time.Now(), ok: ok}
		r.mu.Lock()
		rt.checks = append(rt.checks, c)
		r.mu.Unlock()
	}
}

// startTerms starts a term whenever the latest has ended, until stop.
func (r *raceLease) startTerms(stop <-chan struct{}) {
	for tok := uint64(1); ; tok++ {
		term := r.l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: tok})
		at := time.Now() // every answer applied when it started was recorded before
		r.mu.Lock()
		r.terms = append(r.terms, &raceTerm{term: term, started: at})
		r.mu.Unlock()
		select {
		case <-stop:
			return
		case <-term.Context().Done():
		}
		time.Sleep(time.Millisecond)
	}
}

// deadlineAt is the latest deadline a term begun at started may have at
// instant at, by the answers recorded: the lease's deadline when it began
// (the last answer before it, or the grant's), moved by each answer after
// it that came before its deadline as it stood (a later one revives
// nothing). Answers recorded before at may not be applied yet: then the
// term's deadline is no later than this, as deadlines only grow here.
func (r *raceLease) deadlineAt(started, at, granted time.Time) time.Time {
	dl := granted
	for _, a := range r.answers {
		switch {
		case !a.at.Before(at):
			return dl
		case !a.at.After(started):
			dl = a.deadline // the lease's, which a term begun later starts with
		case a.at.Before(dl):
			dl = a.deadline
		}
	}
	return dl
}

// A lease's renewals are answered on the real clock, a quarter of them
// within 3ms either side of the deadline, while terms start on it one
// after another and goroutines Check the latest without pause: the timer's
// resets race its expiry. No Check called at or after the deadline its
// term may have (by the answers recorded before the call) passes, and no
// Check of a term passes once a Check of it has failed.
func TestLeaseChecksRacingExpiry(t *testing.T) {
	cfg := limitsConfig()
	cfg.TTL, cfg.Margin = 300*time.Millisecond, 50*time.Millisecond
	r := &raceLease{safe: cfg.TTL - cfg.Margin}
	sent := tenure.Now()
	granted := sent.Time().Add(r.safe)
	l, err := tenure.NewLease(cfg, cfg.TTL, sent)
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	defer l.Stop()
	r.l = l
	ctx, cancel := context.WithCancel(context.Background())
	kept := make(chan error, 1)
	go func() { kept <- l.Keep(ctx, r.renew) }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var started atomic.Bool
	wg.Go(func() { r.startTerms(stop) })
	for !started.Load() {
		r.mu.Lock()
		started.Store(len(r.terms) > 0)
		r.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		wg.Go(func() { r.checkLatest(stop) })
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	cancel()
	if err := <-kept; err != nil {
		t.Fatalf("Keep() = %v; want nil", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	judgeRaceTerms(t, r, granted)
}

// judgeRaceTerms judges the Checks of TestLeaseChecksRacingExpiry.
func judgeRaceTerms(t *testing.T, r *raceLease, granted time.Time) {
	ended, passed := 0, 0
	for _, rt := range r.terms {
		var failed time.Time // when the first failed Check returned
		for _, c := range rt.checks {
			if !c.ok && (failed.IsZero() || c.returned.Before(failed)) {
				failed = c.returned
			}
		}
		if !failed.IsZero() {
			ended++
		}
		for _, c := range rt.checks {
			if !c.ok {
				continue
			}
			passed++
			if dl := r.deadlineAt(rt.started, c.at, granted); !c.at.Before(dl) {
				t.Errorf("term %d: Check() called %s after the deadline it may have passed", rt.term.Token(), c.at.Sub(dl))
			}
			if !failed.IsZero() && c.at.After(failed) {
				t.Errorf("term %d: Check() called %s after one had failed passed: the term was revived", rt.term.Token(), c.at.Sub(failed))
			}
		}
	}
	t.Logf("%d terms (%d ended), %d renewals answered, %d Checks passed", len(r.terms), ended, len(r.answers), passed)
	if ended < 2 || passed == 0 {
		t.Fatalf("%d terms ended, %d Checks passed in 3s: the expiry was never raced", ended, passed)
	}
}
