package etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// refusals is an etcd Coordinator that reports each Acquire refused because
// the key is held.
type refusals struct {
	*etcd.Coordinator
	once    sync.Once
	refused chan struct{}
}

func (r *refusals) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := r.Coordinator.Acquire(ctx, key, holder, ttl)
	if errors.Is(err, tenure.ErrHeld) {
		r.once.Do(func() { close(r.refused) })
	}
	return g, err
}

// The Elector on etcd: when the leader's work is done it releases the key,
// and the follower, watching, takes over at once rather than on its next
// retry, let alone after the TTL. The deposed leader's fenced writes are
// refused.
func TestElectorHandover(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	const ttl, retry = 30 * time.Second, 5 * time.Second
	config := func(holder string) tenure.Config {
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.TTL, cfg.RetryPeriod = "elector/job", holder, ttl, retry
		return cfg
	}
	ca := newCoordinator(t, newClient(t, eps))
	cb := &refusals{Coordinator: newCoordinator(t, newClient(t, eps)), refused: make(chan struct{})}
	a, err := tenure.NewElector(ca, config("alice"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tenure.NewElector(cb, config("bob"))
	if err != nil {
		t.Fatal(err)
	}

	var (
		aliceGrant, bobGrant tenure.Grant
		mu                   sync.Mutex
		released             time.Time // guarded by mu
		waited               time.Duration
		bobErr               = make(chan error, 1)
	)
	err = a.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
		aliceGrant = term.Grant()
		if _, err := ca.FencedTxn(ctx, aliceGrant, clientv3.OpPut("elector/data", "alice")); err != nil {
			return err
		}
		go func() {
			bobErr <- b.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
				mu.Lock()
				waited = time.Since(released)
				mu.Unlock()
				bobGrant = term.Grant()
				_, err := cb.FencedTxn(ctx, bobGrant, clientv3.OpPut("elector/data", "bob"))
				return err
			})
		}()
		select { // bob campaigns and is refused: he waits now
		case <-cb.refused:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		released = time.Now()
		mu.Unlock()
		return nil // done: resign
	})
	if err != nil {
		t.Fatalf("alice's Run() = %v", err)
	}
	if err := <-bobErr; err != nil {
		t.Fatalf("bob's Run() = %v", err)
	}
	t.Logf("bob led %s after alice resigned", waited)
	if waited > retry/2 {
		t.Errorf("bob led %s after alice resigned; want a prompt handover through the watch (retry period %s, TTL %s)", waited, retry, ttl)
	}
	if bobGrant.Token <= aliceGrant.Token {
		t.Errorf("bob's token %d; want > alice's %d", bobGrant.Token, aliceGrant.Token)
	}
	if _, err := ca.FencedTxn(ctx(t), aliceGrant, clientv3.OpPut("elector/data", "alice-late")); !errors.Is(err, tenure.ErrStaleToken) {
		t.Errorf("alice's fenced write after her term = %v; want ErrStaleToken", err)
	}
	if got := value(t, cb.Client(), "elector/data"); got != "bob" {
		t.Errorf("elector/data = %q; want %q", got, "bob")
	}
}
