package cli

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/limits"
	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

// checkTiming checks --ttl, --margin and --max-drift together, as
// tenure.Config.Validate does (a margin of at least timing.MinMargin), but
// says it in the flags the user typed and names the smallest --ttl that
// works with the margin and drift given, and is at least floor (the
// shortest --ttl the command accepts; it refuses a shorter one itself).
func checkTiming(cmd *cobra.Command, ttl, margin time.Duration, drift float64, floor time.Duration) error {
	switch {
	case ttl <= 0:
		return usageError("%s %s: must be positive, as in --ttl 10s", flagRef(cmd, "ttl"), ttl)
	case ttl > limits.MaxTTL:
		return usageError("%s %s: must be at most %s", flagRef(cmd, "ttl"), ttl, limits.MaxTTL)
	case margin < 0:
		return usageError("%s (%s) must not be negative", flagRef(cmd, "margin"), margin)
	case margin < timing.MinMargin:
		return usageError("%s %s is below the least margin, %s: a host suspend of up to %s is not counted against the lease, so a term could act %s − %s = %s past it; use %s %s or more",
			flagRef(cmd, "margin"), margin, timing.MinMargin, timing.MinMargin, timing.MinMargin, margin, timing.MinMargin-margin, "--margin", timing.MinMargin)
	case !(drift >= 0 && drift < 0.5):
		return usageError("%s (%v) must be in [0, 0.5), as in --max-drift 0.01 (1%%)", flagRef(cmd, "max-drift"), drift)
	}
	if timingValid(ttl, margin, drift) {
		return nil
	}
	least, ok := smallestTTL(margin, drift)
	least = max(least, floor)
	if !ok {
		return usageError("%s %s leaves no safe lease with %s: use a smaller --margin",
			flagRef(cmd, "margin"), margin, driftText(cmd, drift))
	}
	return usageError("%s %s is too short for %s %s%s and %s: use --ttl %s or more%s",
		flagRef(cmd, "ttl"), ttl, flagRef(cmd, "margin"), margin, defaultNote(cmd, "margin"), driftText(cmd, drift), least, orSmallerMargin(cmd))
}

// timingValid reports whether tenure.Config accepts ttl, margin and
// drift together.
func timingValid(ttl, margin time.Duration, drift float64) bool {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "k", "h"
	cfg.TTL, cfg.Margin, cfg.MaxDrift = ttl, margin, drift
	return cfg.Validate() == nil
}

// smallestTTL returns the smallest TTL, in whole seconds (etcd grants
// whole seconds) or in tenths of a second below one second, that works
// with margin and drift, or false when none up to limits.MaxTTL does.
func smallestTTL(margin time.Duration, drift float64) (time.Duration, bool) {
	for ttl := 100 * time.Millisecond; ttl < time.Second; ttl += 100 * time.Millisecond {
		if timingValid(ttl, margin, drift) {
			return ttl, true
		}
	}
	// The constraints are monotonic in the TTL: find the first whole
	// second that works by bisection.
	lo, hi := int64(0), int64(limits.MaxTTL/time.Second)
	if !timingValid(time.Duration(hi)*time.Second, margin, drift) {
		return 0, false
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if timingValid(time.Duration(mid)*time.Second, margin, drift) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Duration(hi) * time.Second, true
}

// driftText names the drift as the user gave it: "--max-drift 1%".
func driftText(cmd *cobra.Command, drift float64) string {
	pct := strconv.FormatFloat(math.Round(drift*1e4)/1e2, 'f', -1, 64)
	return fmt.Sprintf("%s %s%%%s", flagRef(cmd, "max-drift"), pct, defaultNote(cmd, "max-drift"))
}

// defaultNote is " (the default)" when flag name was not set.
func defaultNote(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil && !f.Changed {
		return " (the default)"
	}
	return ""
}

// orSmallerMargin suggests a smaller --margin when the user chose it.
func orSmallerMargin(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("margin"); f != nil && f.Changed {
		return ", or a smaller --margin"
	}
	return ""
}
