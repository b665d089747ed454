package bench

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestThroughputEtcd(t *testing.T) {
	r, err := Throughput(t.Context(), ThroughputOptions{Target: etcdTarget(t), Clients: []int{1, 3}, Duration: 200 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "etcd-mutex", 0)
	checkThroughput(t, r, 4)
}

func TestThroughputPostgres(t *testing.T) {
	r, err := Throughput(t.Context(), ThroughputOptions{Target: pgTarget(t), Clients: []int{1, 3}, Duration: 200 * time.Millisecond, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "seed-sql", 0)
	checkThroughput(t, r, 6)
}

// checkThroughput checks that every cell measured some operations.
func checkThroughput(t *testing.T, r *Report, rows int) {
	t.Helper()
	if len(r.Rows) != rows {
		t.Fatalf("%d rows; want %d", len(r.Rows), rows)
	}
	for _, row := range r.Rows {
		if row.OpsPerSec <= 0 {
			t.Errorf("%s %s: ops/s = %v; want > 0", row.Impl, row.Case, row.OpsPerSec)
		}
		if least, most := row.Extra["round_ratio_min"], row.Extra["round_ratio_max"]; row.Peer != "" && (least <= 0 || most < least) {
			t.Errorf("%s %s: ratio over %s from %v to %v per round; want 0 < min <= max", row.Impl, row.Case, row.Peer, least, most)
		}
	}
}

// TestThroughputRoundsAlternate checks that the implementations take turns
// in the reverse order every other round (A B B A …), each as many rounds,
// and that each tenure row carries the spread of its per-round ratio.
func TestThroughputRoundsAlternate(t *testing.T) {
	var order []string
	counting := func(name string) *cycler {
		return &cycler{name: name, setup: func(context.Context, int) (func(context.Context, int) error, func(), error) {
			order = append(order, name)
			return func(context.Context, int) error { time.Sleep(time.Millisecond); return nil }, func() {}, nil
		}}
	}
	a, b := counting("tenure"), counting("peer")
	o := ThroughputOptions{Clients: []int{1}, Duration: 40 * time.Millisecond, Rounds: 4}
	cells, err := throughputRounds(t.Context(), o, []*cycler{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tenure", "peer", "peer", "tenure", "tenure", "peer", "peer", "tenure"}; !slices.Equal(order, want) {
		t.Errorf("slices ran in the order %v; want %v", order, want)
	}
	ta, tb := cells[cellKey(a, 1)], cells[cellKey(b, 1)]
	if len(ta.rounds) != 4 || len(tb.rounds) != 4 {
		t.Fatalf("rounds measured: tenure %d, peer %d; want 4 each", len(ta.rounds), len(tb.rounds))
	}
	least, most := roundRatios(ta, tb)
	if least <= 0 || most < least {
		t.Errorf("round ratios %v to %v; want 0 < min <= max", least, most)
	}
}
