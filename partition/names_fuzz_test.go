package partition

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/inputs"
)

// FuzzPartitionNumber: a partition name reads as a partition number only
// in the form Names writes it, every name Names writes is a valid
// partition name that reads back as its index, and indexOf finds a name
// among Names(p) exactly when Names(p) holds it.
func FuzzPartitionNumber(f *testing.F) {
	for _, s := range []string{"0", "17", "017", "-1", "+1", "1e3", " 1", "9223372036854775807", "9223372036854775808", "x", ""} {
		f.Add(s, uint16(20))
	}
	f.Fuzz(func(t *testing.T, name string, p uint16) {
		n := int(p % 2048)
		names := Names(n)
		i, ok := number(name)
		if ok && i < 0 {
			t.Fatalf("number(%q) = %d", name, i)
		}
		if ok && i < 4096 && Names(i + 1)[i] != name {
			t.Fatalf("number(%q) = %d, but Names writes partition %d as %q", name, i, i, Names(i + 1)[i])
		}
		want := -1
		for j, nm := range names {
			if nm == name {
				want = j
			}
		}
		if got := indexOf(name, n); got != want {
			t.Fatalf("indexOf(%q, %d) = %d, want %d", name, n, got, want)
		}
		if n > 0 {
			last := names[n-1]
			if err := inputs.PartitionName(last); err != nil {
				t.Fatalf("Names(%d) writes %q, not a partition name: %v", n, last, err)
			}
			if j, ok := number(last); !ok || j != n-1 {
				t.Fatalf("number(%q) = %d, %v; want %d", last, j, ok, n-1)
			}
		}
	})
}
