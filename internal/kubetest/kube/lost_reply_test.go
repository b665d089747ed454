package kube_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
)

// TestRepliesLost: writes that the API server applied but whose replies
// the holder never got (the fault proxy holds the replies of the one PUT
// until the client's 2s timeout ends it) leave no room for a second
// holder or an old token. A lost grant blocks another holder, named with
// its token, until it is taken again by its own holder with a greater
// token; a lost renewal is renewed again with the same token; a lost
// release frees the key, whose next grant has a greater token, and the
// released grant's renewal is then told lost.
func TestRepliesLost(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	ns := newNamespace(t, cs)
	const key, ttl = "lost-reply", 30 * time.Second
	proxy := newProxy(t, s)
	cfg := proxied(s, proxy) // requests time out after 2s
	ft := &faultOn{match: func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/leases/"+key)
	}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ft.rt = rt; return ft })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, b := newCoordinator(t, client, ns), newCoordinator(t, cs, ns)
	loseReply := func() {
		ft.arm(func() func() {
			proxy.Hold(tcpproxy.Down)
			return func() { proxy.Release(tcpproxy.Down) }
		})
	}
	// held checks that b is refused key, naming holder and token.
	held := func(holder string, token uint64) {
		t.Helper()
		var he *tenure.HeldError
		if g, err := b.Acquire(ctx(t), key, "b#1", ttl); !errors.As(err, &he) || he.Holder != holder || he.Token != token {
			t.Fatalf("b's Acquire(%s) = %v, %v; want a *tenure.HeldError naming %s with token %d", key, g, err, holder, token)
		}
	}

	loseReply()
	if g, err := h.Acquire(ctx(t), key, "h#1", ttl); err == nil {
		t.Fatalf("h's Acquire(%s) with its reply held past the timeout = %v; want an error", key, g)
	}
	lg, ok, err := b.Leader(ctx(t), key)
	if err != nil || !ok || lg.Holder != "h#1" {
		t.Fatalf("Leader(%s) after h's Acquire whose reply was lost = %v, %v, %v; want h#1 (the write was applied)", key, lg, ok, err)
	}
	lostToken := lg.Token
	held("h#1", lostToken)
	g, err := h.Acquire(ctx(t), key, "h#1", ttl)
	if err != nil || g.Token <= lostToken {
		t.Fatalf("h's Acquire(%s) again after the lost reply = %v, %v; want a grant with token > %d, the lost grant's", key, g, err, lostToken)
	}
	held("h#1", g.Token)

	loseReply()
	if r, err := h.Renew(ctx(t), g); err == nil || errors.Is(err, tenure.ErrLost) {
		t.Fatalf("h's Renew(%v) with its reply held past the timeout = %v, %v; want an error, not ErrLost", g, r, err)
	}
	r, err := h.Renew(ctx(t), g)
	if err != nil || r.Token != g.Token {
		t.Fatalf("h's Renew(%v) again after a lost renewal = %v, %v; want renewed with token %d", g, r, err, g.Token)
	}
	held("h#1", g.Token)

	loseReply()
	if err := h.Release(ctx(t), r); err == nil {
		t.Fatalf("h's Release(%v) with its reply held past the timeout = nil; want an error", r)
	}
	gb, err := b.Acquire(ctx(t), key, "b#1", ttl)
	if err != nil || gb.Token <= g.Token {
		t.Fatalf("b's Acquire(%s) after h's release whose reply was lost = %v, %v; want a grant at once, with token > %d", key, gb, err, g.Token)
	}
	if r, err := h.Renew(ctx(t), r); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("h's Renew after its release (reply lost) and b's grant = %v, %v; want tenure.ErrLost", r, err)
	}
	if n := ft.fired(); n != 3 {
		t.Fatalf("replies lost: %d; want 3", n)
	}
}
