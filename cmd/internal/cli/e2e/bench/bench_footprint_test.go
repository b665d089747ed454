package bench

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/require"
)

// TestBenchFootprint runs tenure bench footprint briefly, on the etcd it
// starts, beside the real etcdctl lock: every figure is there for tenure
// (its process and its guard's, summed) and for etcdctl, non-zero where
// it must be and plausible, with a ratio and a goal line for memory and
// wall time. It asserts no goal: the benchmark reports those.
func TestBenchFootprint(t *testing.T) {
	t.Parallel()
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		require.Etcdctl.Missing(t, err)
	}
	res := e2e.RunTenure(t, e2e.CleanEnv(), "bench", "footprint", "--etcdctl", etcdctl, "--runs", "3", "--idle", "3s", "--json")
	if res.Code != 0 {
		t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
	}
	var r bench.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, res.Stdout)
	}
	rows := map[string]bench.Row{}
	for _, row := range r.Rows {
		rows[row.Impl+"/"+row.Case] = row
	}
	usage := func(impl, c string) float64 {
		t.Helper()
		row, ok := rows[impl+"/"+c]
		if !ok || row.Usage == nil {
			t.Fatalf("no %s figure for %s in %+v", c, impl, r.Rows)
		}
		return row.Usage.Value
	}
	for _, impl := range []string{"tenure", "etcdctl-lock"} {
		// A Go program leading on etcd is resident in a few MiB at
		// least, and in far less than a GiB.
		if mib := usage(impl, "resident while leading"); mib < 2 || mib > 1024 {
			t.Errorf("%s resident while leading = %.2f MiB; want 2 to 1024", impl, mib)
		}
		if ms := usage(impl, "idle CPU while leading"); ms < 0 || ms > 60000 {
			t.Errorf("%s idle CPU = %.2f ms a minute; want 0 to a core's minute", impl, ms)
		}
		if ms := usage(impl, "run -- true: CPU"); ms <= 0 || ms > 60000 {
			t.Errorf("%s run -- true CPU = %.2f ms; want more than 0, less than a minute", impl, ms)
		}
		lead := rows[impl+"/resident while leading"]
		if anon := lead.Extra["anonymous"]; anon <= 0 || anon >= lead.Usage.Value {
			t.Errorf("%s anonymous %.2f MiB of %.2f resident; want a part of it", impl, anon, lead.Usage.Value)
		}
		wall := rows[impl+"/run -- true: wall"].Latency
		if wall == nil || wall.N != 3 || wall.P50 <= 0 || wall.Max > 60000 {
			t.Errorf("%s run -- true wall = %+v; want 3 runs, each more than 0 and less than a minute", impl, wall)
		}
	}
	lead := rows["tenure/resident while leading"]
	own, guard := lead.Extra["tenure_process"], lead.Extra["guard_process"]
	if own <= 0 || guard <= 0 || own+guard < lead.Usage.Value-0.01 || own+guard > lead.Usage.Value+0.01 {
		t.Errorf("tenure resident %.2f MiB = tenure %.2f + guard %.2f; want both above 0, summing to it", lead.Usage.Value, own, guard)
	}
	// The binary under test embeds the guard program (guardtest), which
	// links little: the guard is the smaller process.
	if guard >= own {
		t.Errorf("guard resident %.2f MiB, tenure %.2f MiB; want the guard program from memory, smaller", guard, own)
	}
	if !hasNote(r.Notes, "tenure's guard: the program embedded in tenure") || !hasNote(r.Notes, "tenure: "+e2e.TenureBin) {
		t.Errorf("notes %q; want the binary measured (%s) and its guard from memory", r.Notes, e2e.TenureBin)
	}
	if len(r.Goals) != 2 {
		t.Fatalf("goals %+v; want memory and wall time", r.Goals)
	}
	for _, g := range r.Goals {
		if g.Ratio <= 0 || g.Max != 1.5 || g.Met != (g.Ratio <= g.Max) || g.Peer != "etcdctl-lock" {
			t.Errorf("goal %+v; want a ratio to etcdctl-lock, met when at most 1.5", g)
		}
	}
	if !strings.Contains(res.Stderr, "footprint: both lead") {
		t.Errorf("no progress on stderr:\n%s", res.Stderr)
	}
}

// hasNote reports whether a note starts with prefix.
func hasNote(notes []string, prefix string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
