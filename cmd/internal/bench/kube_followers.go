package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// FollowersOptions configure Followers.
type FollowersOptions struct {
	Target
	// TTL is tenure's TTL and client-go's LeaseDuration. Default 15s.
	TTL time.Duration
	// ClientGo is the peer's timing (see ClientGo).
	ClientGo ClientGo
	// Fresh is how many fresh candidates of each implementation meet a
	// stale Lease, all at once. Default 3.
	Fresh int
	// Idle is how many idle followers of each implementation wait behind a
	// leader. Default 3.
	Idle int
	// Window is how long the idle followers' requests are counted.
	// Default 30s.
	Window time.Duration
}

func (o *FollowersOptions) defaults() error {
	if o.TTL == 0 {
		o.TTL = 15 * time.Second
	}
	o.ClientGo = o.ClientGo.withDefaults(o.TTL)
	if o.Fresh == 0 {
		o.Fresh = 3
	}
	if o.Idle == 0 {
		o.Idle = 3
	}
	if o.Window == 0 {
		o.Window = 30 * time.Second
	}
	var errs []error
	if o.Kubeconfig == "" {
		errs = append(errs, fmt.Errorf("%w: the followers benchmark runs on Kubernetes: give --kubeconfig", ErrInvalidOptions))
	}
	if o.TTL < time.Second || o.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: --ttl %s: want whole seconds, 1s or more (leaseDurationSeconds)", ErrInvalidOptions, o.TTL))
	}
	if o.Fresh < 1 || o.Idle < 1 || o.Window <= 0 {
		errs = append(errs, fmt.Errorf("%w: --fresh %d, --idle %d, --window %s: want at least 1, 1 and more than 0", ErrInvalidOptions, o.Fresh, o.Idle, o.Window))
	}
	return errors.Join(errs...)
}

// Followers measures what followers cost and wait on Kubernetes, tenure
// beside client-go's LeaderElector, both at once: how long a fresh
// candidate waits for a stale Lease (one whose holder is gone), and the
// API requests per second of an idle follower behind a live leader (and of
// that leader).
func Followers(ctx context.Context, o FollowersOptions) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	r := &Report{Benchmark: "followers", Backend: o.Backend(), Settings: map[string]any{
		"ttl_ms": ms(o.TTL), "fresh": o.Fresh, "idle": o.Idle, "window_ms": ms(o.Window),
	}, Failures: []string{}}
	addClientGoSettings(r, o.ClientGo)
	id := runID()
	var fresh, idle [2][]sample
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, impl := range []string{"tenure", "client-go"} {
		wg.Go(func() { fresh[i], errs[i] = freshWaits(ctx, o, impl, id) })
		wg.Go(func() { idle[i], errs[2+i] = idleRates(ctx, o, impl, id) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, impl := range []string{"tenure", "client-go"} {
		ds := make([]time.Duration, len(fresh[i]))
		for j, s := range fresh[i] {
			ds[j] = s.took
		}
		row := r.addLatency(impl, "fresh candidate", ds, nil, 0)
		row.Extra = map[string]float64{"wait_minus_ttl_ms": row.Latency.Max - ms(o.TTL)}
		for _, role := range []string{"idle follower", "leader"} {
			r.Rows = append(r.Rows, rateRow(impl, role, idle[i]))
		}
	}
	r.compare("tenure", "client-go")
	r.Notes = append(r.Notes,
		"fresh candidate: a Lease held by a holder that is gone (renewTime an hour old) meets a candidate that has never seen it; from the candidate's start until it leads. Neither may trust renewTime: both wait the Lease's duration on their own clock from their first read (tenure plus 1% drift allowance; client-go until its first poll after that)",
		fmt.Sprintf("idle: one leader and %d followers of each implementation on a Lease of its own; requests each sent in %s, per second, counted in its client (writes: create, update, patch, delete; reads: get, list, and each watch opened)", o.Idle, o.Window),
		fmt.Sprintf("client-go's followers poll every RetryPeriod (%s, jittered up to 1.2× more); tenure's followers watch the one Lease and retry their acquisition with backoff (up to 4× tenure's retry period, TTL/10)", o.ClientGo.RetryPeriod))
	r.Elapsed = ms(time.Since(began))
	return r, nil
}

// rateRow is the mean request rates of the samples in role.
func rateRow(impl, role string, ss []sample) Row {
	var w, rd float64
	n := 0
	for _, s := range ss {
		if s.role == role {
			w, rd, n = w+s.writes, rd+s.reads, n+1
		}
	}
	return Row{Impl: impl, Case: role, Extra: map[string]float64{"writes_per_s": w / float64(n), "reads_per_s": rd / float64(n)}}
}

// sample is one measured follower: a fresh candidate's wait, or an idle
// member's request rates.
type sample struct {
	took          time.Duration
	role          string
	writes, reads float64
}

// freshWaits starts o.Fresh candidates of impl at once, each on a stale
// Lease of its own, and times how long each takes to lead.
func freshWaits(ctx context.Context, o FollowersOptions, impl, id string) ([]sample, error) {
	out := make([]sample, o.Fresh)
	errs := make([]error, o.Fresh)
	var wg sync.WaitGroup
	for i := range o.Fresh {
		wg.Go(func() {
			name := fmt.Sprintf("bench-%s-fresh-%s-%d", id, impl, i)
			cs, ns, err := o.kubeClient()
			if err == nil {
				err = staleLease(ctx, cs, ns, name, o.TTL)
			}
			if err != nil {
				errs[i] = err
				return
			}
			start := time.Now()
			stop, leads, err := runMember(ctx, o, impl, name, fmt.Sprintf("fresh-%d", i), nil)
			if err != nil {
				errs[i] = err
				return
			}
			defer stop()
			at, err := wait(ctx, leads, 2*o.TTL+30*time.Second, impl+" fresh candidate leading")
			out[i], errs[i] = sample{took: at.Sub(start)}, err
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// staleLease creates Lease name held by "gone", renewed an hour ago.
func staleLease(ctx context.Context, cs kubernetes.Interface, ns, name string, ttl time.Duration) error {
	holder, secs := "gone", int32(ttl/time.Second)
	then := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	_, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &then, RenewTime: &then},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("bench: stale Lease %s: %w", name, err)
	}
	return nil
}

// idleRates runs a leader and o.Idle followers of impl on one Lease and
// counts the requests each sends in the window.
func idleRates(ctx context.Context, o FollowersOptions, impl, id string) ([]sample, error) {
	name := fmt.Sprintf("bench-%s-idle-%s", id, impl)
	counters := make([]*requestCounter, o.Idle+1)
	for i := range counters {
		counters[i] = &requestCounter{}
		stop, leads, err := runMember(ctx, o, impl, name, fmt.Sprintf("idle-%d", i), counters[i])
		if err != nil {
			return nil, err
		}
		defer stop()
		if i == 0 {
			if _, err := wait(ctx, leads, 2*o.TTL+30*time.Second, impl+" idle leader"); err != nil {
				return nil, err
			}
		}
	}
	if err := sleep(ctx, 2*time.Second); err != nil { // the followers settle
		return nil, err
	}
	for _, c := range counters {
		c.reset()
	}
	if err := sleep(ctx, o.Window); err != nil {
		return nil, err
	}
	out := make([]sample, len(counters))
	for i, c := range counters {
		w, r := c.get()
		role := "idle follower"
		if i == 0 {
			role = "leader"
		}
		out[i] = sample{role: role, writes: float64(w) / o.Window.Seconds(), reads: float64(r) / o.Window.Seconds()}
	}
	return out, nil
}

// runMember runs one elector of impl on Lease name, as holder id, with a
// client of its own whose requests count counts (nil: none). leads
// receives when it starts leading; stop stops it.
func runMember(ctx context.Context, o FollowersOptions, impl, name, id string, count *requestCounter) (stop func(), leads <-chan time.Time, err error) {
	rc, ns, err := o.kubeConfig()
	if err != nil {
		return nil, nil, err
	}
	if count != nil {
		rc.Wrap(count.wrap)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	led := make(chan time.Time, 1)
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	lead := func(lctx context.Context) { led <- time.Now(); <-lctx.Done() }
	if impl == "client-go" {
		done, err := runClientGo(mctx, cs, ns, name, id, o.ClientGo, true, lead)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		return func() { cancel(); <-done }, led, nil
	}
	done, err := runTenureMember(mctx, cs, ns, name, id, o.TTL, lead)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return func() { cancel(); <-done }, led, nil
}

// runTenureMember runs a tenure Elector for key name as id, on a
// coordinator of its own on cs, until ctx ends.
func runTenureMember(ctx context.Context, cs kubernetes.Interface, ns, name, id string, ttl time.Duration, lead func(context.Context)) (<-chan struct{}, error) {
	c, err := kube.New(cs, ns)
	if err != nil {
		return nil, err
	}
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL = name, id, ttl
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close()
		e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error { lead(ctx); return nil })
	}()
	return done, nil
}

// requestCounter counts the requests a client sends: writes and reads.
type requestCounter struct{ writes, reads atomic.Int64 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			c.reads.Add(1)
		default:
			c.writes.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) reset() { c.writes.Store(0); c.reads.Store(0) }

func (c *requestCounter) get() (writes, reads int64) { return c.writes.Load(), c.reads.Load() }

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
