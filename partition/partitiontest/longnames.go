package partitiontest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// longNames checks partition keys at the 200-byte key limit: a group whose
// partition "0" makes a key of 200 bytes is granted it, and GroupPartitions
// names it; a group whose partition "0" would make a key of 201 or 202
// bytes is refused with ErrInvalidKey, as partition.Config refuses such a
// group: no backend holds a key longer than a key may be.
func (s suite) longNames(t *testing.T) {
	c := s.group(t)
	base := groupName(t) + "/"
	pad := func(n int) string { return base + strings.Repeat("l", n-len(base)) }
	fits := pad(198)
	m := joinFor(t, c, fits, "m", 1, time.Minute)
	res := claim(t, c, m, "0")
	if res[0].Err != nil {
		t.Fatalf("claim of partition 0 of a %d-byte group, a 200-byte key: %v; want it granted", len(fits), res[0].Err)
	}
	g := res[0].Grant
	ps, err := c.GroupPartitions(ctx(t), fits)
	if err != nil || len(ps) != 1 || ps[0].Key != g.Key || ps[0].Token != g.Token {
		t.Errorf("GroupPartitions(a %d-byte group) = %v, %v; want %s", len(fits), ps, err, g)
	}
	for _, n := range []int{199, 200} {
		long := pad(n)
		m := joinFor(t, c, long, "m", 1, time.Minute)
		res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
		if err == nil && len(res) == 1 {
			if err = res[0].Err; err == nil {
				t.Errorf("claim of partition 0 of a %d-byte group granted %s, a %d-byte key; want ErrInvalidKey", n, res[0].Grant, len(res[0].Grant.Key))
				continue
			}
		}
		if !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("claim of partition 0 of a %d-byte group = %v, %v; want ErrInvalidKey", n, res, err)
		}
	}
}
