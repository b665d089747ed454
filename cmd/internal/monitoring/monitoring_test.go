// Package monitoring tests the Prometheus alert rules and the Grafana
// dashboard that ship with tenure (the repository's monitoring/ directory)
// against what tenure exports.
package monitoring

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/require"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// dir is the repository's monitoring/ directory.
const dir = "../../../monitoring"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tool returns the path of a Prometheus tool; when it is missing,
// require.Prometheus decides between failing and skipping the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		require.Prometheus.Missing(t, err)
	}
	return path
}

// The rules load, and their unit tests (alerts_test.yml) pass.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// The unit tests cover every alert: a rule without a test is a rule
// nobody has seen fire.
func TestEveryAlertTested(t *testing.T) {
	rules := readFile(t, "alerts.yml")
	tests := readFile(t, "alerts_test.yml")
	names := regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(rules, -1)
	if len(names) < 7 {
		t.Fatalf("alerts.yml has %d alerts; want at least 7", len(names))
	}
	for _, n := range names {
		if !regexp.MustCompile(`alertname: ` + n[1] + `\s*\n\s*exp_alerts:\s*\n\s*- exp_labels`).MatchString(tests) {
			t.Errorf("alert %s has no test in alerts_test.yml that expects it to fire", n[1])
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exported runs a real instance, an Elector reporting through a Monitor,
// with every kind of observation (a fenced term, a stale write rejected by
// a fence, renewals, a failed coordinator call), and a member of a
// partition group reporting on the same registry, and
// returns the metric families its /metrics serves.
func exported(t *testing.T) map[string]*dto.MetricFamily {
	var families map[string]*dto.MetricFamily
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		defer mem.Close()
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		c := m.InstrumentGroup(mem)
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.Instance = "jobs", "node", "1"
		mon, err := monitor.New(monitor.Config{Coordinator: c, Keys: []string{cfg.Key}, Identity: tenure.Identity(cfg.Holder, cfg.Instance), Metrics: m, Gatherer: reg})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Metrics = mon
		el, err := tenure.NewElector(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = mon.Run(ctx) }()

		past, cancelPast := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		_, _, _ = c.Leader(past, cfg.Key) // a failed coordinator call
		cancelPast()
		// A member of a partition group, reporting on the same registry.
		pm, err := prom.NewPartition(reg)
		if err != nil {
			t.Fatal(err)
		}
		pcfg := partition.DefaultConfig()
		pcfg.Key, pcfg.Partitions, pcfg.Holder, pcfg.Metrics = "shards", 4, "node", pm
		group, err := partition.New(c, pcfg) // the instrumented coordinator runs groups too
		if err != nil {
			t.Fatal(err)
		}
		groupDone := make(chan error, 1)
		go func() {
			groupDone <- group.Run(ctx, func(ctx context.Context, _ partition.Partition, _ *tenure.Term) error {
				<-ctx.Done()
				return nil
			})
		}()
		defer func() { cancel(); <-groupDone }()

		register := fence.NewRegister[string](fence.WithObserver(m.FenceObserver("orders")))
		var first uint64
		errDone := errors.New("gathered")
		err = el.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
			if first == 0 { // the first term writes, then is told it is stale
				first = term.Token()
				_ = register.Write(first, "first")
				return fmt.Errorf("told: %w", tenure.ErrStaleToken)
			}
			_ = register.Write(term.Token(), "second")
			_ = register.Write(first, "stale") // rejected
			time.Sleep(cfg.TTL / 2)            // renewals
			rec := httptest.NewRecorder()
			mon.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			p := expfmt.NewTextParser(model.UTF8Validation)
			if families, err = p.TextToMetricFamilies(rec.Body); err != nil {
				t.Fatalf("parse /metrics: %v", err)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
		cancel()
		synctest.Wait()
	})
	if len(families) == 0 {
		t.Fatal("no metrics gathered")
	}
	return families
}

// metricNames returns the tenure_* metric names in text, with the series
// suffixes of histograms stripped.
func metricNames(text string) []string {
	seen := map[string]bool{}
	for _, n := range regexp.MustCompile(`\btenure_[a-z_]+[a-z]`).FindAllString(text, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && strings.HasSuffix(base, "_seconds") {
				n = base
			}
		}
		seen[n] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// Every metric the rules, the dashboard and docs/monitoring.md name is one that
// /metrics exports, and docs/monitoring.md's table lists every exported metric with
// its type, labels and help.
func TestNamesMatchExports(t *testing.T) {
	families := exported(t)
	var dash any
	if err := json.Unmarshal([]byte(readFile(t, "dashboard.json")), &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, file := range []string{"alerts.yml", "dashboard.json"} {
		names := metricNames(readFile(t, file))
		if len(names) < 5 {
			t.Errorf("%s names %d metrics; want more", file, len(names))
		}
		for _, n := range names {
			if families[n] == nil {
				t.Errorf("%s uses %s, which /metrics does not export", file, n)
			}
		}
	}
	table := readmeTable(t)
	for name, mf := range families {
		if !strings.HasPrefix(name, "tenure_") {
			continue
		}
		row, ok := table[name]
		if !ok {
			t.Errorf("docs/monitoring.md metric table has no row for %s", name)
			continue
		}
		want := readmeRow{typ: strings.ToLower(mf.GetType().String()), labels: labelNames(mf), help: mf.GetHelp()}
		if row != want {
			t.Errorf("docs/monitoring.md row of %s = %+v; want %+v", name, row, want)
		}
	}
	for name := range table {
		if families[name] == nil {
			t.Errorf("docs/monitoring.md metric table lists %s, which /metrics does not export", name)
		}
	}
}

// readmeRow is one row of docs/monitoring.md's metric table.
type readmeRow struct{ typ, labels, help string }

// readmeTable parses the rows "| `name` | type | labels | help |" of the
// docs/monitoring.md's metric table.
func readmeTable(t *testing.T) map[string]readmeRow {
	t.Helper()
	f, err := os.Open("../../../docs/monitoring.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]readmeRow{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `tenure_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("docs/monitoring.md metric row has %d cells; want 4: %s", len(cells), line)
		}
		rows[strings.Trim(cells[0], "`")] = readmeRow{typ: cells[1], labels: cells[2], help: strings.ReplaceAll(cells[3], `\|`, "|")}
	}
	if len(rows) == 0 {
		t.Fatal("docs/monitoring.md has no metric table rows (| `tenure_…` | type | labels | help |)")
	}
	return rows
}

// labelNames lists the labels of mf's series, le excepted, as docs/monitoring.md
// writes them: "key, reason".
func labelNames(mf *dto.MetricFamily) string {
	seen := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			seen[l.GetName()] = true
		}
	}
	var order []string
	for _, n := range []string{"key", "group", "holder", "reason", "result", "resource", "op"} {
		if seen[n] {
			order = append(order, n)
		}
	}
	return strings.Join(order, ", ")
}
