package etcd_test

import (
	"testing"

	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/grouprace"
)

// TestReclaimRace tries to get two holders of one partition, or
// a token that repeats or goes back, out of re-claims that supersede a
// member's own grants (each rewrites the key in the nested transaction's
// failure branch) racing late releases of the superseded grants, another
// member's claims (of another identity, and of the same identity in a
// second process, whose lease differs) and single-key Acquires of the
// partition's key (by another holder, and by one named as the owning
// member), each actor on its own client. Kept as a regression test.
func TestReclaimRace(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	for _, tc := range []struct{ b, x string }{{"b", "x"}, {"a", "x"}, {"b", "a"}} {
		t.Run("b="+tc.b+",x="+tc.x, func(t *testing.T) {
			prefix := etcd.WithPrefix("/adv3-" + tc.b + "-" + tc.x + "/")
			ca := newCoordinator(t, newClient(t, eps), prefix)
			cb := newCoordinator(t, newClient(t, eps), prefix)
			cx := newCoordinator(t, newClient(t, eps), prefix)
			grouprace.ReclaimRace(t, ca, cb, cx, tc.b, tc.x, 300, false)
		})
	}
}
