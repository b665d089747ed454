package prom_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/prom"
)

// newMetrics returns Metrics registered on a fresh pedantic registry, which
// checks every gathered metric against its description.
func newMetrics(t *testing.T, opts ...prom.Option) (*prom.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := prom.New(reg, opts...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return m, reg
}

// compare checks the series of the named metrics gathered from reg against
// want: lines in the text exposition format, without HELP and TYPE lines,
// which compare adds from helps (so the help strings are checked too).
func compare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, helps[name].help, name, helps[name].typ)
		for line := range strings.Lines(want) {
			line = strings.TrimSpace(line)
			series, _, _ := strings.Cut(line, "{")
			switch series {
			case name, name + "_bucket", name + "_sum", name + "_count":
				b.WriteString(line + "\n")
			}
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()), names...); err != nil {
		t.Fatalf("GatherAndCompare(%v):\n%v", names, err)
	}
}

// helps are the help strings and types of the default-namespace metrics:
// the comparison checks them too, so a change of wording shows up here.
var helps = map[string]struct{ help, typ string }{
	"tenure_leader": {
		"Whether this node leads the key: 1 while it holds a live term, 0 otherwise.", "gauge"},
	"tenure_fencing_token": {
		"Fencing token of this node's current or most recent term on the key; it grows with every grant, so a change marks a new term.", "gauge"},
	"tenure_transitions_total": {
		"Leadership transitions of this node on the key, by kind: elected, resigned (released on purpose), lost (the coordinator expired or superseded the grant), expired (the local deadline passed before a renewal succeeded), fenced (a resource rejected the token), stepped-down (user code ended the term).", "counter"},
	"tenure_renew_duration_seconds": {
		"Duration of lease renewal attempts on the key, successful or failed; slow renewals eat into the safe lease.", "histogram"},
	"tenure_renew_failures_total": {
		"Lease renewal attempts on the key that failed (retried until the local deadline, or the grant was lost).", "counter"},
	"tenure_fenced_rejections_total": {
		"Times a fenced resource rejected this node's token on the key as stale, proving that another node had taken over; each made the node step down.", "counter"},
}

// value returns the value of the series of name whose labels include want,
// failing the test unless exactly one series matches. For a histogram it
// returns the sample count.
func value(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	var found []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series; want 1", name, want, len(found))
	}
	m := found[0]
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s%v: unexpected metric type", name, want)
	return 0
}

func TestNewRegistersEveryMetric(t *testing.T) {
	m, reg := newMetrics(t)
	// Vectors without children expose nothing; touch every metric once.
	m.SetLeader("k", true)
	m.SetToken("k", 1)
	m.Transition("k", tenure.Elected)
	m.ObserveRenew("k", time.Millisecond, nil)
	m.FencedRejection("k")
	for name := range helps {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("GatherAndCount(%s) = %d, %v; want > 0 series", name, n, err)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("GatherAndLint() = %v, %v; want no problems", problems, err)
	}
}

func TestSetLeader(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetLeader("a", true)
	m.SetLeader("b", true)
	m.SetLeader("b", false)
	compare(t, reg, `
		tenure_leader{key="a"} 1
		tenure_leader{key="b"} 0
	`, "tenure_leader")
	m.SetLeader("a", false)
	if got := value(t, reg, "tenure_leader", map[string]string{"key": "a"}); got != 0 {
		t.Fatalf("tenure_leader{key=a} after SetLeader(false) = %v; want 0", got)
	}
}

func TestSetToken(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetToken("a", 7)
	m.SetToken("a", 42)
	m.SetToken("orders/17", 1<<40)
	compare(t, reg, `
		tenure_fencing_token{key="a"} 42
		tenure_fencing_token{key="orders/17"} 1.099511627776e+12
	`, "tenure_fencing_token")
}

func TestTransition(t *testing.T) {
	tests := []struct {
		kind tenure.TransitionKind
		want string
	}{
		{tenure.Elected, "elected"},
		{tenure.Resigned, "resigned"},
		{tenure.Lost, "lost"},
		{tenure.Expired, "expired"},
		{tenure.Fenced, "fenced"},
		{tenure.SteppedDown, "stepped-down"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			m, reg := newMetrics(t)
			m.Transition("k", tc.kind)
			m.Transition("k", tc.kind)
			m.Transition("other", tc.kind)
			compare(t, reg, fmt.Sprintf(`
				tenure_transitions_total{key="k",kind=%[1]q} 2
				tenure_transitions_total{key="other",kind=%[1]q} 1
			`, tc.want), "tenure_transitions_total")
		})
	}
}

func TestObserveRenew(t *testing.T) {
	m, reg := newMetrics(t)
	m.ObserveRenew("k", 3*time.Millisecond, nil)
	m.ObserveRenew("k", 2*time.Second, errors.New("unreachable"))
	m.ObserveRenew("k", 20*time.Second, errors.New("timeout"))
	m.ObserveRenew("ok", time.Millisecond, nil)
	compare(t, reg, `
		tenure_renew_duration_seconds_bucket{key="k",le="0.001"} 0
		tenure_renew_duration_seconds_bucket{key="k",le="0.0025"} 0
		tenure_renew_duration_seconds_bucket{key="k",le="0.005"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.01"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.025"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.05"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.1"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.25"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="0.5"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="1"} 1
		tenure_renew_duration_seconds_bucket{key="k",le="2.5"} 2
		tenure_renew_duration_seconds_bucket{key="k",le="5"} 2
		tenure_renew_duration_seconds_bucket{key="k",le="10"} 2
		tenure_renew_duration_seconds_bucket{key="k",le="+Inf"} 3
		tenure_renew_duration_seconds_sum{key="k"} 22.003
		tenure_renew_duration_seconds_count{key="k"} 3
		tenure_renew_duration_seconds_bucket{key="ok",le="0.001"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.0025"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.005"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.01"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.025"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.05"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.1"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.25"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="0.5"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="1"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="2.5"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="5"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="10"} 1
		tenure_renew_duration_seconds_bucket{key="ok",le="+Inf"} 1
		tenure_renew_duration_seconds_sum{key="ok"} 0.001
		tenure_renew_duration_seconds_count{key="ok"} 1
		tenure_renew_failures_total{key="k"} 2
		tenure_renew_failures_total{key="ok"} 0
	`, "tenure_renew_duration_seconds", "tenure_renew_failures_total")
}

func TestFencedRejection(t *testing.T) {
	m, reg := newMetrics(t)
	m.FencedRejection("k")
	m.FencedRejection("k")
	m.FencedRejection("j")
	compare(t, reg, `
		tenure_fenced_rejections_total{key="j"} 1
		tenure_fenced_rejections_total{key="k"} 2
	`, "tenure_fenced_rejections_total")
}

func TestOptions(t *testing.T) {
	m, reg := newMetrics(t,
		prom.WithNamespace("app"),
		prom.WithConstLabels(prometheus.Labels{"holder": "node-1", "zone": "x"}),
		prom.WithConstLabels(prometheus.Labels{"zone": "eu-1"}), // a later value wins
	)
	m.SetLeader("k", true)
	m.Transition("k", tenure.SteppedDown)
	want := `
		# HELP app_leader Whether this node leads the key: 1 while it holds a live term, 0 otherwise.
		# TYPE app_leader gauge
		app_leader{holder="node-1",key="k",zone="eu-1"} 1
	`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "app_leader"); err != nil {
		t.Fatalf("GatherAndCompare(app_leader):\n%v", err)
	}
	got := value(t, reg, "app_transitions_total", map[string]string{"holder": "node-1", "zone": "eu-1", "key": "k", "kind": "stepped-down"})
	if got != 1 {
		t.Fatalf("app_transitions_total{kind=stepped-down} = %v; want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "tenure_leader"); err != nil || n != 0 {
		t.Fatalf("GatherAndCount(tenure_leader) = %d, %v; want 0 with namespace app", n, err)
	}
}

// Options passed later must not change what an earlier New registered.
func TestConstLabelsCopied(t *testing.T) {
	labels := prometheus.Labels{"holder": "node-1"}
	m, reg := newMetrics(t, prom.WithConstLabels(labels))
	labels["holder"] = "changed"
	m.SetLeader("k", true)
	if got := value(t, reg, "tenure_leader", map[string]string{"holder": "node-1", "key": "k"}); got != 1 {
		t.Fatalf("tenure_leader{holder=node-1} = %v; want 1", got)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []prom.Option
		want string // in the error
	}{
		{"empty namespace", []prom.Option{prom.WithNamespace("")}, "namespace must not be empty"},
		{"namespace with dash", []prom.Option{prom.WithNamespace("my-app")}, `namespace "my-app"`},
		{"namespace with leading digit", []prom.Option{prom.WithNamespace("1app")}, `namespace "1app"`},
		{"const label key", []prom.Option{prom.WithConstLabels(prometheus.Labels{"key": "x"})}, `const label "key" is reserved`},
		{"const label kind", []prom.Option{prom.WithConstLabels(prometheus.Labels{"kind": "x"})}, `const label "kind" is reserved`},
		{"const label reserved prefix", []prom.Option{prom.WithConstLabels(prometheus.Labels{"__name": "x"})}, `const label "__name"`},
		{"const label bad name", []prom.Option{prom.WithConstLabels(prometheus.Labels{"holder-id": "x"})}, `const label "holder-id"`},
		{"const label bad value", []prom.Option{prom.WithConstLabels(prometheus.Labels{"holder": "\xff"})}, `const label "holder": value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m, err := prom.New(reg, tc.opts...)
			if err == nil {
				t.Fatalf("New() = %v, nil; want an error containing %q", m, tc.want)
			}
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Errorf("New() error = %v; want it to match tenure.ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New() error = %q; want it to contain %q", err, tc.want)
			}
			if mfs, _ := reg.Gather(); len(mfs) != 0 {
				t.Errorf("registry has %d metric families after a failed New; want 0", len(mfs))
			}
		})
	}
	if _, err := prom.New(nil); !errors.Is(err, tenure.ErrInvalidConfig) {
		t.Errorf("New(nil) error = %v; want tenure.ErrInvalidConfig", err)
	}
}

func TestNewRegistrationConflict(t *testing.T) {
	t.Run("registered twice", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		if _, err := prom.New(reg); err != nil {
			t.Fatalf("first New() error = %v", err)
		}
		_, err := prom.New(reg)
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			t.Fatalf("second New() error = %v; want a prometheus.AlreadyRegisteredError", err)
		}
		if !strings.Contains(err.Error(), "tenure_leader") {
			t.Errorf("second New() error = %q; want it to name tenure_leader", err)
		}
		// Another namespace on the same registry is fine.
		if _, err := prom.New(reg, prom.WithNamespace("other")); err != nil {
			t.Fatalf("New(WithNamespace(other)) error = %v; want nil", err)
		}
	})

	t.Run("name taken with other labels", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "tenure_fenced_rejections_total", Help: "Someone else's."}))
		_, err := prom.New(reg)
		if err == nil || !strings.Contains(err.Error(), "prom: register tenure_fenced_rejections_total") {
			t.Fatalf("New() error = %v; want an error naming tenure_fenced_rejections_total", err)
		}
	})

	t.Run("rolled back on conflict", func(t *testing.T) {
		// A collector identical to one New registers, in the middle of the
		// list: New fails on it after registering the first three.
		reg := prometheus.NewPedanticRegistry()
		blocker := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_renew_failures_total", Help: helps["tenure_renew_failures_total"].help,
		}, []string{"key"})
		reg.MustRegister(blocker)
		_, err := prom.New(reg)
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) || !strings.Contains(err.Error(), "tenure_renew_failures_total") {
			t.Fatalf("New() error = %v; want an AlreadyRegisteredError naming tenure_renew_failures_total", err)
		}
		// Nothing New registered before the conflict may stay registered:
		// once the blocker is gone, New succeeds.
		if !reg.Unregister(blocker) {
			t.Fatal("Unregister(blocker) = false")
		}
		if _, err := prom.New(reg); err != nil {
			t.Fatalf("New() after removing the blocker error = %v; want nil (leftovers of the failed New?)", err)
		}
	})
}

func TestForget(t *testing.T) {
	m, reg := newMetrics(t)
	for _, key := range []string{"gone", "kept"} {
		m.SetLeader(key, true)
		m.SetToken(key, 3)
		m.Transition(key, tenure.Elected)
		m.Transition(key, tenure.Resigned)
		m.ObserveRenew(key, time.Millisecond, nil)
		m.FencedRejection(key)
	}
	// leader, token, 2 transitions, histogram, failures, rejections.
	if got := m.Forget("gone"); got != 7 {
		t.Errorf("Forget(gone) = %d; want 7 series", got)
	}
	if got := m.Forget("gone"); got != 0 {
		t.Errorf("second Forget(gone) = %d; want 0", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for _, lp := range metric.GetLabel() {
				if lp.GetName() == "key" && lp.GetValue() == "gone" {
					t.Errorf("%s still has a series for the forgotten key", mf.GetName())
				}
			}
		}
	}
	if got := value(t, reg, "tenure_leader", map[string]string{"key": "kept"}); got != 1 {
		t.Errorf("tenure_leader{key=kept} = %v; want 1 (untouched by Forget)", got)
	}
}

// Metrics are called from every Elector's goroutines at once; run with -race.
func TestConcurrentUse(t *testing.T) {
	m, reg := newMetrics(t)
	const goroutines, calls = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", g%2)
			for i := range calls {
				m.SetLeader(key, i%2 == 0)
				m.SetToken(key, uint64(i))
				m.Transition(key, tenure.Elected)
				m.ObserveRenew(key, time.Millisecond, nil)
				m.FencedRejection(key)
				if i%50 == 0 { // a scrape during the updates
					if _, err := reg.Gather(); err != nil {
						t.Errorf("Gather() error = %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, key := range []string{"k0", "k1"} {
		want := float64(goroutines / 2 * calls)
		if got := value(t, reg, "tenure_transitions_total", map[string]string{"key": key}); got != want {
			t.Errorf("tenure_transitions_total{key=%s} = %v; want %v", key, got, want)
		}
		if got := value(t, reg, "tenure_renew_duration_seconds", map[string]string{"key": key}); got != want {
			t.Errorf("tenure_renew_duration_seconds_count{key=%s} = %v; want %v", key, got, want)
		}
		if got := value(t, reg, "tenure_fenced_rejections_total", map[string]string{"key": key}); got != want {
			t.Errorf("tenure_fenced_rejections_total{key=%s} = %v; want %v", key, got, want)
		}
	}
}
