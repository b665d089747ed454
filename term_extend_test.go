package tenure_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestExtendMovesTheDeadlineEitherWay: a renewal sets the lease's
// expiry at the coordinator, so the deadline it gives replaces the term's
// even when it is earlier; and a term whose deadline has passed is never
// revived, however late the new one.
func TestExtendMovesTheDeadlineEitherWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := tenure.Grant{Key: "k", Holder: "a#1", Token: 7, TTL: 10 * time.Second, Sent: tenure.Now()}
		term, ctl := tenure.StartTerm(context.Background(), g, g.Sent.Add(9*time.Second))
		begun := time.Now()
		time.Sleep(time.Second)
		r := g
		r.TTL, r.Sent = 2*time.Second, tenure.Now()
		if !ctl.Extend(r, r.Sent.Add(time.Second)) {
			t.Fatal("Extend() of a live term = false; want true")
		}
		if got, want := term.Deadline(), r.Sent.Time().Add(time.Second); !got.Equal(want) {
			t.Fatalf("Deadline() after an earlier renewal = %s in; want %s in (the renewal's)", got.Sub(begun), want.Sub(begun))
		}
		if got := term.Grant(); got.TTL != r.TTL || got.Sent != r.Sent {
			t.Fatalf("Grant() after Extend = %+v; want the renewal's TTL and Sent", got)
		}
		<-term.Context().Done()
		if took := time.Since(begun); took != 2*time.Second {
			t.Fatalf("term ended %s in; want 2s (the earlier deadline)", took)
		}
		if ctl.Extend(r, tenure.Now().Add(time.Hour)) {
			t.Fatal("Extend() of an ended term = true; want false (never revived)")
		}
		if err := term.Check(); err == nil {
			t.Fatal("Check() after Extend of an ended term = nil; want ErrNotLeader")
		}

		// A renewal whose deadline is already past ends a live term at once.
		term2, ctl2 := tenure.StartTerm(context.Background(), g, tenure.Now().Add(5*time.Second))
		ctl2.Extend(g, tenure.Now().Add(-time.Millisecond))
		if err := term2.Check(); err == nil {
			t.Fatal("Check() after a renewal whose deadline has passed = nil; want ErrNotLeader")
		}
		synctest.Wait()
		select {
		case <-term2.Context().Done():
		default:
			t.Fatal("term's context still live after a renewal whose deadline has passed")
		}
	})
}

// shortRenewals is the memory coordinator with renewals that report a
// shorter TTL than the lease the coordinator keeps (it keeps the TTL first
// granted), as a coordinator that grants less on renewal would report it.
type shortRenewals struct {
	*memory.Coordinator
	ttl time.Duration
}

func (s shortRenewals) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	r, err := s.Coordinator.Renew(ctx, g)
	if err == nil {
		r.TTL = s.ttl
	}
	return r, err
}

// TestRenewalReportsShorterTTL: renewals report a TTL shorter
// than asked. The Elector's deadline follows the reported TTL from each
// renewal's Sent (never the configured one), and it renews often enough
// for the shorter lease (every third of it at most) to keep leading; a
// reported TTL with no safe lease at all ends the term at the renewal.
func TestRenewalReportsShorterTTL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		lives bool
	}{
		{"1.2s", 1200 * time.Millisecond, true},
		{"250ms: no safe lease", 250 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mc := memory.New()
				defer mc.Close()
				c := shortRenewals{mc, tc.ttl}
				cfg := testConfig("a")
				o := newOracle(c, "scheduler")
				var mu sync.Mutex
				var bad []string
				var renewals []time.Time
				var ended time.Time
				var begun time.Time
				var once sync.Once
				during := func(term *tenure.Term) {
					once.Do(func() {
						begun = time.Now()
						context.AfterFunc(term.Context(), func() {
							mu.Lock()
							ended = time.Now()
							mu.Unlock()
						})
						last := term.Grant().Sent
						for term.Check() == nil && time.Since(begun) < 10*time.Second {
							g := term.Grant()
							if g.Sent != last {
								last = g.Sent
								mu.Lock()
								renewals = append(renewals, g.Sent.Time())
								if g.TTL != tc.ttl {
									bad = append(bad, "renewed term's TTL = "+g.TTL.String())
								}
								if want := g.Sent.Time().Add(timing.SafeLease(g.TTL, cfg.MaxDrift, cfg.Margin)); !term.Deadline().Equal(want) {
									bad = append(bad, "deadline "+term.Deadline().Sub(begun).String()+" in; want Sent + SafeLease(reported TTL) = "+want.Sub(begun).String())
								}
								mu.Unlock()
							}
							time.Sleep(time.Millisecond)
						}
					})
				}
				stop := start(newElector(t, c, cfg), o.lead("a", 10*time.Second, during))
				t.Cleanup(stop)
				time.Sleep(11 * time.Second)
				stop()
				o.check(t)
				mu.Lock()
				defer mu.Unlock()
				for _, b := range bad {
					t.Error(b)
				}
				if !tc.lives {
					if took := ended.Sub(begun); took != time.Second {
						t.Fatalf("term ended %s in; want at its first renewal, 1s in", took)
					}
					return
				}
				if len(renewals) < 20 {
					t.Fatalf("%d renewals in 10s; want every third of the reported TTL (%s) at most", len(renewals), tc.ttl/3)
				}
				for i := 1; i < len(renewals); i++ {
					if gap := renewals[i].Sub(renewals[i-1]); gap > tc.ttl/3 {
						t.Fatalf("renewals %s apart; want at most a third of the reported TTL, %s", gap, tc.ttl/3)
					}
				}
			})
		})
	}
}
