package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// partitionedReport is the part of a verify --partitions --json report the
// test reads.
type partitionedReport struct {
	Violations   int `json:"violations"`
	Partitions   int `json:"partitions"`
	PerPartition []struct {
		Name           string  `json:"name"`
		Terms          int     `json:"terms"`
		Owned          float64 `json:"owned"`
		WritesAccepted int     `json:"writes_accepted"`
		Overlaps       int     `json:"overlaps"`
		Violations     int     `json:"violations"`
	} `json:"per_partition"`
	Overlap struct {
		Count int `json:"count"`
	} `json:"overlap"`
}

// tenure verify --partitions 16 on the built binary: three nodes each run a
// member of a 16-partition group under drawn faults; the run exits 0 with no
// overlap or other violation in any partition, and the summary prints the
// per-partition figures.
func TestVerifyPartitions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "partitions.json")
	res := e2e.RunTenure(t, e2e.CleanEnv(), "verify", "--partitions", "16", "--duration", "15s", "--seed", "5", "--json", path)
	if res.Code != 0 {
		t.Fatalf("%s: exit %d; want 0\nstdout:\n%s\nstderr:\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read --json report: %v", err)
	}
	var r partitionedReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("parse --json report: %v", err)
	}
	if r.Violations != 0 || r.Overlap.Count != 0 || r.Partitions != 16 || len(r.PerPartition) != 16 {
		t.Fatalf("report: %d violations, %d overlaps, %d partitions, %d with figures; want 0, 0, 16, 16\n%s", r.Violations, r.Overlap.Count, r.Partitions, len(r.PerPartition), res.Stdout)
	}
	written := 0
	for _, p := range r.PerPartition {
		if p.Overlaps != 0 || p.Violations != 0 {
			t.Errorf("partition %s: %+v; want no overlap, no violation", p.Name, p)
		}
		if p.WritesAccepted > 0 && p.Terms > 0 && p.Owned > 0 {
			written++
		}
	}
	// Liveness on a loaded machine is noted, not asserted per partition:
	// the run must have owned and written some partition to mean anything.
	if written == 0 {
		t.Fatalf("no partition was owned and written in the run:\n%s", res.Stdout)
	}
	if written < len(r.PerPartition) {
		t.Logf("%d of %d partitions owned and written:\n%s", written, len(r.PerPartition), res.Stdout)
	}
	for _, want := range []string{"partitions: 16; owned", "partition  owned  terms  writes  overlaps  violations  max re-own", "verdict: no safety violation"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Stdout)
		}
	}
	if !strings.Contains(res.Stderr, "3 nodes sharing 16 partitions") {
		t.Errorf("stderr does not describe the partitioned run:\n%s", res.Stderr)
	}
}
