package monitor

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/internal/require"
)

// promServer is a Prometheus server started by a test.
type promServer struct{ addr string }

// startPrometheus starts Debian's prometheus on a free loopback port with
// temporary storage, scraping targets every 500ms.
func startPrometheus(t *testing.T, targets ...string) *promServer {
	t.Helper()
	quoted, _ := json.Marshal(targets)
	return startPrometheusJobs(t, fmt.Sprintf(`
  - job_name: tenure
    static_configs: [{targets: %s}]
`, quoted))
}

// startPrometheusJobs is startPrometheus with the scrape_configs list
// jobs (YAML).
func startPrometheusJobs(t *testing.T, jobs string) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		require.Prometheus.Missing(t, err)
	}
	dir := t.TempDir()
	cfg := `global: {scrape_interval: 500ms, scrape_timeout: 400ms, evaluation_interval: 500ms}
scrape_configs:` + jobs
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := freeport.Listen(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := ls[0].Addr().String()
	ls[0].Close()
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logs := &e2e.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", logs)
		}
	})
	p := &promServer{addr: addr}
	e2e.WaitFor(t, 30*time.Second, "prometheus to be ready", func() bool {
		code, _ := e2e.Get(t, addr, "/-/ready")
		return code == http.StatusOK
	})
	return p
}

// vector is one series of an instant query's result.
type vector struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query.
func (p *promServer) query(t *testing.T, q string) []vector {
	t.Helper()
	code, body := e2e.Get(t, p.addr, "/api/v1/query?query="+url.QueryEscape(q))
	var resp struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != http.StatusOK || resp.Status != "success" {
		t.Fatalf("query %s = %d %v: %s", q, code, err, body)
	}
	out := make([]vector, 0, len(resp.Data.Result))
	for _, r := range resp.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", q, r.Value[1], err)
		}
		out = append(out, vector{Metric: r.Metric, Value: v})
	}
	return out
}

// scalar runs q, which must return at most one series, and returns its
// value, or -1 when it returns none.
func (p *promServer) scalar(t *testing.T, q string) float64 {
	t.Helper()
	switch v := p.query(t, q); len(v) {
	case 0:
		return -1
	case 1:
		return v[0].Value
	default:
		t.Fatalf("query %s returned %d series; want 1", q, len(v))
		return 0
	}
}

// TestPrometheusScrapesContenders: a real Prometheus scrapes two
// "tenure run --http" contenders: exactly one leads, and when it is killed
// the other takes over, with a greater fencing token. Sampled all along,
// the number of instances that claim to lead never exceeds one.
func TestPrometheusScrapesContenders(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	a, addrA := monitored(t, s, "prom", "alpha")
	b, addrB := monitored(t, s, "prom", "beta")
	p := startPrometheus(t, addrA, addrB)
	procs := map[string]*e2e.Proc{addrA: a, addrB: b}

	maxLeaders := 0.0
	leaders := func() float64 {
		v := p.scalar(t, `sum(tenure_is_leader{key="prom"})`)
		maxLeaders = max(maxLeaders, v)
		return v
	}
	e2e.WaitFor(t, 30*time.Second, "both targets up and one leader", func() bool {
		return p.scalar(t, `count(up{job="tenure"} == 1)`) == 2 && leaders() == 1
	})
	lead := p.query(t, `tenure_is_leader{key="prom"} == 1`)
	if len(lead) != 1 || procs[lead[0].Metric["instance"]] == nil {
		t.Fatalf("leader series = %+v; want one of %s, %s", lead, addrA, addrB)
	}
	first := lead[0].Metric["instance"]
	token := p.scalar(t, `max(tenure_fencing_token{key="prom"})`)
	t.Logf("Prometheus: %s leads with token %v", first, token)

	procs[first].Cmd.Process.Kill()
	killed := time.Now()
	var second string
	e2e.WaitFor(t, e2e.TTL+20*time.Second, "Prometheus to see the other contender lead", func() bool {
		if leaders() != 1 {
			return false
		}
		lead := p.query(t, `tenure_is_leader{key="prom"} == 1`)
		if len(lead) == 1 && lead[0].Metric["instance"] != first {
			second = lead[0].Metric["instance"]
			return true
		}
		return false
	})
	t.Logf("Prometheus saw %s lead %s after %s was killed", second, time.Since(killed).Round(10*time.Millisecond), first)
	if got := p.scalar(t, fmt.Sprintf(`tenure_fencing_token{key="prom",instance=%q}`, second)); got <= token {
		t.Errorf("new leader's tenure_fencing_token = %v; want > %v", got, token)
	}
	if got := p.scalar(t, fmt.Sprintf(`tenure_transitions_total{key="prom",reason="acquired",instance=%q}`, second)); got < 1 {
		t.Errorf(`new leader's tenure_transitions_total{reason="acquired"} = %v; want >= 1`, got)
	}
	if maxLeaders > 1 {
		t.Errorf("sum(tenure_is_leader) reached %v during the failover; want at most 1", maxLeaders)
	}
	if _, err := net.DialTimeout("tcp", first, time.Second); err == nil {
		t.Errorf("the killed contender %s still serves", first)
	}
}
