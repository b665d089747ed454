package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// selfCommand re-executes this test binary as a contender process.
func selfCommand(t *testing.T) func(spec string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(spec string) *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+spec)
		cmd.Stderr = os.Stderr
		return cmd
	}
}

func TestFailoverEtcd(t *testing.T) {
	r, err := Failover(t.Context(), FailoverOptions{Target: etcdTarget(t), Trials: 2, TTL: time.Second, Settle: 100 * time.Millisecond, Command: selfCommand(t)})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "etcd-mutex", 2)
	checkFailover(t, r)
}

func TestFailoverPostgres(t *testing.T) {
	r, err := Failover(t.Context(), FailoverOptions{Target: pgTarget(t), Trials: 2, TTL: time.Second, Settle: 100 * time.Millisecond, Command: selfCommand(t)})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, "seed-sql", 2)
	checkFailover(t, r)
}

// checkFailover checks that no failover beat the old lease: each took at
// least its floor, and the floor was measured.
func checkFailover(t *testing.T, r *Report) {
	t.Helper()
	for _, row := range r.Rows {
		if row.Floor == nil || row.Floor.P50 <= 0 {
			t.Errorf("%s: floor = %+v; want the old lease's time left, measured", row.Impl, row.Floor)
		}
		if row.Failures != 0 {
			t.Errorf("%s: %d successors acted before the old lease expired", row.Impl, row.Failures)
		}
	}
}

// TestJudge: a successor that acts while the old lease was still seen live
// is a failure; one that acts after it is not.
func TestJudge(t *testing.T) {
	const k = boottime.Instant(1_000_000_000)
	tests := []struct {
		name      string
		at, bound boottime.Instant
		early     bool
	}{
		{"after the lease", k + 2_100_000_000, k + 2_000_000_000, false},
		{"at the lease's end", k + 2_000_000_000, k + 2_000_000_000, false},
		{"before the lease's end", k + 1_900_000_000, k + 2_000_000_000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := judge(k, tc.at, tc.bound)
			if o.early != tc.early || o.took != tc.at.Sub(k) || o.floor != tc.bound.Sub(k) {
				t.Errorf("judge() = %+v; want early %v, took %s, floor %s", o, tc.early, tc.at.Sub(k), tc.bound.Sub(k))
			}
		})
	}
}

// TestFailoverReportFailures: an early successor is reported, by
// implementation and trial, and counted in its row.
func TestFailoverReportFailures(t *testing.T) {
	o := FailoverOptions{Trials: 2, TTL: 2 * time.Second}
	impls := []*failImpl{{name: "tenure"}, {name: "etcd-mutex"}}
	ok := outcome{took: 2100 * time.Millisecond, floor: 2000 * time.Millisecond}
	early := outcome{took: 1500 * time.Millisecond, floor: 2000 * time.Millisecond, early: true}
	r := failoverReport(o, impls, [][]outcome{{ok, early}, {ok, ok}}, time.Now())
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "tenure trial 2") {
		t.Errorf("failures = %q; want one, for tenure trial 2", r.Failures)
	}
	if r.Rows[0].Failures != 1 || r.Rows[1].Failures != 0 {
		t.Errorf("rows' failures = %d, %d; want 1, 0", r.Rows[0].Failures, r.Rows[1].Failures)
	}
}
