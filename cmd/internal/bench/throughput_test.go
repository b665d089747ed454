package bench

import (
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
	}
}
