package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/postgres"
)

// boundFunc reads, from a request sent after the call, the earliest the
// lease of the leader that was just killed can end at the coordinator: a
// lower bound; ok is false once it has ended (or no bound is known).
type boundFunc func(ctx context.Context) (until boottime.Instant, ok bool, err error)

// failImpl is one implementation in the failover benchmark: what its
// contender processes run, and how to read its leader's lease.
type failImpl struct {
	name  string
	spec  childSpec
	lease func(ctx context.Context) (boundFunc, error) // the current leader's
	close func()
}

// failoverImpls returns tenure and its peer on the target.
func failoverImpls(ctx context.Context, o FailoverOptions) ([]*failImpl, error) {
	if o.Kubeconfig != "" {
		return kubeFailoverImpls(ctx, o)
	}
	id := runID()
	base := childSpec{Endpoints: o.Endpoints, Postgres: o.Postgres, TTL: o.TTL, Poll: o.SeedPoll}
	ten, peer := base, base
	ten.Impl, ten.Key, ten.Renew = "tenure", "bench/"+id+"/failover", o.RenewInterval
	if o.Postgres != "" {
		peer.Impl, peer.Key = "seed-sql", "bench/"+id+"/seed"
		p, err := o.pool(ctx, 2)
		if err != nil {
			return nil, err
		}
		if err := (Seed{p}).Setup(ctx, peer.Key); err != nil {
			p.Close()
			return nil, err
		}
		table := pgx.Identifier{postgres.DefaultSchema, postgres.DefaultTable}.Sanitize()
		return []*failImpl{
			{name: "tenure", spec: ten, lease: pgLease(p, table, ten.Key), close: func() {}},
			{name: "seed-sql", spec: peer, lease: pgLease(p, "tenure_bench_seed", peer.Key), close: p.Close},
		}, nil
	}
	peer.Impl, peer.Key = "etcd-mutex", "/tenure-bench/"+id+"/mutex"
	cl, err := o.etcdClient(ctx)
	if err != nil {
		return nil, err
	}
	return []*failImpl{
		{name: "tenure", spec: ten, lease: etcdLease(cl, "/tenure-bench/"+ten.Key), close: func() {}},
		{name: "etcd-mutex", spec: peer, lease: etcdLease(cl, peer.Key+"/", clientv3.WithFirstCreate()...), close: func() { cl.Close() }},
	}, nil
}

// etcdLease finds the lease of the key (or, with WithFirstCreate, of the
// oldest key under the prefix) and reads its time left, in whole seconds
// rounded down, counted from when the request was sent: a lower bound
// (etcd deletes the key when it revokes the lease, at its expiry or
// later).
func etcdLease(cl *clientv3.Client, key string, opts ...clientv3.OpOption) func(context.Context) (boundFunc, error) {
	return func(ctx context.Context) (boundFunc, error) {
		resp, err := cl.Get(ctx, key, opts...)
		if err != nil {
			return nil, fmt.Errorf("bench: find the leader's lease: %w", err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
			return nil, fmt.Errorf("bench: no leader's lease at %q", key)
		}
		id := clientv3.LeaseID(resp.Kvs[0].Lease)
		return func(ctx context.Context) (boottime.Instant, bool, error) {
			sent := boottime.Now()
			r, err := cl.TimeToLive(ctx, id)
			if err != nil {
				return 0, false, err
			}
			return sent.Add(time.Duration(r.TTL) * time.Second), r.TTL >= 0, nil
		}, nil
	}
}

// pgLease reads the time left on the lease of key's current holder in
// table, on the database's clock, counted from when the query was sent: a
// lower bound of its expires_at; a successor's lease is not its.
func pgLease(p *pgxpool.Pool, table, key string) func(context.Context) (boundFunc, error) {
	q := `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM ` + table +
		` WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3 AND expires_at > clock_timestamp()`
	return func(ctx context.Context) (boundFunc, error) {
		var holder string
		var token int64
		if err := p.QueryRow(ctx, `SELECT holder_id, fencing_token FROM `+table+` WHERE resource = $1`, key).Scan(&holder, &token); err != nil {
			return nil, fmt.Errorf("bench: find the leader of %q: %w", key, err)
		}
		return func(ctx context.Context) (boottime.Instant, bool, error) {
			sent := boottime.Now()
			var us int64
			err := p.QueryRow(ctx, q, key, holder, token).Scan(&us)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, false, nil
			}
			return sent.Add(time.Duration(us) * time.Microsecond), err == nil, err
		}, nil
	}
}

// chain is one implementation's line of contender processes: the leader,
// and the next one, already campaigning.
type chain struct {
	o         FailoverOptions
	im        *failImpl
	cur, next *proc
	n         int // processes started
}

func startChain(ctx context.Context, o FailoverOptions, im *failImpl) (*chain, error) {
	c := &chain{o: o, im: im}
	var err error
	if c.cur, err = c.start(); err != nil {
		return nil, err
	}
	if _, err := c.cur.next(ctx, 30*time.Second, lineActing); err != nil {
		c.close()
		return nil, fmt.Errorf("%s: first leader: %w", im.name, err)
	}
	if c.next, err = c.start(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *chain) start() (*proc, error) {
	spec := c.im.spec
	spec.Holder = fmt.Sprintf("bench-%d", c.n)
	c.n++
	return startProc(c.o, spec)
}

// trial kills the leader once the next contender is ready and has waited
// settle, and times the takeover.
func (c *chain) trial(ctx context.Context, settle time.Duration) (outcome, error) {
	// settle includes the round's random phase (see Failover).
	if _, err := c.next.next(ctx, 30*time.Second, lineReady); err != nil {
		return outcome{}, fmt.Errorf("%s: %w", c.im.name, err)
	}
	if err := sleep(ctx, settle); err != nil {
		return outcome{}, err
	}
	lease, err := c.im.lease(ctx)
	if err != nil {
		return outcome{}, fmt.Errorf("%s: %w", c.im.name, err)
	}
	killed := boottime.Now()
	c.cur.kill()
	var bound boottime.Instant // latest lower bound of the old lease's end
	read := func() {
		if until, ok, err := lease(ctx); err == nil && ok {
			bound = max(bound, until)
		}
	}
	var line string
	for line == "" {
		read()
		select {
		case l, open := <-c.next.lines:
			switch {
			case !open:
				return outcome{}, fmt.Errorf("%s: the successor exited", c.im.name)
			case len(l) >= len(lineActing) && l[:len(lineActing)] == lineActing:
				line = l
			}
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return outcome{}, ctx.Err()
		}
	}
	// Once more after the successor acted: a write of the old leader's
	// that landed after the kill, before the successor's, counts even if
	// the reads above came before it.
	read()
	at, err := actingAt(line)
	if err != nil {
		return outcome{}, err
	}
	c.cur, c.next = c.next, nil
	if c.next, err = c.start(); err != nil {
		return outcome{}, err
	}
	return judge(killed, at, bound), nil
}

// judge is the outcome of a failover: the leader killed at killed, its
// successor acting at at, the old lease seen live at the coordinator until
// bound at least.
func judge(killed, at, bound boottime.Instant) outcome {
	return outcome{took: at.Sub(killed), floor: bound.Sub(killed), early: at < bound}
}

func (c *chain) close() {
	for _, p := range []*proc{c.cur, c.next} {
		if p != nil {
			p.kill()
		}
	}
}
