package postgres_test

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/grouprace"
)

// TestReclaimRace tries to get two holders of one partition, or
// a token that repeats or goes back, out of re-claims that supersede a
// member's own grants (ON CONFLICT … WHERE owner_epoch = the member's)
// racing late releases of the superseded grants, another member's claims
// (of another identity, and of the same identity in a second process),
// and single-key Acquires of the partition's key (which write the
// partition's row before they grant, by another holder and by one named
// as the owning member), each actor on its own pool. It passed when
// written: kept as a regression test.
func TestReclaimRace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ b, x string }{{"b", "x"}, {"a", "a"}} {
		t.Run("b="+tc.b+",x="+tc.x, func(t *testing.T) {
			dsn := newDB(t)
			grouprace.ReclaimRace(t, open(t, dsn), open(t, dsn), open(t, dsn), tc.b, tc.x, 300, false)
		})
	}
}
