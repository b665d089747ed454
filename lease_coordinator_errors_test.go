package tenure_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// A coordinator that errs on every renewal, at once or by hanging until
// the request times out: every term on the lease ends exactly at its
// deadline (2.95s), retries go on past it (a lease outlives its terms),
// and once a renewal answers again, new terms start while the old stay
// ended.
func TestLeaseCoordinatorErrsUntilTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang bool
	}{{"fails at once", false}, {"hangs until the request timeout", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				begun := time.Now()
				l, cfg := flightLease(t)
				terms := startTerms(l, 1, 3)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				healAt := begun.Add(4 * time.Second)
				var sends atomic.Int64
				kept := make(chan error, 1)
				go func() {
					kept <- l.Keep(ctx, func(rctx context.Context, _ time.Time) (tenure.Grant, time.Time, error) {
						sends.Add(1)
						sent := tenure.Now()
						if time.Now().Before(healAt) {
							if tc.hang {
								<-rctx.Done()
								return tenure.Grant{}, time.Time{}, rctx.Err()
							}
							return tenure.Grant{}, time.Time{}, errors.New("connection refused")
						}
						return tenure.Grant{TTL: cfg.TTL, Sent: sent}, time.Time{}, nil
					})
				}()
				time.Sleep(time.Until(begun.Add(2949 * time.Millisecond)))
				for _, term := range terms {
					if err := term.Check(); err != nil {
						t.Fatalf("term %d: Check() 2.949s in = %v; want nil, before its deadline", term.Token(), err)
					}
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
				for _, term := range terms {
					if term.Context().Err() == nil {
						t.Fatalf("term %d live at its deadline, 2.95s in, after failed renewals; want it ended", term.Token())
					}
				}
				if sends.Load() < 2 {
					t.Fatalf("%d renewals sent by the deadline; want retries", sends.Load())
				}
				time.Sleep(time.Until(healAt.Add(time.Second)))
				again := startTerms(l, 4, 1)[0]
				if err := again.Check(); err != nil {
					t.Fatalf("Check() of a term started after the coordinator answered again = %v; want nil", err)
				}
				for _, term := range terms {
					if term.Check() == nil {
						t.Fatalf("term %d passes Check again after a renewal; want it never revived", term.Token())
					}
				}
				cancel()
				if err := <-kept; err != nil {
					t.Fatalf("Keep() = %v; want nil", err)
				}
			})
		})
	}
}
