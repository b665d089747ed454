package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// ThroughputOptions configure Throughput.
type ThroughputOptions struct {
	Target
	// Clients are the concurrencies measured: each client cycles on a key
	// of its own. Default 1, 10, 50.
	Clients []int
	// Duration is how long each implementation runs at each concurrency,
	// split over Rounds. Default 4s: short runs on a shared machine swing by ±10%.
	Duration time.Duration
	// Rounds is how many times the implementations take turns, in the
	// reverse order every other round: an even number gives each as many
	// slices first as last. Default 4.
	Rounds int
}

func (o *ThroughputOptions) defaults() error {
	if len(o.Clients) == 0 {
		o.Clients = []int{1, 10, 50}
	}
	if o.Duration == 0 {
		o.Duration = 4 * time.Second
	}
	if o.Rounds == 0 {
		o.Rounds = 4
	}
	var errs []error
	for _, n := range o.Clients {
		if n < 1 || n > 500 {
			errs = append(errs, fmt.Errorf("%w: --clients %d: want 1 to 500", ErrInvalidOptions, n))
		}
	}
	if o.Duration < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: --duration %s: want 10ms or more", ErrInvalidOptions, o.Duration))
	}
	if o.Rounds < 1 {
		errs = append(errs, fmt.Errorf("%w: --rounds %d: want at least 1", ErrInvalidOptions, o.Rounds))
	}
	return errors.Join(append(errs, o.validate())...)
}

// cycler is an implementation in the throughput benchmark: set up for n
// clients, it runs one acquire/renew/release cycle of client i.
type cycler struct {
	name  string
	setup func(ctx context.Context, n int) (cycle func(ctx context.Context, i int) error, done func(), err error)
}

// Throughput measures acquire/renew/release cycles per second, each client
// on a key of its own, for tenure and its peers in turns, and the time to
// renew all the keys of one holder. Operations per second count three per
// cycle.
func Throughput(ctx context.Context, o ThroughputOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	id := runID()
	impls, closeAll, err := throughputImpls(ctx, o.Target, id)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	cells, err := throughputRounds(ctx, o, impls)
	if err != nil {
		return nil, err
	}
	rep := &Report{Benchmark: "throughput", Backend: o.Backend(), Settings: map[string]any{
		"duration_ms": ms(o.Duration), "rounds": o.Rounds, "clients": o.Clients,
	}, Failures: []string{}}
	peer := impls[len(impls)-1]
	for _, n := range o.Clients {
		for _, im := range impls {
			c := cells[cellKey(im, n)]
			row := Row{Impl: im.name, Case: fmt.Sprintf("clients=%d", n), OpsPerSec: float64(3*c.cycles) / c.elapsed.Seconds()}
			if im != peer {
				least, most := roundRatios(c, cells[cellKey(peer, n)])
				row.Extra = map[string]float64{"round_ratio_min": least, "round_ratio_max": most}
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	rep.compare("tenure", peer.name)
	rep.compare("tenure-notify-all", peer.name)
	rep.Notes = throughputNotes(o)
	rep.Elapsed = ms(time.Since(began))
	return rep, nil
}

// A cell is what one implementation did with one number of clients,
// summed over the rounds, and its operations per second in each round.
type cell struct {
	cycles  int64
	elapsed time.Duration
	rounds  []float64
}

// cellKey names the cell of implementation im with n clients.
func cellKey(im *cycler, n int) string { return fmt.Sprintf("%s/%d", im.name, n) }

// throughputRounds runs o.Rounds rounds, each giving every implementation
// a slice of o.Duration with each number of clients in turn, and returns
// the cells. The order of the implementations alternates from round to
// round (A B, then B A), so that a drift in the machine's load between
// slices weighs on each as much, over an even number of rounds.
func throughputRounds(ctx context.Context, o ThroughputOptions, impls []*cycler) (map[string]*cell, error) {
	cells := map[string]*cell{}
	slice := o.Duration / time.Duration(o.Rounds)
	for r := range o.Rounds {
		order := slices.Clone(impls)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, n := range o.Clients {
			for _, im := range order {
				cycles, el, err := throughputSlice(ctx, im, n, slice)
				if err != nil {
					return nil, fmt.Errorf("%s, %d clients: %w", im.name, n, err)
				}
				k := cellKey(im, n)
				if cells[k] == nil {
					cells[k] = &cell{}
				}
				cells[k].cycles += cycles
				cells[k].elapsed += el
				cells[k].rounds = append(cells[k].rounds, float64(3*cycles)/el.Seconds())
			}
			o.progress("throughput: round %d/%d, %d clients done", r+1, o.Rounds, n)
		}
	}
	return cells, nil
}

// roundRatios returns the least and the greatest of the ratios of a's
// operations per second over b's in the same round.
func roundRatios(a, b *cell) (least, most float64) {
	for i := range min(len(a.rounds), len(b.rounds)) {
		r := ratio(a.rounds[i], b.rounds[i])
		if i == 0 {
			least, most = r, r
		}
		least, most = min(least, r), max(most, r)
	}
	return least, most
}

// throughputSlice times n clients of im cycling for slice. They connect
// and warm up before the slice is timed, and disconnect after it:
// connecting (a backend or a lease per client) is not an operation, and
// only one implementation's connections are open at a time (50 clients of
// three would pass PostgreSQL's default limit of 100).
func throughputSlice(ctx context.Context, im *cycler, n int, slice time.Duration) (int64, time.Duration, error) {
	c, err := startClients(ctx, im, n)
	if err != nil {
		return 0, 0, err
	}
	defer c.close()
	return c.run(ctx, slice)
}

func throughputNotes(o ThroughputOptions) []string {
	n := []string{
		"ops/s: acquire, renew and release, three operations per cycle, each client cycling on a key of its own; the implementations take turns in each round, in the reverse order every other round, and each one's operations are summed over the rounds",
		"round_ratio_min, round_ratio_max: the least and the greatest ratio of the row's ops/s over the peer's in the same round (the spread that the machine's load gives the ratio)",
	}
	if o.Postgres != "" {
		n = append(n, "notifications: tenure (postgres.NotifyWatched, the default) announces acquisitions and releases only while some coordinator watches the key (none does here); tenure-notify-all announces every one (the old behaviour)",
			"seed-sql renews a holder's keys one statement each, as the seed's recipe does")
	} else {
		n = append(n, "etcd-mutex: concurrency.Mutex Lock, one KeepAliveOnce of the session's lease, Unlock, on one session per client")
	}
	return n
}

// clients are n clients of one implementation, connected and warmed up.
type clients struct {
	im    *cycler
	n     int
	cycle func(ctx context.Context, i int) error
	close func()
}

// startClients sets up n clients of im and warms them up: every client runs
// one cycle, all at once, so that each has its connection (or lease) before
// the timing begins.
func startClients(ctx context.Context, im *cycler, n int) (*clients, error) {
	cycle, done, err := im.setup(ctx, n)
	if err != nil {
		return nil, err
	}
	c := &clients{im: im, n: n, cycle: cycle, close: done}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = cycle(ctx, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		done()
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	return c, nil
}

// run runs the clients for d and counts their cycles.
func (c *clients) run(ctx context.Context, d time.Duration) (int64, time.Duration, error) {
	var count atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, c.n)
	start := time.Now()
	stop := start.Add(d)
	for i := range c.n {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if errs[i] = c.cycle(ctx, i); errs[i] != nil {
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	return count.Load(), time.Since(start), errors.Join(errs...)
}

func tenureCycler(name, prefix string, open func(ctx context.Context, n int) (tenure.Coordinator, error)) *cycler {
	key := func(i int) string { return fmt.Sprintf("%s/%d", prefix, i) }
	return &cycler{
		name: name,
		setup: func(ctx context.Context, n int) (func(context.Context, int) error, func(), error) {
			c, err := open(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			return func(ctx context.Context, i int) error {
				g, err := c.Acquire(ctx, key(i), fmt.Sprintf("client-%d", i), 15*time.Second)
				if err != nil {
					return err
				}
				if g, err = c.Renew(ctx, g); err != nil {
					return err
				}
				return c.Release(ctx, g)
			}, func() { c.Close() }, nil
		},
	}
}

// throughputImpls returns tenure first and its peers on the target.
func throughputImpls(ctx context.Context, t Target, id string) ([]*cycler, func(), error) {
	prefix := "bench/" + id + "/ops"
	if t.Postgres == "" {
		return []*cycler{
			tenureCycler("tenure", prefix, func(ctx context.Context, _ int) (tenure.Coordinator, error) { return t.coordinator(ctx) }),
			mutexCycler(t, "/tenure-bench/"+id+"/mutex"),
		}, func() {}, nil
	}
	return []*cycler{
		tenureCycler("tenure", prefix, t.postgresOpener(postgres.NotifyWatched)),
		tenureCycler("tenure-notify-all", prefix, t.postgresOpener(postgres.NotifyAll)),
		seedCycler(t, prefix+"/seed"),
	}, func() {}, nil
}

// postgresOpener returns what opens a PostgreSQL coordinator for n
// clients, announcing as notify says, on a pool of its own.
func (t Target) postgresOpener(notify postgres.Notify) func(context.Context, int) (tenure.Coordinator, error) {
	return func(ctx context.Context, n int) (tenure.Coordinator, error) {
		p, err := t.pool(ctx, n+2)
		if err != nil {
			return nil, err
		}
		c, err := postgres.New(ctx, p, postgres.WithNotify(notify))
		if err != nil {
			p.Close()
			return nil, err
		}
		return closing{c, p.Close}, nil
	}
}

// closing is a coordinator that also closes the pool it was made on.
type closing struct {
	tenure.Coordinator
	closePool func()
}

// Close closes the coordinator, then its pool.
func (c closing) Close() error {
	err := c.Coordinator.Close()
	c.closePool()
	return err
}

func mutexCycler(t Target, prefix string) *cycler {
	return &cycler{
		name: "etcd-mutex",
		setup: func(ctx context.Context, n int) (func(context.Context, int) error, func(), error) {
			cl, err := t.etcdClient(ctx)
			if err != nil {
				return nil, nil, err
			}
			sessions := make([]*concurrency.Session, n)
			done := func() {
				for _, s := range sessions {
					if s != nil {
						s.Close()
					}
				}
				cl.Close()
			}
			for i := range sessions {
				if sessions[i], err = concurrency.NewSession(cl, concurrency.WithTTL(15)); err != nil {
					done()
					return nil, nil, err
				}
			}
			return func(ctx context.Context, i int) error {
				s := sessions[i]
				m := concurrency.NewMutex(s, fmt.Sprintf("%s/%d", prefix, i))
				if err := m.Lock(ctx); err != nil {
					return err
				}
				if _, err := cl.KeepAliveOnce(ctx, s.Lease()); err != nil {
					return err
				}
				return m.Unlock(ctx)
			}, done, nil
		},
	}
}

func seedCycler(t Target, prefix string) *cycler {
	key := func(i int) string { return fmt.Sprintf("%s/%d", prefix, i) }
	const ttl = 15 * time.Second
	setup := func(ctx context.Context, n int) (Seed, error) {
		p, err := t.pool(ctx, n+2)
		if err != nil {
			return Seed{}, err
		}
		keys := make([]string, n)
		for i := range keys {
			keys[i] = key(i)
		}
		s := Seed{p}
		if err := s.Setup(ctx, keys...); err != nil {
			p.Close()
			return Seed{}, err
		}
		return s, nil
	}
	return &cycler{
		name: "seed-sql",
		setup: func(ctx context.Context, n int) (func(context.Context, int) error, func(), error) {
			s, err := setup(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			return func(ctx context.Context, i int) error {
				holder := fmt.Sprintf("client-%d", i)
				tok, ok, err := s.Acquire(ctx, key(i), holder, ttl)
				if err != nil || !ok {
					return errors.Join(err, fmt.Errorf("seed acquire of %q refused", key(i)))
				}
				if _, err := s.Renew(ctx, key(i), holder, tok, ttl); err != nil {
					return err
				}
				return s.Release(ctx, key(i), holder, tok)
			}, s.Pool.Close, nil
		},
	}
}
