package kube_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/kube"
)

// The interop tests run client-go's LeaderElector (LeaseLock) and a tenure
// Elector on one Lease of a real API server, both ways round, and check
// that they never lead at once: while one leads, the other waits at least
// two lease durations without taking over; after a graceful release the
// other takes over; after its link to the API server is cut, the other
// takes over only after the cut leader has stopped.
//
// client-go: LeaseDuration 5s, RenewDeadline 3s, RetryPeriod 500ms.
// tenure: TTL 5s, Margin 1s, MaxDrift 0.01.
const (
	interopLease   = 5 * time.Second
	interopRenew   = 3 * time.Second
	interopRetry   = 500 * time.Millisecond
	interopPatient = 2 * interopLease // how long a follower is watched waiting
)

func TestInteropClientGo(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	for _, tc := range []struct {
		name        string
		clientFirst bool // client-go leads first, tenure follows
		cut         bool // the leader's link is cut instead of a release
	}{
		{"client-go releases to tenure", true, false},
		{"tenure releases to client-go", false, false},
		{"client-go cut off, tenure takes over", true, true},
		{"tenure cut off, client-go takes over", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			interop(t, s, ns, fmt.Sprintf("interop-%t-%t", tc.clientFirst, tc.cut), tc.clientFirst, tc.cut)
		})
	}
}

// interop runs one scenario on Lease name.
func interop(t *testing.T, s *kubetest.Server, ns, name string, clientFirst, cut bool) {
	tl := &timeline{t: t}
	proxy := newProxy(t, s)
	leaderCfg, followerCfg := proxied(s, proxy), s.Config(kubetest.Admin)
	var lead, follow *contender
	if clientFirst {
		lead = startClientGo(t, leaderCfg, ns, name, "client-go-a", tl, !cut)
		tl.await(lead.id, 20*time.Second)
		follow = startTenure(t, followerCfg, ns, name, "tenure-b", tl)
	} else {
		lead = startTenure(t, leaderCfg, ns, name, "tenure-a", tl)
		tl.await(lead.id, 20*time.Second)
		follow = startClientGo(t, followerCfg, ns, name, "client-go-b", tl, true)
	}
	time.Sleep(interopPatient)
	tl.wantOnly(lead.id)
	ended := time.Now()
	if cut {
		proxy.Cut()
	} else {
		lead.stop()
	}
	// Liveness with slack: a release is taken within a retry period (a
	// watch event for tenure), a cut leader's Lease after its duration.
	tl.await(follow.id, interopLease+20*time.Second)
	t.Logf("%s took over %s after the leader was cut off or stopped", follow.id, tl.started(follow.id).Sub(ended))
	follow.stop()
	if cut {
		lead.stop()
	}
	tl.check()
}

// A contender is one elector run in the background.
type contender struct {
	id   string
	stop func() // stops it and waits for it
}

// startClientGo runs client-go's LeaderElector on Lease name as id.
func startClientGo(t *testing.T, cfg *rest.Config, ns, name, id string, tl *timeline, release bool) *contender {
	return startClientGoWith(t, cfg, ns, name, id, tl, release, interopRenew)
}

// startClientGoWith is startClientGo with RenewDeadline renew.
func startClientGoWith(t *testing.T, cfg *rest.Config, ns, name, id string, tl *timeline, release bool, renew time.Duration) *contender {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	ctx, cancel := context.WithCancel(context.Background())
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: interopLease, RenewDeadline: renew, RetryPeriod: interopRetry,
		ReleaseOnCancel: release, Name: name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { tl.start(id); <-lctx.Done(); tl.stop(id) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); le.Run(ctx) }()
	c := &contender{id: id, stop: sync.OnceFunc(func() { tl.stop(id); cancel(); <-done })}
	t.Cleanup(c.stop)
	return c
}

// startTenure runs a tenure Elector for key name as holder id.
func startTenure(t *testing.T, cfg *rest.Config, ns, name, id string, tl *timeline) *contender {
	return startTenureTTL(t, cfg, ns, name, id, interopLease, tl)
}

// startTenureTTL is startTenure with TTL ttl.
func startTenureTTL(t *testing.T, cfg *rest.Config, ns, name, id string, ttl time.Duration, tl *timeline) *contender {
	c, err := kube.Dial(t.Context(), cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	ec := tenure.DefaultConfig()
	ec.Key, ec.Holder, ec.Instance, ec.TTL = name, id, "1", ttl
	e, err := tenure.NewElector(c, ec)
	if err != nil {
		t.Fatal(err)
	}
	holder := e.Identity()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error {
			tl.start(holder)
			<-ctx.Done()
			tl.stop(holder)
			return nil
		})
	}()
	ct := &contender{id: holder, stop: sync.OnceFunc(func() { cancel(); <-done; c.Close() })}
	t.Cleanup(ct.stop)
	return ct
}

// newProxy is a TCP proxy to the API server, closed at cleanup.
func newProxy(t *testing.T, s *kubetest.Server) *tcpproxy.Proxy {
	host := s.URL[len("https://"):]
	p, err := tcpproxy.New("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// proxied is the admin's configuration through proxy p.
func proxied(s *kubetest.Server, p *tcpproxy.Proxy) *rest.Config {
	cfg := s.Config(kubetest.Admin)
	_, port, _ := net.SplitHostPort(p.Addr())
	cfg.Host = "https://127.0.0.1:" + port
	cfg.Timeout = 2 * time.Second
	return cfg
}

// A timeline records who leads, and any moment two lead at once: a
// contender that starts while another has not yet stopped.
type timeline struct {
	t       *testing.T
	mu      sync.Mutex
	leading map[string]bool
	starts  map[string]time.Time // first
	last    map[string]time.Time // latest
	stops   map[string]time.Time
	faults  []string
}

func (tl *timeline) start(id string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.leading == nil {
		tl.leading, tl.starts, tl.last, tl.stops = map[string]bool{}, map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	}
	for other, on := range tl.leading {
		if on && other != id {
			tl.faults = append(tl.faults, fmt.Sprintf("%s started leading while %s led", id, other))
		}
	}
	tl.leading[id] = true
	tl.last[id] = time.Now()
	if _, ok := tl.starts[id]; !ok {
		tl.starts[id] = time.Now()
	}
}

func (tl *timeline) stop(id string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.leading != nil && tl.leading[id] {
		tl.leading[id] = false
		tl.stops[id] = time.Now()
	}
}

// latest is when id last started leading.
func (tl *timeline) latest(id string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.last[id]
}

// stopped is when id last stopped leading.
func (tl *timeline) stopped(id string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.stops[id]
}

// started is when id first led.
func (tl *timeline) started(id string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.starts[id]
}

// await waits up to d for id to lead.
func (tl *timeline) await(id string, d time.Duration) {
	tl.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !tl.started(id).IsZero() {
			return
		}
	}
	tl.t.Fatalf("%s did not lead within %s", id, d)
}

// wantOnly checks that id leads and nobody else has ever led.
func (tl *timeline) wantOnly(id string) {
	tl.t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for other := range tl.starts {
		if other != id {
			tl.t.Fatalf("%s led while %s held the Lease", other, id)
		}
	}
	if !tl.leading[id] {
		tl.t.Fatalf("%s stopped leading while it held the Lease", id)
	}
}

// check fails the test for every overlap recorded.
func (tl *timeline) check() {
	tl.t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, f := range tl.faults {
		tl.t.Error(f)
	}
}

// TestInteropClientGoStaleRelease: a client-go leader G with
// ReleaseOnCancel is partitioned from the API server (its requests and
// replies held, not dropped); a tenure follower H takes the Lease after the
// wait; the partition heals while G's release is still pending, and G,
// which checks "am I the leader" against its own stale record, clears H's
// grant (client-go's tryRelease). A second tenure follower F must not take
// that clear for a release: it waits as for any change, and H, whose next
// renewal finds the Lease cleared, stops first. The two tenure contenders
// never lead at once. (G itself leads until its release returns, past its
// lease: client-go's own behaviour, logged, not judged here.)
func TestInteropClientGoStaleRelease(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	const name = "interop-stale-release"
	proxy := newProxy(t, s)
	gcfg := proxied(s, proxy)
	gcfg.Timeout = 0 // G's requests end with its own contexts, as in a cluster
	tlG := &timeline{t: t}
	g := startClientGoWith(t, gcfg, ns, name, "client-go-g", tlG, true, 4*time.Second)
	tlG.await(g.id, 20*time.Second)

	tl := &timeline{t: t} // the tenure contenders
	a := startTenure(t, s.Config(kubetest.Admin), ns, name, "tenure-a", tl)
	b := startTenure(t, s.Config(kubetest.Admin), ns, name, "tenure-b", tl)
	clears := watchClears(t, cs, ns, name)
	time.Sleep(time.Second) // both followers have seen G's renewals

	proxy.Hold(tcpproxy.Up)
	proxy.Hold(tcpproxy.Down)
	held := time.Now()
	var h, f *contender
	for deadline := time.Now().Add(interopLease + 20*time.Second); h == nil; time.Sleep(5 * time.Millisecond) {
		switch {
		case !tl.started(a.id).IsZero():
			h, f = a, b
		case !tl.started(b.id).IsZero():
			h, f = b, a
		case time.Now().After(deadline):
			t.Fatal("no tenure follower led after the client-go leader was partitioned")
		}
	}
	proxy.Heal() // G's pending release reaches the API server now
	t.Logf("%s led %s after the partition began; healed", h.id, tl.started(h.id).Sub(held))

	// G's release clears H's grant; then F takes over, after the wait.
	var cleared time.Time
	select {
	case cleared = <-clears:
	case <-time.After(15 * time.Second):
		t.Fatal("client-go's release never cleared the Lease after the partition healed: the scenario did not happen")
	}
	// F, or H again: both wait out the clear.
	var next string
	for deadline := time.Now().Add(interopLease + 20*time.Second); next == ""; time.Sleep(5 * time.Millisecond) {
		for _, c := range []*contender{f, h} {
			if tl.latest(c.id).After(cleared) {
				next = c.id
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no tenure contender led after client-go's clear")
		}
	}
	t.Logf("client-go cleared H's grant %s after the partition began; %s led %s after the clear; client-go stopped leading %s after the partition began",
		cleared.Sub(held), next, tl.latest(next).Sub(cleared), tlG.stopped(g.id).Sub(held))
	f.stop()
	h.stop()
	g.stop()
	tl.check()
}

// watchClears sends the time of each write that clears Lease name's holder
// without tenure's release mark.
func watchClears(t *testing.T, cs kubernetes.Interface, ns, name string) <-chan time.Time {
	w, err := cs.CoordinationV1().Leases(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan time.Time, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordv1.Lease)
			if !ok || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
				continue
			}
			if _, marked := l.Annotations[kube.AnnotationReleased]; marked && l.Spec.RenewTime != nil &&
				strings.Contains(l.Annotations[kube.AnnotationReleased], ","+strconv.FormatInt(l.Spec.RenewTime.UnixMicro(), 10)+",") {
				continue // tenure's own release
			}
			select {
			case out <- time.Now():
			default:
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return out
}
