package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"

	"github.com/tenure-dev/tenure/cmd/internal/headless"
)

// TestBench runs every bench subcommand end to end with tiny settings, on
// the etcd it starts by default and on PostgreSQL: the JSON report parses
// with a row for tenure and its peer and no safety failure, and the HTML
// page renders in headless Chromium with one CDF line per implementation.
// Speed is not asserted: the benchmark prints it.
func TestBench(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, peer string
		args       []string
		cdfs       int // CDF lines in the page
	}{
		{"handover", "etcd-election", []string{"bench", "handover", "--trials", "3", "--settle", "120ms"}, 2},
		{"failover", "etcd-mutex", []string{"bench", "failover", "--trials", "1", "--ttl", "1s", "--settle", "100ms"}, 2},
		{"throughput", "etcd-mutex", []string{"bench", "throughput", "--clients", "1,2", "--duration", "100ms", "--rounds", "1"}, 0},
		{"ttl", "", []string{"bench", "ttl", "--ttls", "1s,3s", "--measure", "300ms", "--pause", "2s", "--pause-rate", "1"}, 0},
		{"handover-postgres", "seed-sql", []string{"bench", "handover", "--trials", "3", "--settle", "50ms"}, 2},
		{"failover-postgres", "seed-sql", []string{"bench", "failover", "--trials", "1", "--ttl", "1s", "--settle", "100ms"}, 2},
		{"throughput-postgres", "seed-sql", []string{"bench", "throughput", "--clients", "1", "--duration", "100ms", "--rounds", "1"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each benchmark starts its own etcd or gets a database of its own
			args := tc.args
			if strings.HasSuffix(tc.name, "-postgres") {
				args = append(e2e.PostgresCoord(t), args...)
			}
			page := filepath.Join(t.TempDir(), "report.html")
			res := e2e.RunTenure(t, e2e.CleanEnv(), append(args, "--json", "--html", page)...)
			if res.Code != 0 {
				t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
			}
			var r bench.Report
			if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
				t.Fatalf("%s: JSON does not parse: %v\n%s", res.Description, err, res.Stdout)
			}
			impls := map[string]bool{}
			for _, row := range r.Rows {
				impls[row.Impl] = true
			}
			if !impls["tenure"] || (tc.peer != "" && !impls[tc.peer]) {
				t.Errorf("rows %+v; want tenure and %q", r.Rows, tc.peer)
			}
			if len(r.Failures) != 0 {
				t.Errorf("failures %q; want none", r.Failures)
			}
			if !strings.Contains(res.Stderr, "bench:") && !strings.Contains(res.Stderr, r.Benchmark+":") {
				t.Errorf("no progress on stderr:\n%s", res.Stderr)
			}
			if tc.cdfs > 0 {
				checkRendered(t, page, len(r.Rows), tc.cdfs)
			}
		})
	}
}

// checkRendered loads page in headless Chromium and checks the table's rows
// and the CDF lines in the rendered DOM.
func checkRendered(t *testing.T, page string, rows, lines int) {
	t.Helper()
	chromium := headless.Need(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	dom, err := headless.DumpDOM(ctx, chromium, "file://"+page)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(dom, `<tr class="row">`); got != rows {
		t.Errorf("rendered table has %d rows; want %d", got, rows)
	}
	if got := strings.Count(dom, `class="cdf-line"`); got != lines {
		t.Errorf("rendered page has %d CDF lines; want %d:\n%.3000s", got, lines, dom)
	}
	if strings.Contains(dom, "http://") || strings.Contains(dom, "https://") {
		t.Errorf("page refers to an external resource; want it self-contained")
	}
}

// TestBenchBadInput: options no benchmark can run with are usage errors
// that name the flag.
func TestBenchBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "handover", "--trials", "-1"}, "--trials -1"},
		{[]string{"bench", "failover", "--ttl", "1500ms"}, "--ttl 1.5s"},
		{[]string{"bench", "throughput", "--clients", "0"}, "--clients 0"},
		{[]string{"bench", "ttl", "--ttls", "1s", "--margin", "2s"}, "--ttls 1s is too short for --margin 2s"},
		{[]string{"bench", "ttl", "--ttls", "2s,0s"}, "--ttls 0s: every TTL must be positive"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			res := e2e.RunTenure(t, e2e.CleanEnv(), tc.args...)
			if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, tc.want) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q", res.Description, res.Code, res.Stderr, cli.ExitUsage, tc.want)
			}
		})
	}
}
