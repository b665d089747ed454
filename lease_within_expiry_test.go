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

// modelTerm is a term, the lease it rides and the model of that lease.
type modelTerm struct {
	term  *tenure.Term
	lease *tenure.Lease
	model *expiryModel
}

// expirySchedule is one random schedule: a member that joins again (a
// new lease) each time its lease is lost, its renewals' fates, and the
// host's suspends.
type expirySchedule struct {
	cfg  tenure.Config
	hold sync.Mutex // held by a suspend, and across a Check and its judgement

	mu      sync.Mutex
	rng     *rand.Rand
	lease   *tenure.Lease
	model   *expiryModel
	leases  int
	renewed int
}

// pick returns a random duration in [0, d).
func (s *expirySchedule) pick(d time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.rng.Int64N(int64(d)))
}

// renew is the coordinator's side of the renewals of the lease m models:
// half of them slow, one in ten lost on the way, one in ten whose reply is
// lost, one in ten answered without a send time.
func (s *expirySchedule) renew(m *expiryModel) func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
	return func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		sent, sentBoot := tenure.Now(), boottime.Now()
		slowest := 100 * time.Millisecond
		if s.pick(2) == 0 {
			slowest = 1500 * time.Millisecond
		}
		request, reply, fate := s.pick(slowest), s.pick(slowest), s.pick(10)
		time.Sleep(request)
		applied := fate != 0 && m.apply(sentBoot.Add(request), s.cfg.TTL)
		time.Sleep(reply)
		switch {
		case !applied && fate != 0:
			return tenure.Grant{}, time.Time{}, fmt.Errorf("renew: %w", tenure.ErrLost)
		case !applied, fate == 1:
			return tenure.Grant{}, time.Time{}, errors.New("connection reset")
		case fate == 2:
			return tenure.Grant{TTL: s.cfg.TTL}, time.Time{}, nil
		}
		s.mu.Lock()
		s.renewed++
		s.mu.Unlock()
		return tenure.Grant{TTL: s.cfg.TTL, Sent: sent}, time.Time{}, nil
	}
}

// member keeps a lease until ctx ends, joining again when one is lost.
func (s *expirySchedule) member(ctx context.Context) {
	for ctx.Err() == nil {
		m := &expiryModel{expiry: boottime.Now().Add(s.cfg.TTL)}
		l, err := tenure.NewLease(s.cfg, s.cfg.TTL, tenure.Now())
		if err != nil {
			panic(err)
		}
		s.mu.Lock()
		s.lease, s.model = l, m
		s.leases++
		s.mu.Unlock()
		_ = l.Keep(ctx, s.renew(m))
		l.Stop()
	}
}

// suspender suspends the host, 10ms to 4s every 2 to 12s, until ctx ends.
func (s *expirySchedule) suspender(ctx context.Context, suspend func(time.Duration)) {
	for ctx.Err() == nil {
		time.Sleep(2*time.Second + s.pick(10*time.Second))
		s.hold.Lock()
		suspend(10*time.Millisecond + s.pick(4*time.Second))
		s.hold.Unlock()
	}
}

// withinExpiry runs one schedule for 30s, starting a term every 100ms and
// ending one every 150ms, and judges every term every 5ms.
func withinExpiry(t *testing.T, seed uint64) {
	suspend, restore := tenure.SimulateSuspend()
	defer restore()
	s := &expirySchedule{cfg: limitsConfig(), rng: rand.New(rand.NewPCG(seed, 35))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	bg.Go(func() { s.member(ctx) })
	bg.Go(func() { s.suspender(ctx, suspend) })
	var terms []modelTerm
	passed := 0
	for tick := 0; ctx.Err() == nil; tick++ {
		time.Sleep(5 * time.Millisecond)
		s.mu.Lock()
		l, m := s.lease, s.model
		s.mu.Unlock()
		if tick%20 == 0 && l != nil {
			terms = append(terms, modelTerm{startTerms(l, tick+1, 1)[0], l, m})
		}
		if tick%30 == 0 && len(terms) > 0 {
			i := int(s.pick(time.Duration(len(terms))))
			if terms[i].lease.End(terms[i].term, nil); terms[i].term.Check() == nil {
				t.Fatalf("term %d passes Check after End returned", terms[i].term.Token())
			}
			terms = append(terms[:i], terms[i+1:]...)
		}
		passed += judge(t, &s.hold, terms)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%d checks passed; %d leases, %d renewals answered", passed, s.leases, s.renewed)
	if passed == 0 || s.leases < 2 {
		t.Fatalf("%d checks passed on %d leases: the schedule tests nothing", passed, s.leases)
	}
}

// judge checks every term, holding hold, and fails the test if one passes
// Check once its lease has expired at the coordinator. It returns how many
// passed.
func judge(t *testing.T, hold *sync.Mutex, terms []modelTerm) (passed int) {
	t.Helper()
	hold.Lock()
	defer hold.Unlock()
	for _, mt := range terms {
		if mt.term.Check() != nil {
			continue
		}
		passed++
		if over, lost := mt.model.over(); over >= 0 || lost {
			t.Fatalf("term %d passes Check %s after the coordinator's lease expired (lost %v)", mt.term.Token(), over, lost)
		}
	}
	return passed
}
