package prom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
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
// which compare adds from prom.Helps (so the help strings are checked too).
func compare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, prom.Helps[name].Help, name, prom.Helps[name].Type)
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

// touchAll gives every metric of m but the lease gauge at least one series.
func touchAll(m *prom.Metrics) {
	m.SetLeader("k", true)
	m.SetToken("k", 1)
	m.Transition("k", tenure.Elected)
	m.Transition("k", tenure.Resigned)
	m.ObserveRenew("k", time.Millisecond, nil)
	m.ObserveLeader("k", tenure.Grant{Key: "k", Holder: "node-2#ab", Token: 2}, true)
	m.FenceObserver("orders")(fence.Event{Err: &fence.StaleError{Presented: 1, Required: 2}})
	c := memory.New()
	_ = c.Close()
	_, _ = m.Instrument(c).Acquire(context.Background(), "k", "a", time.Second)
}

// Every metric has series once used, and the set passes the linter. The
// lease gauge needs a live term: an elector leads while the check runs.
func TestNewRegistersEveryMetric(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		m, reg := newMetrics(t)
		touchAll(m)
		e := newElector(t, c, m)
		errDone := errors.New("checked")
		terms := 0
		err := e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			if terms++; terms == 1 { // a first term that ends, for the leadership histogram
				return fmt.Errorf("write: %w", &fence.StaleError{Presented: 1, Required: 2})
			}
			for name := range prom.Helps {
				if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
					t.Errorf("GatherAndCount(%s) = %d, %v; want > 0 series", name, n, err)
				}
			}
			if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
				t.Errorf("GatherAndLint() = %v, %v; want no problems", problems, err)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
	})
}

func TestSetLeader(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetLeader("a", true)
	m.SetLeader("b", true)
	m.SetLeader("b", false)
	compare(t, reg, `
		tenure_is_leader{key="a"} 1
		tenure_is_leader{key="b"} 0
	`, "tenure_is_leader")
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

// Six kinds, five reasons: a step-down is a release.
func TestTransitionReasons(t *testing.T) {
	tests := []struct {
		kind tenure.TransitionKind
		want string
	}{
		{tenure.Elected, "acquired"},
		{tenure.Resigned, "released"},
		{tenure.SteppedDown, "released"},
		{tenure.Lost, "lost"},
		{tenure.Expired, "deadline"},
		{tenure.Fenced, "fenced"},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			m, reg := newMetrics(t)
			m.Transition("k", tc.kind)
			m.Transition("k", tc.kind)
			m.Transition("other", tc.kind)
			compare(t, reg, fmt.Sprintf(`
				tenure_transitions_total{key="k",reason=%[1]q} 2
				tenure_transitions_total{key="other",reason=%[1]q} 1
			`, tc.want), "tenure_transitions_total")
		})
	}
}

func TestObserveRenewResults(t *testing.T) {
	m, reg := newMetrics(t)
	before := float64(time.Now().Unix())
	m.ObserveRenew("k", 3*time.Millisecond, nil)
	m.ObserveRenew("k", 2*time.Second, errors.New("unreachable"))
	m.ObserveRenew("k", 20*time.Second, fmt.Errorf("renew: %w", tenure.ErrLost))
	m.ObserveRenew("bad", time.Second, errors.New("unreachable"))
	for _, tc := range []struct {
		result string
		want   float64
	}{{"ok", 1}, {"error", 1}, {"lost", 1}} {
		if got := value(t, reg, "tenure_renew_duration_seconds", map[string]string{"key": "k", "result": tc.result}); got != tc.want {
			t.Errorf("tenure_renew_duration_seconds_count{result=%s} = %v; want %v", tc.result, got, tc.want)
		}
	}
	if got := value(t, reg, "tenure_last_renew_timestamp_seconds", map[string]string{"key": "k"}); got < before {
		t.Errorf("tenure_last_renew_timestamp_seconds = %v; want >= %v (now)", got, before)
	}
	if n, _ := testutil.GatherAndCount(reg, "tenure_last_renew_timestamp_seconds"); n != 1 {
		t.Errorf("tenure_last_renew_timestamp_seconds has %d series; want 1 (a failed renewal sets none)", n)
	}
}

// The lease left is read from the live term at each scrape: a second of
// (virtual) time later it is a second less, with no renewal in between.
func TestLeaseRemainingAtScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		m, reg := newMetrics(t)
		e := newElector(t, c, m)
		errDone := errors.New("done")
		err := e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			first := value(t, reg, "tenure_lease_remaining_seconds", key)
			if want := term.Remaining().Seconds(); first != want || first <= 0 {
				t.Errorf("tenure_lease_remaining_seconds = %v; want %v (> 0)", first, want)
			}
			time.Sleep(time.Second) // less than the renew interval
			if got := value(t, reg, "tenure_lease_remaining_seconds", key); got != first-1 {
				t.Errorf("tenure_lease_remaining_seconds a second later = %v; want %v", got, first-1)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
		if got := value(t, reg, "tenure_lease_remaining_seconds", key); got != 0 {
			t.Errorf("tenure_lease_remaining_seconds after resigning = %v; want 0", got)
		}
	})
}

// leader_info follows the holder, one series per key; the time a key is
// seen free until a holder appears goes to the leaderless histogram; a
// term's length to the leadership histogram.
func TestLeaderInfoLeaderlessLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newMetrics(t)
		g := func(holder string, token uint64) tenure.Grant {
			return tenure.Grant{Key: "k", Holder: holder, Token: token}
		}
		m.ObserveLeader("k", g("a#1", 1), true)
		m.ObserveLeader("k", g("a#1", 1), true)
		compare(t, reg, `tenure_leader_info{holder="a",key="k"} 1`, "tenure_leader_info")
		m.ObserveLeader("k", tenure.Grant{}, false)
		time.Sleep(3 * time.Second)
		m.ObserveLeader("k", tenure.Grant{}, false) // still free: the clock keeps running
		time.Sleep(time.Second)
		m.ObserveLeader("k", g("b#2", 2), true)
		compare(t, reg, `tenure_leader_info{holder="b",key="k"} 1`, "tenure_leader_info")
		compare(t, reg, `
			tenure_leaderless_seconds_bucket{key="k",le="0.01"} 0
			tenure_leaderless_seconds_bucket{key="k",le="0.05"} 0
			tenure_leaderless_seconds_bucket{key="k",le="0.1"} 0
			tenure_leaderless_seconds_bucket{key="k",le="0.25"} 0
			tenure_leaderless_seconds_bucket{key="k",le="0.5"} 0
			tenure_leaderless_seconds_bucket{key="k",le="1"} 0
			tenure_leaderless_seconds_bucket{key="k",le="2.5"} 0
			tenure_leaderless_seconds_bucket{key="k",le="5"} 1
			tenure_leaderless_seconds_bucket{key="k",le="10"} 1
			tenure_leaderless_seconds_bucket{key="k",le="30"} 1
			tenure_leaderless_seconds_bucket{key="k",le="60"} 1
			tenure_leaderless_seconds_bucket{key="k",le="300"} 1
			tenure_leaderless_seconds_bucket{key="k",le="+Inf"} 1
			tenure_leaderless_seconds_sum{key="k"} 4
			tenure_leaderless_seconds_count{key="k"} 1
		`, "tenure_leaderless_seconds")

		// This node's own term: 90s of leading, then a lost grant.
		c := memory.New()
		defer c.Close()
		e := newElector(t, c, m)
		errDone := errors.New("done")
		terms := 0
		_ = e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			if terms++; terms > 1 {
				return errDone
			}
			time.Sleep(90 * time.Second)
			c.JumpClock(time.Minute) // the lease expires on the coordinator's clock
			<-ctx.Done()
			return ctx.Err()
		})
		if got := value(t, reg, "tenure_leadership_duration_seconds", key); got != 2 {
			t.Errorf("tenure_leadership_duration_seconds_count = %v; want 2 terms", got)
		}
		compare(t, reg, `
			tenure_transitions_total{key="scheduler",reason="acquired"} 2
			tenure_transitions_total{key="scheduler",reason="lost"} 1
			tenure_transitions_total{key="scheduler",reason="released"} 1
		`, "tenure_transitions_total")
		if n, _ := testutil.GatherAndCount(reg, "tenure_leader_info"); n != 1 {
			t.Errorf("tenure_leader_info has %d series after the last term ended; want 1 (key k only)", n)
		}
	})
}

func TestStaleRejections(t *testing.T) {
	m, reg := newMetrics(t)
	r := fence.NewRegister[string](fence.WithObserver(m.FenceObserver("orders")))
	for _, tok := range []uint64{3, 5, 4, 0, 5, 2} { // 4 and 2 stale, 0 missing
		_ = r.Write(tok, "v")
	}
	stale := &fence.StaleError{Presented: 1, Required: 2}
	if err := m.ObserveGuard("jobs", stale); err != stale {
		t.Errorf("ObserveGuard() = %v; want the error it was given", err)
	}
	if err := m.ObserveGuard("jobs", errors.New("timeout")); err == nil {
		t.Error("ObserveGuard(timeout) = nil; want the error it was given")
	}
	compare(t, reg, `
		tenure_stale_rejections_total{resource="jobs"} 1
		tenure_stale_rejections_total{resource="orders"} 2
	`, "tenure_stale_rejections_total")
}

// Failures are counted by operation; a key held by another holder and a
// lost grant are outcomes, not errors.
func TestInstrumentCountsErrors(t *testing.T) {
	m, reg := newMetrics(t)
	mem := memory.New()
	c := m.Instrument(mem)
	ctx := context.Background()
	g, err := c.Acquire(ctx, "k", "a#1", time.Minute)
	if err != nil {
		t.Fatalf("Acquire() error = %v", err)
	}
	if _, err := c.Acquire(ctx, "k", "b#2", time.Minute); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("Acquire(held) error = %v; want ErrHeld", err)
	}
	mem.JumpClock(2 * time.Minute) // the lease expires on the coordinator's clock
	if _, err := c.Renew(ctx, g); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("Renew(expired) error = %v; want ErrLost", err)
	}
	// The expired lease is not listed, and a List that succeeds is not counted.
	if gs, err := c.List(ctx, ""); err != nil || len(gs) != 0 {
		t.Fatalf("List() after expiry = %v, %v; want nothing", gs, err)
	}
	_ = mem.Close()
	if _, err := c.Acquire(ctx, "k", "a#1", time.Minute); !errors.Is(err, tenure.ErrClosed) {
		t.Fatalf("Acquire(closed) error = %v; want ErrClosed", err)
	}
	if _, _, err := c.Leader(ctx, "k"); err == nil {
		t.Fatal("Leader(closed) error = nil")
	}
	compare(t, reg, `
		tenure_coordinator_errors_total{op="acquire"} 1
		tenure_coordinator_errors_total{op="leader"} 1
	`, "tenure_coordinator_errors_total")
}

func TestOptions(t *testing.T) {
	m, reg := newMetrics(t,
		prom.WithNamespace("app"),
		prom.WithConstLabels(prometheus.Labels{"team": "infra", "zone": "x"}),
		prom.WithConstLabels(prometheus.Labels{"zone": "eu-1"}), // a later value wins
	)
	m.SetLeader("k", true)
	want := `
		# HELP app_is_leader ` + prom.Helps["tenure_is_leader"].Help + `
		# TYPE app_is_leader gauge
		app_is_leader{key="k",team="infra",zone="eu-1"} 1
	`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "app_is_leader"); err != nil {
		t.Fatalf("GatherAndCompare(app_is_leader):\n%v", err)
	}
	if n, err := testutil.GatherAndCount(reg, "tenure_is_leader"); err != nil || n != 0 {
		t.Fatalf("GatherAndCount(tenure_is_leader) = %d, %v; want 0 with namespace app", n, err)
	}
}

// Options passed later must not change what an earlier New registered.
func TestConstLabelsCopied(t *testing.T) {
	labels := prometheus.Labels{"team": "infra"}
	m, reg := newMetrics(t, prom.WithConstLabels(labels))
	labels["team"] = "changed"
	m.SetLeader("k", true)
	if got := value(t, reg, "tenure_is_leader", map[string]string{"team": "infra", "key": "k"}); got != 1 {
		t.Fatalf("tenure_is_leader{team=infra} = %v; want 1", got)
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
		{"const label reason", []prom.Option{prom.WithConstLabels(prometheus.Labels{"reason": "x"})}, `const label "reason" is reserved`},
		{"const label holder", []prom.Option{prom.WithConstLabels(prometheus.Labels{"holder": "x"})}, `const label "holder" is reserved`},
		{"const label reserved prefix", []prom.Option{prom.WithConstLabels(prometheus.Labels{"__name": "x"})}, `const label "__name"`},
		{"const label bad name", []prom.Option{prom.WithConstLabels(prometheus.Labels{"team-id": "x"})}, `const label "team-id"`},
		{"const label bad value", []prom.Option{prom.WithConstLabels(prometheus.Labels{"team": "\xff"})}, `const label "team": value`},
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
		if !errors.As(err, &are) || !strings.Contains(err.Error(), "tenure_is_leader") {
			t.Fatalf("second New() error = %v; want a prometheus.AlreadyRegisteredError naming tenure_is_leader", err)
		}
		if _, err := prom.New(reg, prom.WithNamespace("other")); err != nil {
			t.Fatalf("New(WithNamespace(other)) error = %v; want nil", err)
		}
	})
	t.Run("rolled back on conflict", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		// A collector identical to one New registers, in the middle of
		// the list: New fails on it after registering the first ones.
		blocker := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenure_stale_rejections_total", Help: prom.Helps["tenure_stale_rejections_total"].Help,
		}, []string{"resource"})
		reg.MustRegister(blocker)
		_, err := prom.New(reg)
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) || !strings.Contains(err.Error(), "prom: register tenure_stale_rejections_total") {
			t.Fatalf("New() error = %v; want an AlreadyRegisteredError naming tenure_stale_rejections_total", err)
		}
		// Nothing New registered before the conflict may stay registered.
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
	}
	// is_leader, token, 2 transitions, renew histogram, last renew.
	if got := m.Forget("gone"); got != 6 {
		t.Errorf("Forget(gone) = %d; want 6 series", got)
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
	if got := value(t, reg, "tenure_is_leader", map[string]string{"key": "kept"}); got != 1 {
		t.Errorf("tenure_is_leader{key=kept} = %v; want 1 (untouched by Forget)", got)
	}
}

// Metrics are called from every Elector's goroutines at once; run with -race.
func TestConcurrentUse(t *testing.T) {
	m, reg := newMetrics(t)
	const goroutines, calls = 8, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", g%2)
			for i := range calls {
				m.SetLeader(key, i%2 == 0)
				m.SetToken(key, uint64(i))
				m.Transition(key, tenure.Elected)
				m.ObserveRenew(key, time.Millisecond, nil)
				m.ObserveLeader(key, tenure.Grant{Key: key, Holder: fmt.Sprintf("n%d#1", i%3), Token: 1}, i%4 != 0)
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
		if n, _ := testutil.GatherAndCount(reg, "tenure_leader_info"); n > 2 {
			t.Errorf("tenure_leader_info has %d series; want at most one per key", n)
		}
	}
}
