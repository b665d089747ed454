package freeport

import "testing"

func TestPortsBelowEphemeralRange(t *testing.T) {
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	hi := ephemeralLow()
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice in one call", p)
		}
		seen[p] = true
		if hi-low >= 1000 && (p < low || p >= hi) {
			t.Errorf("port %d outside [%d, %d): it may collide with outgoing connections", p, low, hi)
		}
	}
}
