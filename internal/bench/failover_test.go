package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"
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
