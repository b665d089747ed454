package tenure_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// A renewal answered without a send time has renewed the lease at the
// coordinator for a TTL counted from an unknown moment (here a shorter TTL
// than before, so the coordinator's expiry may now come before the old
// local deadline): no deadline is safe. Every term riding the lease ends,
// and a term started on it afterwards (a partition claimed by the member)
// is over at once, not live until the old deadline; a renewal with a send
// time gives the lease a deadline again.
func TestLeaseRenewedWithoutSendTimeStartsNoTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := limitsConfig()
		l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
		if err != nil {
			t.Fatalf("NewLease() = %v", err)
		}
		defer l.Stop()
		before := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: 1})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		answers := []tenure.Grant{{TTL: 200 * time.Millisecond}, {TTL: cfg.TTL}}
		kept := make(chan error, 1)
		go func() {
			kept <- l.Keep(ctx, func(ctx context.Context, _ time.Time) (tenure.Grant, time.Time, error) {
				if len(answers) == 0 {
					<-ctx.Done()
					return tenure.Grant{}, time.Time{}, ctx.Err()
				}
				g := answers[0]
				answers = answers[1:]
				if g.TTL == cfg.TTL {
					g.Sent = tenure.Now()
				}
				return g, time.Time{}, nil
			})
		}()
		time.Sleep(1100 * time.Millisecond) // the first renewal answered, without a send time, at 1s
		if before.Check() == nil {
			t.Fatal("Check() of a term after a renewal without a send time = nil; want ErrNotLeader")
		}
		during := l.Start(context.Background(), tenure.Grant{Key: "g/1", Holder: "h", Token: 2})
		if err := during.Check(); err == nil {
			t.Fatalf("Check() of a term started after a renewal without a send time = nil (deadline %s from now); want ErrNotLeader",
				time.Until(l.Deadline().Time()))
		}
		time.Sleep(time.Second) // the retry, with a send time, answered
		after := l.Start(context.Background(), tenure.Grant{Key: "g/2", Holder: "h", Token: 3})
		if err := after.Check(); err != nil {
			t.Fatalf("Check() of a term started after a renewal with a send time = %v; want nil", err)
		}
		cancel()
		if err := <-kept; err != nil {
			t.Fatalf("Keep() = %v; want nil", err)
		}
	})
}
