package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
)

// HandoverOptions configure Handover.
type HandoverOptions struct {
	Target
	// Trials is how many handovers each implementation makes. Default 100.
	Trials int
	// TTL is the lease of every implementation. Default 10s: a handover
	// never waits for it.
	TTL time.Duration
	// Settle is how long the follower has been waiting when the leader lets
	// go. Default 150ms: etcd delivers events to a watch opened at a past
	// revision only after its next catch-up pass (every 100ms), and real
	// followers have usually been waiting far longer.
	Settle time.Duration
	// SeedPoll is how often the seed's contender re-runs its acquisition.
	// Default 5ms.
	SeedPoll time.Duration
	// Phase adds to Settle a random wait, uniform in [0, Phase), drawn for
	// each trial: a peer that polls (client-go) then meets the release
	// anywhere in its poll cycle, as a follower that has waited long
	// does. Default 0; on Kubernetes, client-go's longest retry wait
	// (RetryPeriod·2.2, with its jitter).
	Phase time.Duration
	// ClientGo is the peer's timing on Kubernetes (see ClientGo); its
	// LeaseDuration defaults to TTL.
	ClientGo ClientGo
}

func (o *HandoverOptions) defaults() error {
	if o.Trials == 0 {
		o.Trials = 100
	}
	if o.TTL == 0 {
		o.TTL = 10 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = 150 * time.Millisecond
	}
	if o.SeedPoll == 0 {
		o.SeedPoll = 5 * time.Millisecond
	}
	if o.Kubeconfig != "" {
		o.ClientGo = o.ClientGo.withDefaults(o.TTL)
		if o.Phase == 0 {
			o.Phase = o.ClientGo.RetryPeriod * 22 / 10
		}
	}
	var errs []error
	if o.Trials < 1 {
		errs = append(errs, fmt.Errorf("%w: --trials %d: want at least 1", ErrInvalidOptions, o.Trials))
	}
	if o.TTL < time.Second {
		errs = append(errs, fmt.Errorf("%w: --ttl %s: want 1s or more", ErrInvalidOptions, o.TTL))
	}
	return errors.Join(append(errs, o.validate())...)
}

// trialer makes one handover and says how long it took.
type trialer interface {
	trial(ctx context.Context) (time.Duration, error)
	close()
}

// Handover measures graceful handovers: the leader lets go, and the time
// until the successor acts. tenure's Elector and the peer (etcd's
// concurrency.Election, or the seed SQL re-run by a polling contender)
// alternate trial by trial, and after each pair of trials the floor is
// measured (see floor).
func Handover(ctx context.Context, o HandoverOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	id := runID()
	ten, err := newElectorPair(ctx, o.Target, "bench/"+id+"/handover", o.TTL, o.Settle)
	if err != nil {
		return nil, err
	}
	defer ten.close()
	ten.phase = o.Phase
	peerName, peer, fl, err := handoverPeer(ctx, o, id)
	if peer != nil {
		defer peer.close()
	}
	if fl != nil {
		defer fl.close()
	}
	if err != nil {
		return nil, err
	}
	var tds, pds, floors []time.Duration
	for i := range o.Trials {
		for _, side := range []struct {
			t  trialer
			ds *[]time.Duration
		}{{ten, &tds}, {peer, &pds}} {
			d, err := side.t.trial(ctx)
			if err != nil {
				return nil, err
			}
			*side.ds = append(*side.ds, d)
		}
		f, err := fl.measure(ctx)
		if err != nil {
			return nil, err
		}
		floors = append(floors, f)
		if (i+1)%10 == 0 || i+1 == o.Trials {
			o.progress("handover: %d/%d trials", i+1, o.Trials)
		}
	}
	return handoverReport(o, peerName, tds, pds, floors, began), nil
}

// handoverPeer sets up the peer on the target and the floor's measurement.
// What it returns non-nil must be closed, error or not.
func handoverPeer(ctx context.Context, o HandoverOptions, id string) (string, trialer, floor, error) {
	if o.Kubeconfig != "" {
		h, err := newClientGoPair(ctx, o.Target, "bench-"+id+"-client-go", o.ClientGo, o.Settle, o.Phase)
		if err != nil {
			return "", nil, nil, err
		}
		f, err := newKubeFloor(ctx, o.Target, "bench-"+id+"-floor")
		if err != nil {
			return "", h, f, err
		}
		return "client-go", h, f, nil
	}
	if o.Postgres != "" {
		h, err := newSeedHandover(ctx, o.Target, "bench/"+id+"/seed", o.TTL, o.Settle, o.SeedPoll)
		if err != nil {
			return "", nil, nil, err
		}
		f, err := newPGFloor(ctx, o.Target, "bench/"+id+"/floor")
		if err != nil {
			return "", h, nil, err
		}
		return "seed-sql", h, f, nil
	}
	h, err := newElectionHandover(ctx, o.Target, "/tenure-bench/"+id+"/election", o.TTL, o.Settle)
	if err != nil {
		return "", nil, nil, err
	}
	f, err := newEtcdFloor(ctx, o.Target, "/tenure-bench/"+id+"/floor")
	if err != nil {
		return "", h, nil, err
	}
	return "etcd-election", h, f, nil
}

func handoverReport(o HandoverOptions, peerName string, tds, pds, floors []time.Duration, began time.Time) *Report {
	r := &Report{Benchmark: "handover", Backend: o.Backend(), Settings: map[string]any{
		"trials": o.Trials, "ttl_ms": ms(o.TTL), "settle_ms": ms(o.Settle),
	}, Failures: []string{}}
	r.addLatency("tenure", "", tds, floors, 0)
	r.addLatency(peerName, "", pds, floors, 0)
	r.compare("tenure", peerName)
	r.Notes = append(r.Notes,
		"handover: from the leader starting to let go until the successor acts (its function called with the new token)",
		floorNote(o.Target))
	if o.Postgres != "" {
		r.Settings["seed_poll_ms"] = ms(o.SeedPoll)
		r.Notes = append(r.Notes, fmt.Sprintf("seed-sql: the follower re-runs the seed's UPDATE every %s (the seed has no notification)", o.SeedPoll))
	}
	if o.Kubeconfig != "" {
		addClientGoSettings(r, o.ClientGo)
		r.Settings["phase_ms"] = ms(o.Phase)
		r.Notes = append(r.Notes, fmt.Sprintf("client-go: LeaderElector with a LeaseLock and ReleaseOnCancel; its follower polls every RetryPeriod (%s) with jitter up to 1.2×; the leader lets go %s plus a random wait below %s after the follower started, so the release falls anywhere in the follower's poll cycle (the same for tenure)", o.ClientGo.RetryPeriod, o.Settle, o.Phase))
	}
	r.Elapsed = ms(time.Since(began))
	return r
}

// electorPair hands a key back and forth between two tenure Electors, each
// on a coordinator of its own.
type electorPair struct {
	coords [2]*probe
	key    string
	ttl    time.Duration
	settle time.Duration
	phase  time.Duration // a random extra wait below this before each release
	cur    *leading
	n      int // handovers made
}

// leading is a running Elector: campaigning, then leading.
type leading struct {
	release chan struct{} // closed to make the leader let go
	cancel  context.CancelFunc
	done    chan error // Run's result
	acting  chan time.Duration
}

// resign makes the leader l let go (its function returns) and waits for its
// Run to release the key and return.
func (l *leading) resign() error {
	close(l.release)
	err := <-l.done
	l.cancel()
	return err
}

// stop makes l stop, leading or campaigning, and waits for its Run.
func (l *leading) stop() {
	close(l.release)
	l.cancel()
	<-l.done
}

func newElectorPair(ctx context.Context, t Target, key string, ttl, settle time.Duration) (*electorPair, error) {
	p := &electorPair{key: key, ttl: ttl, settle: settle}
	for i := range p.coords {
		c, err := t.coordinator(ctx)
		if err != nil {
			p.close()
			return nil, err
		}
		p.coords[i] = &probe{Coordinator: c}
	}
	l, err := p.lead(ctx, 0, nil)
	if err != nil {
		p.close()
		return nil, err
	}
	if _, err := wait(ctx, l.acting, 30*time.Second, "first leader"); err != nil {
		p.close()
		return nil, err
	}
	p.cur = l
	return p, nil
}

// lead starts node i campaigning. Once it acts, it sends on acting how long
// after the time received on released it began (0 without released).
func (p *electorPair) lead(ctx context.Context, i int, released <-chan time.Time) (*leading, error) {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL = p.key, fmt.Sprintf("bench-%d", i), p.ttl
	cfg.RetryPeriod = p.ttl / 4 // the watch, not the retry, must wake the follower
	e, err := tenure.NewElector(p.coords[i], cfg)
	if err != nil {
		return nil, err
	}
	l := &leading{release: make(chan struct{}), done: make(chan error, 1), acting: make(chan time.Duration, 1)}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go func() {
		l.done <- e.Run(rctx, func(context.Context, *tenure.Term) error {
			now := time.Now()
			var took time.Duration
			if released != nil {
				select {
				case t0 := <-released:
					took = now.Sub(t0)
				case <-l.release:
					return nil
				}
			}
			l.acting <- took
			<-l.release
			return nil
		})
	}()
	return l, nil
}

func (p *electorPair) trial(ctx context.Context) (time.Duration, error) {
	next := (p.n + 1) % 2
	refused := p.coords[next].arm()
	released := make(chan time.Time, 1)
	l, err := p.lead(ctx, next, released)
	if err != nil {
		return 0, err
	}
	_, err = wait(ctx, refused, 30*time.Second, "follower refused")
	if err == nil {
		err = sleep(ctx, p.settle+randPhase(p.phase))
	}
	if err != nil {
		l.stop()
		return 0, err
	}
	released <- time.Now()
	if err := p.cur.resign(); err != nil {
		l.stop()
		return 0, fmt.Errorf("bench: tenure leader's Run() = %w", err)
	}
	p.cur = l
	p.n++
	return wait(ctx, l.acting, 30*time.Second, "tenure successor acting")
}

func (p *electorPair) close() {
	if p.cur != nil {
		p.cur.stop()
		p.cur = nil
	}
	for _, c := range p.coords {
		if c != nil {
			c.Close()
		}
	}
}

// floorNote says what the handover floor is on t.
func floorNote(t Target) string {
	if t.Kubeconfig != "" {
		return "floor: one Lease update and its watch event (from the update's send to the event's arrival) plus one preconditioned update (the successor's acquisition), measured after each pair of trials"
	}
	if t.Postgres != "" {
		return "floor: one notification (from the NOTIFY's send to its arrival) plus one write round trip (the successor's acquisition), measured after each pair of trials"
	}
	return "floor: one write and its watch notification (from the write's send to the event's arrival) plus one transaction round trip (the successor's acquisition), measured after each pair of trials"
}
