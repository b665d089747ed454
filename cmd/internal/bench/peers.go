package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// electionHandover hands an etcd concurrency.Election back and forth
// between two sessions, each on a client of its own: the peer of tenure's
// handover on etcd.
type electionHandover struct {
	clients   []*clientv3.Client
	elections []*concurrency.Election
	sessions  []*concurrency.Session
	prefix    string
	settle    time.Duration
	n         int
}

func newElectionHandover(ctx context.Context, t Target, prefix string, ttl, settle time.Duration) (*electionHandover, error) {
	h := &electionHandover{prefix: prefix, settle: settle}
	for range 3 { // two candidates and an observer
		cl, err := t.etcdClient(ctx)
		if err != nil {
			h.close()
			return nil, err
		}
		h.clients = append(h.clients, cl)
	}
	for _, cl := range h.clients[:2] {
		s, err := concurrency.NewSession(cl, concurrency.WithTTL(int(ttl/time.Second)))
		if err != nil {
			h.close()
			return nil, fmt.Errorf("bench: etcd session: %w", err)
		}
		h.sessions = append(h.sessions, s)
		h.elections = append(h.elections, concurrency.NewElection(s, prefix))
	}
	if err := h.elections[0].Campaign(ctx, "bench-0"); err != nil {
		h.close()
		return nil, fmt.Errorf("bench: first campaign: %w", err)
	}
	return h, nil
}

func (h *electionHandover) trial(ctx context.Context) (time.Duration, error) {
	cur, next := h.elections[h.n%2], h.elections[(h.n+1)%2]
	won := make(chan error, 1)
	var at atomic.Int64
	go func() {
		err := next.Campaign(ctx, fmt.Sprintf("bench-%d", (h.n+1)%2))
		at.Store(time.Now().UnixNano())
		won <- err
	}()
	// The follower's candidacy is in etcd: it now waits.
	for {
		resp, err := h.clients[2].Get(ctx, h.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, fmt.Errorf("bench: count candidates: %w", err)
		}
		if resp.Count == 2 {
			break
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			return 0, err
		}
	}
	if err := sleep(ctx, h.settle); err != nil {
		return 0, err
	}
	released := time.Now()
	if err := cur.Resign(ctx); err != nil {
		return 0, fmt.Errorf("bench: resign: %w", err)
	}
	if err, e := wait(ctx, won, 30*time.Second, "etcd-election successor"); e != nil || err != nil {
		return 0, errors.Join(e, err)
	}
	h.n++
	return time.Unix(0, at.Load()).Sub(released), nil
}

func (h *electionHandover) close() {
	for _, s := range h.sessions {
		s.Close()
	}
	for _, cl := range h.clients {
		cl.Close()
	}
}

// seedHandover hands a key of the seed's table back and forth: the leader
// releases with the seed's statement; the follower re-runs the seed's
// acquisition every poll, as the seed's recipe does.
type seedHandover struct {
	seed        Seed
	key         string
	ttl, settle time.Duration
	poll        time.Duration
	token       int64
	holder      string
	n           int
}

func newSeedHandover(ctx context.Context, t Target, key string, ttl, settle, poll time.Duration) (*seedHandover, error) {
	p, err := t.pool(ctx, 4)
	if err != nil {
		return nil, err
	}
	h := &seedHandover{seed: Seed{p}, key: key, ttl: ttl, settle: settle, poll: poll, holder: "bench-0"}
	if err := h.seed.Setup(ctx, key); err != nil {
		h.close()
		return nil, err
	}
	tok, ok, err := h.seed.Acquire(ctx, key, h.holder, ttl)
	if err == nil && !ok {
		err = fmt.Errorf("bench: seed key %q is held", key)
	}
	if err != nil {
		h.close()
		return nil, err
	}
	h.token = tok
	return h, nil
}

func (h *seedHandover) trial(ctx context.Context) (time.Duration, error) {
	next := fmt.Sprintf("bench-%d", (h.n+1)%2)
	type won struct {
		at    time.Time
		token int64
		err   error
	}
	ch := make(chan won, 1)
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() {
		t := time.NewTicker(h.poll)
		defer t.Stop()
		for {
			tok, ok, err := h.seed.Acquire(pctx, h.key, next, h.ttl)
			if err != nil || ok {
				ch <- won{time.Now(), tok, err}
				return
			}
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
		}
	})
	if err := sleep(ctx, h.settle); err != nil {
		return 0, err
	}
	released := time.Now()
	if err := h.seed.Release(ctx, h.key, h.holder, h.token); err != nil {
		return 0, err
	}
	w, err := wait(ctx, ch, 30*time.Second, "seed successor")
	if err == nil {
		err = w.err
	}
	if err != nil {
		return 0, err
	}
	h.holder, h.token = next, w.token
	h.n++
	return w.at.Sub(released), nil
}

func (h *seedHandover) close() { h.seed.Pool.Close() }
