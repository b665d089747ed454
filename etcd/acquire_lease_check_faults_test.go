package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestAcquireLeaseCheckFaults: the lookup Acquire makes of its lease once
// its key is on it (LeaseTimeToLive) fails: refused before it is sent, or
// answered by etcd with its reply lost. Acquire returns an error, telling
// h nothing; h's own retry supersedes the key it put at once, and without
// a retry that key rides on a lease nothing extends, so another holder is
// granted it within the TTL and a slack.
func TestAcquireLeaseCheckFaults(t *testing.T) {
	fail := errors.New("planted fault")
	for name, hooks := range map[string]func(armed *atomic.Bool) rpcHooks{
		"request refused": func(armed *atomic.Bool) rpcHooks {
			return rpcHooks{call: func(_ context.Context, method string, _ any) error {
				if method == rpcTimeToLive && armed.CompareAndSwap(true, false) {
					return fail
				}
				return nil
			}}
		},
		"reply lost": func(armed *atomic.Bool) rpcHooks {
			return rpcHooks{reply: func(method string, _ stamp, _, _ any, err error) error {
				if method == rpcTimeToLive && armed.CompareAndSwap(true, false) {
					return fail
				}
				return err
			}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eps := startEtcd(t)
			other := newCoordinator(t, newClient(t, eps))
			var armed atomic.Bool
			h := newCoordinator(t, hookedClient(t, eps, hooks(&armed)))
			armed.Store(true)
			if g, err := h.Acquire(ctx(t), "k", "h#1", 2*time.Second); err == nil || !errors.Is(err, fail) {
				t.Fatalf("Acquire(k, h#1) with its lease lookup failed = %v, %v; want an error wrapping the fault", g, err)
			}
			if armed.Load() {
				t.Fatal("the lease lookup was never made")
			}
			if g, err := h.Acquire(ctx(t), "k", "h#1", 2*time.Second); err != nil {
				t.Fatalf("h's retry = %v, %v; want a grant superseding its own key", g, err)
			} else if err := h.Release(ctx(t), g); err != nil {
				t.Fatal(err)
			}

			// Once more, with no retry: the key must expire on its own.
			armed.Store(true)
			put := time.Now()
			if _, err := h.Acquire(ctx(t), "k", "h#2", 2*time.Second); err == nil {
				t.Fatal("Acquire(k, h#2) with its lease lookup failed = nil error")
			}
			for {
				if _, err := other.Acquire(ctx(t), "k", "o#1", 2*time.Second); err == nil {
					t.Logf("o granted k %s after h#2's put", time.Since(put).Round(100*time.Millisecond))
					break
				} else if time.Since(put) > 2*time.Second+5*time.Second {
					t.Fatalf("o still refused %s after h#2's put: %v; want k free once the lease nothing extends expires (TTL 2s)", time.Since(put), err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
