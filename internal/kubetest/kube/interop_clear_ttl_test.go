// A Lease cleared by client-go's stale release is taken by a tenure
// contender that never saw the grant it cleared only after the longest of
// its own TTL and the cleared grant's, which the Lease's tenure.dev/ttl
// annotation keeps (client-go keeps the annotations it finds but writes a
// duration of 1s): a contender with a shorter TTL does not lead beside the
// tenure leader whose grant was cleared.
//
// Found by an adversarial review (audit-kube): before the annotation, such
// a contender waited its own TTL. Measured then (2 cores shared,
// kube-apiserver v1.37.2, 3 runs, H 30s and N 3s): N led 3.3-4.5 s after
// the clear; H stopped 10.0 s after it, at its next renewal: both led for
// 6.3-6.7 s ("tenure-n#1 started leading while tenure-h#1 led").

package kube_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// TestInteropClientGoStaleReleaseShorterTTL: as
// TestInteropClientGoStaleRelease, a client-go leader G with
// ReleaseOnCancel (Lease 5s) is partitioned, a tenure follower H (TTL 12s:
// it renews every 4s) takes the Lease, the partition heals and G's stale
// release clears H's grant. Then a tenure contender N with a 2s TTL starts
// (it never saw H's grant). N must not lead while H does; H leads until its
// next renewal finds the clear.
func TestInteropClientGoStaleReleaseShorterTTL(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	const name = "interop-clear-ttl"
	proxy := newProxy(t, s)
	gcfg := proxied(s, proxy)
	gcfg.Timeout = 0
	tlG := &timeline{t: t}
	g := startClientGoWith(t, gcfg, ns, name, "client-go-g", tlG, true, 4*time.Second)
	tlG.await(g.id, 20*time.Second)

	tl := &timeline{t: t} // the tenure contenders
	h := startTenureTTL(t, s.Config(kubetest.Admin), ns, name, "tenure-h", 12*time.Second, tl)
	clears := watchClears(t, cs, ns, name)
	time.Sleep(time.Second) // h has seen G's renewals

	proxy.Hold(tcpproxy.Up)
	proxy.Hold(tcpproxy.Down)
	held := time.Now()
	tl.await(h.id, interopLease+20*time.Second)
	proxy.Heal() // G's pending release reaches the API server now
	t.Logf("%s led %s after the partition began; healed", h.id, tl.started(h.id).Sub(held))

	var cleared time.Time
	select {
	case cleared = <-clears:
	case <-time.After(15 * time.Second):
		t.Fatal("client-go's release never cleared the Lease after the partition healed: the scenario did not happen")
	}
	n := startTenureTTL(t, s.Config(kubetest.Admin), ns, name, "tenure-n", 2*time.Second, tl)
	tl.await(n.id, 30*time.Second)
	for deadline := time.Now().Add(20 * time.Second); tl.stopped(h.id).IsZero() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // h leads until its next renewal finds the clear
	}
	t.Logf("client-go cleared %s's grant %s after it began to lead; %s (TTL 2s, started after the clear) led %s after the clear; %s stopped %s after the clear: both led for %s",
		h.id, cleared.Sub(tl.started(h.id)), n.id, tl.started(n.id).Sub(cleared), h.id, tl.stopped(h.id).Sub(cleared), tl.stopped(h.id).Sub(tl.started(n.id)))
	n.stop()
	h.stop()
	g.stop()
	tl.check()
}
