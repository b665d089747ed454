package tenure_test

// Regression test of an adversary's finding: a Term does not count a host
// suspend of up to 50ms (lease.go suspendNoise), while Config.Validate
// accepted a 10ms Margin: a 40ms suspend 20ms before the deadline let a's
// term act for 20ms after the coordinator had granted the key to b.
// Validate now requires Margin ≥ MinMargin; if it accepts a smaller one
// again, the schedule runs and the oracle judges it.

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
)

// TestShortSuspendSmallMargin: a 10ms Margin must be refused,
// naming MinMargin and what the margin would lose; were it accepted, a
// 40ms suspend 20ms before a's deadline, the coordinator's clock running
// on, must still leave no act of a unbacked. The largest suspend left
// uncounted (MinMargin) with the least margin (MinMargin) is clean.
func TestShortSuspendSmallMargin(t *testing.T) {
	const margin = 10 * time.Millisecond
	cfg := testConfig("a")
	cfg.Margin, cfg.MaxDrift = margin, 0
	err := cfg.Validate()
	if err == nil {
		t.Errorf("Config.Validate() with Margin %s = nil; want it refused (MinMargin %s)", margin, timing.MinMargin)
		synctest.Test(t, func(t *testing.T) {
			shortSuspendNearDeadline(t, margin, 40*time.Millisecond).check(t)
		})
	} else if want := "at least 50ms"; !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "40ms past its lease") {
		t.Errorf("Config.Validate() with Margin %s = %v; want ErrInvalidConfig saying %q and what the margin would lose (40ms past its lease)", margin, err, want)
	}
	synctest.Test(t, func(t *testing.T) {
		shortSuspendNearDeadline(t, timing.MinMargin, timing.MinMargin).check(t)
	})
}
