package kube_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/kube"
)

// TestClaimReadByNameFaults puts network faults (package tcpproxy, below
// the client) on exactly the requests of a claim's fallback: the owner of
// a partition is missing from its group's list (its membership Lease's
// group label was edited), so the claim reads the owner's membership Lease
// by name, and, when that read finds it gone, lists every Lease of the
// namespace. The claimer's requests have a 5s timeout. Whatever the
// fault, the claim ends in an error or a correct decision: over a live
// owner, a refusal naming it (the owner keeps the partition, unwritten);
// over an owner deleted, a grant with a greater token or an error.
func TestClaimReadByNameFaults(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	cases := []struct {
		name string
		list bool // the fault is on the list of every Lease, not the read by name
		// fault is called when the request is sent, and returns what undoes it
		// once the request has returned.
		fault       func(t *testing.T, p *tcpproxy.Proxy, deleteOwner func()) (heal func())
		ownerGone   bool // the owner's membership Lease is deleted before the claim
		wantGranted bool // a grant is a correct decision (the owner is gone)
	}{
		{name: "request held", fault: func(t *testing.T, p *tcpproxy.Proxy, _ func()) func() {
			p.Hold(tcpproxy.Up)
			return func() { p.Release(tcpproxy.Up) }
		}},
		{name: "reply held", fault: func(t *testing.T, p *tcpproxy.Proxy, _ func()) func() {
			p.Hold(tcpproxy.Down)
			return func() { p.Release(tcpproxy.Down) }
		}},
		{name: "connection cut", fault: func(t *testing.T, p *tcpproxy.Proxy, _ func()) func() {
			p.Cut()
			return p.Heal
		}},
		{name: "owner deleted while the request is held", wantGranted: true, fault: func(t *testing.T, p *tcpproxy.Proxy, deleteOwner func()) func() {
			p.Hold(tcpproxy.Up)
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(100 * time.Millisecond) // the request is in the proxy, held
				deleteOwner()
				p.Release(tcpproxy.Up)
			}()
			return func() { <-done }
		}},
		{name: "list of every Lease cut", list: true, ownerGone: true, wantGranted: true, fault: func(t *testing.T, p *tcpproxy.Proxy, _ func()) func() {
			p.Cut()
			return p.Heal
		}},
		{name: "list of every Lease's reply held", list: true, ownerGone: true, fault: func(t *testing.T, p *tcpproxy.Proxy, _ func()) func() {
			p.Hold(tcpproxy.Down)
			return func() { p.Release(tcpproxy.Down) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, cs)
			leases := cs.CoordinationV1().Leases(ns)
			owner := newCoordinator(t, cs, ns)
			m1 := join(t, owner, "owner#00000001", 30*time.Second)
			p := claimOne(t, owner, m1, "0")
			member := memberLeaseName(m1)
			editLease(t, cs, ns, member, func(l *coordv1.Lease) { l.Labels[kube.LabelGroup] = hash16("another group") })
			deleteOwner := func() {
				if err := leases.Delete(ctx(t), member, metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete the owner's membership Lease %s: %v", member, err)
				}
			}

			proxy := newProxy(t, s)
			cfg := proxied(s, proxy)
			cfg.Timeout = 5 * time.Second
			ft := &faultOn{match: func(r *http.Request) bool {
				if r.Method != http.MethodGet || r.URL.Query().Get("watch") != "" {
					return false
				}
				if tc.list {
					return strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/leases") && r.URL.Query().Get("labelSelector") == ""
				}
				return strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/leases/"+member)
			}}
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ft.rt = rt; return ft })
			pcs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			claimer := newCoordinator(t, pcs, ns)
			m2 := join(t, claimer, "claimer#00000002", 30*time.Second)
			if tc.ownerGone {
				deleteOwner()
			}
			ft.arm(func() func() { return tc.fault(t, proxy, deleteOwner) })
			res, err := claimer.ClaimPartitions(ctx(t), m2, []string{"0"})
			if n := ft.fired(); n != 1 {
				t.Fatalf("the fault fired %d times; want once, on the claim's request", n)
			}
			if err == nil {
				err = res[0].Err
			}
			t.Logf("ClaimPartitions(%s, g/0) = %+v, %v", m2.ID, res, err)
			ownerLives := !tc.ownerGone && !tc.wantGranted
			switch {
			case err == nil && ownerLives:
				t.Fatalf("ClaimPartitions(%s, g/0) over the live owner %s = %+v; want an error or a *tenure.HeldError", m2.ID, m1.ID, res[0].Grant)
			case err == nil && res[0].Grant.Token <= p.Token:
				t.Fatalf("ClaimPartitions(%s, g/0) after the owner was deleted = %+v; want a token greater than %d", m2.ID, res[0].Grant, p.Token)
			case err == nil && !tc.wantGranted:
				t.Fatalf("ClaimPartitions(%s, g/0) without the list of every Lease = %+v; want an error", m2.ID, res[0].Grant)
			}
			var he *tenure.HeldError
			if errors.As(err, &he) && (!ownerLives || he.Holder != m1.ID || he.Token != p.Token) {
				t.Fatalf("ClaimPartitions(%s, g/0) refused with %v; want a refusal only while the owner lives, naming %s, token %d", m2.ID, he, m1.ID, p.Token)
			}
			if ownerLives {
				if lost, err := owner.CheckPartitions(ctx(t), m1, []tenure.Grant{p}); err != nil || len(lost) != 0 {
					t.Fatalf("the owner's CheckPartitions(g/0) after the claim = %v, %v; want still owned with token %d", lost, err, p.Token)
				}
			}
		})
	}
}

// faultOn is a client transport that calls a fault, armed once, when it
// sends the first request that matches, and heals it once that request
// has returned: the fault (a tcpproxy hold or cut) strikes the connection
// below the client while that request is on it.
type faultOn struct {
	rt    http.RoundTripper
	match func(*http.Request) bool

	mu    sync.Mutex
	fault func() (heal func())
	n     int
}

// arm makes the next matching request fire fault.
func (f *faultOn) arm(fault func() (heal func())) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// fired is how many times the fault fired.
func (f *faultOn) fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *faultOn) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fault := f.fault
	if fault != nil && f.match(req) {
		f.fault = nil
		f.n++
	} else {
		fault = nil
	}
	f.mu.Unlock()
	if fault == nil {
		return f.rt.RoundTrip(req)
	}
	heal := fault()
	defer heal()
	return f.rt.RoundTrip(req)
}
