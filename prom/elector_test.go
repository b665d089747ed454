package prom_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/prom"
)

const holder = "node-1"

// newElector returns an Elector for key "scheduler" on c reporting to m.
func newElector(t *testing.T, c tenure.Coordinator, m tenure.Metrics) *tenure.Elector {
	t.Helper()
	cfg := tenure.DefaultConfig()
	cfg.Key = "scheduler"
	cfg.Holder = holder
	cfg.Metrics = m
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatalf("NewElector() error = %v", err)
	}
	return e
}

// key selects the series of the elector's key, and kind a transition kind.
var key = map[string]string{"key": "scheduler"}

func reason(r string) map[string]string { return map[string]string{"key": "scheduler", "reason": r} }

// A real Elector on the memory coordinator: elected, renews while leading,
// resigns when its function returns.
func TestElectorElectedRenewResigned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.New(reg)
		if err != nil {
			t.Fatalf("New() error = %v", err)
		}
		e := newElector(t, c, m)

		errDone := errors.New("work done")
		var token uint64
		err = e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			token = term.Token()
			if got := value(t, reg, "tenure_is_leader", key); got != 1 {
				t.Errorf("tenure_is_leader while leading = %v; want 1", got)
			}
			if got := value(t, reg, "tenure_fencing_token", key); got != float64(token) {
				t.Errorf("tenure_fencing_token while leading = %v; want %d", got, token)
			}
			if got := value(t, reg, "tenure_transitions_total", reason("acquired")); got != 1 {
				t.Errorf(`tenure_transitions_total{reason="acquired"} while leading = %v; want 1`, got)
			}
			time.Sleep(10 * time.Second) // renewals every TTL/3
			if got := value(t, reg, "tenure_renew_duration_seconds", key); got == 0 {
				t.Error("tenure_renew_duration_seconds_count after 10s of leading = 0; want > 0")
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
		if got := value(t, reg, "tenure_is_leader", key); got != 0 {
			t.Errorf("tenure_is_leader after resigning = %v; want 0", got)
		}
		if got := value(t, reg, "tenure_fencing_token", key); got != float64(token) {
			t.Errorf("tenure_fencing_token after resigning = %v; want the last term's %d", got, token)
		}
		if got := value(t, reg, "tenure_transitions_total", reason("released")); got != 1 {
			t.Errorf(`tenure_transitions_total{reason="released"} = %v; want 1`, got)
		}
		// 10s of leading at TTL/3 = 3.33s: three renewals, all successful
		// and instant on virtual time.
		if got := value(t, reg, "tenure_renew_duration_seconds", key); got != 3 {
			t.Errorf("tenure_renew_duration_seconds_count = %v; want 3", got)
		}
		if n, _ := testutil.GatherAndCount(reg, "tenure_renew_duration_seconds"); n != 1 {
			t.Errorf("tenure_renew_duration_seconds has %d series; want 1 (result ok only)", n)
		}
		compare(t, reg, `
			tenure_transitions_total{key="scheduler",reason="acquired"} 1
			tenure_transitions_total{key="scheduler",reason="released"} 1
		`, "tenure_transitions_total")
	})
}

// A resource rejecting the token makes the elector step down: a fenced
// transition and a fenced rejection; the next term resigns.
func TestElectorFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.New(reg)
		if err != nil {
			t.Fatalf("New() error = %v", err)
		}
		e := newElector(t, c, m)

		errDone := errors.New("work done")
		terms := 0
		err = e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			terms++
			if terms == 1 {
				return fmt.Errorf("write with token %d: %w", term.Token(), tenure.ErrStaleToken)
			}
			return errDone
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
		compare(t, reg, `
			tenure_transitions_total{key="scheduler",reason="acquired"} 2
			tenure_transitions_total{key="scheduler",reason="fenced"} 1
			tenure_transitions_total{key="scheduler",reason="released"} 1
			tenure_fencing_token{key="scheduler"} 2
			tenure_is_leader{key="scheduler"} 0
		`, "tenure_transitions_total", "tenure_fenced_rejections_total", "tenure_fencing_token", "tenure_is_leader")
	})
}

// Cut off from the coordinator, the leader's renewals fail until its local
// deadline passes: failures are counted and the term expires.
func TestElectorRenewFailuresExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.New(reg)
		if err != nil {
			t.Fatalf("New() error = %v", err)
		}
		e := newElector(t, c, m)

		errDone := errors.New("work done")
		terms := 0
		err = e.Run(t.Context(), func(ctx context.Context, term *tenure.Term) error {
			terms++
			if terms > 1 {
				return errDone
			}
			c.Partition(holder)
			<-ctx.Done()    // the local deadline
			synctest.Wait() // the elector has reported the end of the term
			if got := value(t, reg, "tenure_is_leader", key); got != 0 {
				t.Errorf("tenure_is_leader after the local deadline = %v; want 0", got)
			}
			c.Heal(holder)
			return ctx.Err()
		})
		if !errors.Is(err, errDone) {
			t.Fatalf("Run() = %v; want %v", err, errDone)
		}
		failed := map[string]string{"key": "scheduler", "result": "error"}
		if got := value(t, reg, "tenure_renew_duration_seconds", failed); got == 0 {
			t.Error(`tenure_renew_duration_seconds_count{result="error"} after a partition = 0; want > 0`)
		}
		compare(t, reg, `
			tenure_transitions_total{key="scheduler",reason="acquired"} 2
			tenure_transitions_total{key="scheduler",reason="deadline"} 1
			tenure_transitions_total{key="scheduler",reason="released"} 1
		`, "tenure_transitions_total")
	})
}
