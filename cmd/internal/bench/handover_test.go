package bench

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// checkReport checks what every report must have: rows for tenure and
// peer with n samples each, a ratio, and JSON that parses back.
func checkReport(t *testing.T, r *Report, peer string, n int) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	if len(r.Failures) != 0 {
		t.Errorf("failures: %q; want none", r.Failures)
	}
	impls := map[string]Row{}
	for _, row := range r.Rows {
		impls[row.Impl] = row
	}
	want := []string{"tenure"}
	if peer != "" {
		want = append(want, peer)
	}
	for _, impl := range want {
		row, ok := impls[impl]
		if !ok {
			t.Fatalf("no row for %s in %+v", impl, r.Rows)
		}
		if row.Latency != nil && row.Latency.N != n {
			t.Errorf("%s: %d samples; want %d", impl, row.Latency.N, n)
		}
	}
	if peer != "" && impls["tenure"].VsPeer <= 0 {
		t.Errorf("tenure's row has no ratio to %s: %+v", peer, impls["tenure"])
	}
	buf.Reset()
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, buf.String())
	}
	if len(back.Rows) != len(r.Rows) || back.Benchmark != r.Benchmark {
		t.Errorf("JSON round trip = %+v; want %+v", back, r)
	}
}

func TestHandoverEtcd(t *testing.T) {
	r, err := Handover(t.Context(), HandoverOptions{Target: etcdTarget(t), Trials: 5, Settle: 120 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "etcd-election", 5)
	for _, row := range r.Rows {
		if row.Floor == nil || row.Floor.P50 <= 0 {
			t.Errorf("%s: floor = %+v; want measured", row.Impl, row.Floor)
		}
	}
}

func TestHandoverPostgres(t *testing.T) {
	r, err := Handover(t.Context(), HandoverOptions{Target: pgTarget(t), Trials: 5, Settle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "seed-sql", 5)
}
