package memory_test

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/grouprace"
	"github.com/tenure-dev/tenure/memory"
)

// TestReclaimRace tries to get two holders of one partition, or
// a token that repeats or goes back, out of re-claims that supersede a
// member's own grants racing late releases of the superseded grants,
// another member's claims (of another identity, and of the same identity
// in a second process) and single-key Acquires of the partition's key
// (by another holder, and by one named as the owning member). It passed
// when written: kept as a regression test.
func TestReclaimRace(t *testing.T) {
	for _, tc := range []struct{ b, x string }{{"b", "x"}, {"a", "x"}, {"b", "a"}} {
		t.Run("b="+tc.b+",x="+tc.x, func(t *testing.T) {
			c := memory.New()
			t.Cleanup(func() { c.Close() })
			grouprace.ReclaimRace(t, c, c, c, tc.b, tc.x, 400, false)
		})
	}
}
