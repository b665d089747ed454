package tenure_test

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
	"github.com/tenure-dev/tenure/internal/boottime"
)

// A lease's terms pass Check only while the coordinator's lease lives,
// under a random schedule of everything the network and the host can do
// to a renewal: slow requests and replies (half of them up to 1.5s each,
// in a lease of 3s), replies lost after the renewal was applied, renewals refused,
// replies without a send time, host suspends from 10ms to 4s (the
// coordinator's clock runs on), and terms started and ended throughout.
// The coordinator is modelled on the boot clock (real time): a renewal
// applied while the lease lives moves its expiry to the arrival plus the
// TTL; one that arrives after it finds the lease lost. A sampler checks
// every term every 5ms, and no suspend falls between a Check and its
// judgement.
func TestLeaseTermsPassCheckOnlyWithinTheExpiry(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { withinExpiry(t, seed) })
		})
	}
}

// expiryModel is the coordinator's side of one lease, on the boot clock.
type expiryModel struct {
	mu     sync.Mutex
	expiry boottime.Instant
	lost   bool
}

// apply applies a renewal arriving at at for ttl, and reports whether the
// lease was alive to take it.
func (m *expiryModel) apply(at boottime.Instant, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost || at >= m.expiry {
		m.lost = true
		return false
	}
	m.expiry = max(m.expiry, at.Add(ttl))
	return true
}

// over reports how long ago the lease expired: negative while it lives.
func (m *expiryModel) over() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return boottime.Now().Sub(m.expiry), m.lost
}

// modelTerm is a term and the model of the lease it rides.
type modelTerm struct {
	term  *tenure.Term
	model *expiryModel
}

// withinExpiry runs one schedule for 30s: a member that joins again
// (a new lease) each time its lease is lost.
func withinExpiry(t *testing.T, seed uint64) {
	suspend, restore := tenure.SimulateSuspend()
	defer restore()
	rng := rand.New(rand.NewPCG(seed, 35))
	var rngMu sync.Mutex
	pick := func(d time.Duration) time.Duration { // in [0, d)
		rngMu.Lock()
		defer rngMu.Unlock()
		return time.Duration(rng.Int64N(int64(d)))
	}
	cfg := limitsConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var (
		bg      sync.WaitGroup
		hold    sync.Mutex // held by a suspend, and across a Check and its judgement
		curMu   sync.Mutex
		cur     *tenure.Lease
		curM    *expiryModel
		leases  = 0
		renewed = 0
	)
	defer func() { cancel(); bg.Wait() }()
	renew := func(m *expiryModel) func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		return func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
			sent, sentBoot := tenure.Now(), boottime.Now()
			slowest := 100 * time.Millisecond
			if pick(2) == 0 { // half the renewals are slow
				slowest = 1500 * time.Millisecond
			}
			request, reply, fate := pick(slowest), pick(slowest), pick(10)
			time.Sleep(request)
			applied := fate != 0 && m.apply(sentBoot.Add(request), cfg.TTL)
			time.Sleep(reply)
			switch {
			case !applied && fate != 0:
				return tenure.Grant{}, time.Time{}, fmt.Errorf("renew: %w", tenure.ErrLost)
			case !applied, fate == 1:
				return tenure.Grant{}, time.Time{}, errors.New("connection reset")
			case fate == 2:
				return tenure.Grant{TTL: cfg.TTL}, time.Time{}, nil
			}
			curMu.Lock()
			renewed++
			curMu.Unlock()
			return tenure.Grant{TTL: cfg.TTL, Sent: sent}, time.Time{}, nil
		}
	}
	bg.Go(func() {
		for ctx.Err() == nil {
			m := &expiryModel{expiry: boottime.Now().Add(cfg.TTL)}
			l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
			if err != nil {
				panic(err)
			}
			curMu.Lock()
			cur, curM = l, m
			leases++
			curMu.Unlock()
			_ = l.Keep(ctx, renew(m))
			l.Stop()
		}
	})
	bg.Go(func() {
		for ctx.Err() == nil {
			time.Sleep(2*time.Second + pick(10*time.Second))
			hold.Lock()
			suspend(10*time.Millisecond + pick(4*time.Second))
			hold.Unlock()
		}
	})
	var terms []modelTerm
	passed := 0
	for tick := 0; ctx.Err() == nil; tick++ {
		time.Sleep(5 * time.Millisecond)
		curMu.Lock()
		l, m := cur, curM
		curMu.Unlock()
		if tick%20 == 0 && l != nil {
			terms = append(terms, modelTerm{startTerms(l, tick+1, 1)[0], m})
		}
		if tick%30 == 0 && len(terms) > 0 {
			i := int(pick(time.Duration(len(terms))))
			l.End(terms[i].term, nil)
			if terms[i].term.Check() == nil {
				t.Fatalf("term %d passes Check after End returned", terms[i].term.Token())
			}
			terms = append(terms[:i], terms[i+1:]...)
		}
		hold.Lock()
		for _, mt := range terms {
			if mt.term.Check() != nil {
				continue
			}
			passed++
			if over, lost := mt.model.over(); over >= 0 || lost {
				hold.Unlock()
				t.Fatalf("term %d passes Check %s after the coordinator's lease expired (lost %v)", mt.term.Token(), over, lost)
			}
		}
		hold.Unlock()
	}
	curMu.Lock()
	defer curMu.Unlock()
	t.Logf("%d checks passed; %d leases, %d renewals answered", passed, leases, renewed)
	if passed == 0 || leases < 2 {
		t.Fatalf("%d checks passed on %d leases: the schedule tests nothing", passed, leases)
	}
}
