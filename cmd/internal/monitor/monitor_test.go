package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/prom"
)

// newMonitor returns a Monitor on c with fresh Prometheus metrics; cfg's
// Coordinator, Metrics and Gatherer are filled in. It runs until the test
// ends.
func newMonitor(t *testing.T, c tenure.Coordinator, cfg monitor.Config) *monitor.Monitor {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := prom.New(reg)
	if err != nil {
		t.Fatalf("prom.New() error = %v", err)
	}
	cfg.Coordinator, cfg.Metrics, cfg.Gatherer = c, m, reg
	mon, err := monitor.New(cfg)
	if err != nil {
		t.Fatalf("monitor.New() error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = mon.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return mon
}

// get serves path from h and returns the status code and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// status decodes /status from h.
func status(t *testing.T, h http.Handler) monitor.Status {
	t.Helper()
	code, body := get(t, h, "/status")
	var s monitor.Status
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil {
		t.Fatalf("/status = %d, %v:\n%s", code, err, body)
	}
	return s
}

// elector returns an Elector for key "jobs" held as name#name.
func elector(t *testing.T, c tenure.Coordinator, name string, m tenure.Metrics) *tenure.Elector {
	t.Helper()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.Instance, cfg.Metrics = "jobs", name, name, m
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatalf("NewElector() error = %v", err)
	}
	return e
}

// An instance's own terms are shown with their true reasons, /leader
// follows its role, and the holder that takes over is observed.
func TestOwnTermsAndObservedHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		mon := newMonitor(t, c, monitor.Config{Keys: []string{"jobs"}, Identity: "alpha#alpha"})
		h := mon.Handler()
		if code, _ := get(t, h, "/leader"); code != http.StatusServiceUnavailable {
			t.Errorf("/leader before leading = %d; want 503", code)
		}
		errDone := errors.New("done")
		var token uint64
		err := elector(t, c, "alpha", mon).Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			token = term.Token()
			time.Sleep(time.Second)
			if code, body := get(t, h, "/leader"); code != http.StatusOK || body != "leader\n" {
				t.Errorf("/leader while leading = %d %q; want 200 leader", code, body)
			}
			s := status(t, h)
			if s.Role != "leader" || len(s.Keys) != 1 {
				t.Fatalf("/status while leading: role %q, %d keys; want leader, 1", s.Role, len(s.Keys))
			}
			k := s.Keys[0]
			want := term.Remaining().Milliseconds()
			if !k.Held || !k.Mine || k.Holder != "alpha" || k.Token != token || k.TTLLeftMs == nil || *k.TTLLeftMs != want {
				t.Errorf("/status key = %+v (lease %v); want held by alpha (mine) with token %d and %d ms left", k, k.TTLLeftMs, token, want)
			}
			if code, body := get(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(body, `tenure_is_leader{key="jobs"} 1`) {
				t.Errorf("/metrics while leading = %d without tenure_is_leader 1:\n%s", code, body)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() {
			_ = elector(t, c, "beta", nil).Run(ctx, func(ctx context.Context, term *tenure.Term) error {
				<-ctx.Done()
				return ctx.Err()
			})
		})
		defer func() { cancel(); wg.Wait() }()
		time.Sleep(2 * time.Second)

		if code, _ := get(t, h, "/leader"); code != http.StatusServiceUnavailable {
			t.Errorf("/leader after resigning = %d; want 503", code)
		}
		if code, _ := get(t, h, "/health"); code != http.StatusOK {
			t.Errorf("/health as a follower = %d; want 200", code)
		}
		s := status(t, h)
		k := s.Keys[0]
		if s.Role != "follower" || !k.Held || k.Mine || k.Holder != "beta" || k.Token <= token || k.TTLLeftMs == nil {
			t.Errorf("/status after the handover: role %q, key %+v; want follower, held by beta with a token > %d and the lease left (memory lists it)", s.Role, k, token)
		}
		var got []string
		for _, e := range s.Transitions {
			got = append(got, e.Reason+" "+e.Holder+" "+e.Source)
		}
		want := []string{"acquired beta observed", "released alpha self", "acquired alpha self"}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("/status transitions = %q; want %q", got, want)
		}
		if _, body := get(t, h, "/metrics"); !strings.Contains(body, `tenure_leader_info{holder="beta",key="jobs"} 1`) {
			t.Errorf("/metrics without tenure_leader_info for beta:\n%s", body)
		}

		// beta resigns and alpha takes over before the next poll: beta's
		// release is recorded when alpha's term begins.
		cancel()
		wg.Wait()
		err = elector(t, c, "alpha", mon).Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			s := status(t, h)
			got = got[:0]
			for _, e := range s.Transitions[:2] {
				got = append(got, e.Reason+" "+e.Holder+" "+e.Source)
			}
			want := []string{"acquired alpha self", "released beta observed"}
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("/status transitions = %q; want %q first", got, want)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("second Run() = %v; want %v", err, errDone)
		}
	})
}

// The page and its assets are served from the binary.
func TestPageServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		h := newMonitor(t, c, monitor.Config{Keys: []string{"jobs"}}).Handler()
		for _, tc := range []struct{ path, want string }{
			{"/", `<script src="static/app.js">`},
			{"/static/app.js", "function poll()"},
			{"/static/style.css", "--green"},
		} {
			if code, body := get(t, h, tc.path); code != http.StatusOK || !strings.Contains(body, tc.want) {
				t.Errorf("GET %s = %d without %q", tc.path, code, tc.want)
			}
		}
		if code, _ := get(t, h, "/nothing"); code != http.StatusNotFound {
			t.Errorf("GET /nothing = %d; want 404", code)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := memory.New()
	defer c.Close()
	reg := prometheus.NewRegistry()
	m, _ := prom.New(reg)
	tests := []struct {
		name string
		cfg  monitor.Config
		want []string
	}{
		{"nothing", monitor.Config{}, []string{"Config.Coordinator", "Config.Metrics", "Config.Gatherer"}},
		{"bad key", monitor.Config{Coordinator: c, Metrics: m, Gatherer: reg, Keys: []string{"/x"}}, []string{"Config.Keys", `"/x"`}},
		{"bad prefix", monitor.Config{Coordinator: c, Metrics: m, Gatherer: reg, Keys: []string{"x"}, Prefix: "a b"}, []string{"Config.Prefix"}},
		{"negative poll", monitor.Config{Coordinator: c, Metrics: m, Gatherer: reg, Keys: []string{"x"}, Poll: -1}, []string{"Config.Poll"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := monitor.New(tc.cfg)
			if !errors.Is(err, tenure.ErrInvalidConfig) {
				t.Fatalf("New() error = %v; want tenure.ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New() error = %q; want it to name %s", err, w)
				}
			}
		})
	}
}
