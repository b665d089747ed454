package kube_test

import (
	"math/rand/v2"
	"net/http"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure/internal/grouprace"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// TestReclaimRace tries to get two holders of one partition, or
// a token that repeats or goes back, out of re-claims that supersede a
// member's own grants (taken again, without asking whether the owner
// lives, when the partition reads as the member's) racing late releases of
// the superseded grants, another member's claims (of another identity,
// and of the same identity in a second process) and single-key Acquires of
// the partition's key, each actor on its own client whose transport
// answers 30% of reads with an older reply (staleReads): a re-claim
// decided on a stale read that shows the partition still the member's
// must not take it from whoever owns it now. It passed when written: kept
// as a regression test.
func TestReclaimRace(t *testing.T) {
	t.Parallel()
	s, cs := shared(t)
	for i, tc := range []struct{ b, x string }{{"b", "x"}, {"a", "a"}} {
		t.Run("b="+tc.b+",x="+tc.x, func(t *testing.T) {
			ns := newNamespace(t, cs)
			var cs [3]*kube.Coordinator
			for j := range cs {
				cfg := s.Config(kubetest.Admin)
				cfg.ContentType = "application/json"
				tr := &staleReads{rng: rand.New(rand.NewPCG(uint64(i), uint64(j))), seen: map[string][]recorded{}}
				cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tr.rt = rt; return tr })
				client, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				cs[j] = newCoordinator(t, client, ns)
			}
			grouprace.ReclaimRace(t, cs[0], cs[1], cs[2], tc.b, tc.x, 100, true)
		})
	}
}
