package partition

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/tenure-dev/tenure"
)

// Config configures a Group made by New. Start from DefaultConfig, set Key
// (the group) and Partitions.
type Config struct {
	// Config holds the member's lease settings, as for an Elector: Key is
	// the group's key (partition keys are Key(Key, name)),
	// and Holder, Instance, TTL, Margin, MaxDrift, RenewInterval,
	// RetryPeriod, RequestTimeout, Logger and OnTransition mean what they
	// mean there. OnTransition is called for every partition's term, with
	// the partition's key. Config.Config.Metrics is not used: see Metrics.
	//
	// Groups that share a Holder and an Instance must never run the same
	// group: to the coordinator they are one member ID, both are assigned
	// the same partitions, and nothing tells which of them runs one.
	// Within one process, Group.Run refuses the second of two such Groups
	// on one coordinator; across processes nothing can see it, so never
	// give two processes one Instance.
	tenure.Config

	// Partitions is how many partitions the group has, P. Required, ≥ 1.
	Partitions int

	// Names, if set, names the partitions (len(Names) == Partitions, each a
	// key path element, all different). Default: "0" to "P−1".
	Names []string

	// SyncInterval is how often the member reads the group's membership and
	// retries claims it could not make; a coordinator that is a
	// MembersWatcher also wakes it at once on a join or leave. Zero means
	// min(RetryPeriod, 100ms).
	SyncInterval time.Duration

	// Debounce is how long a change of membership must have been seen
	// unchanged before this member hands partitions over because of it, so
	// that a flapping member does not make partitions move back and forth.
	// Free partitions are claimed at once, whatever the debounce, except by
	// a member that has just joined, which waits for its first view to
	// settle. Zero means the effective RetryPeriod.
	Debounce time.Duration

	// Metrics receives the group's observations. Nil means none.
	Metrics Metrics
}

// DefaultConfig returns a Config with tenure.DefaultConfig's lease
// settings; set Key and Partitions. It is the Config to start from.
func DefaultConfig() Config {
	return Config{Config: tenure.DefaultConfig()}
}

// EffectiveSyncInterval is SyncInterval, or min(RetryPeriod, 100ms) when it
// is zero.
func (c Config) EffectiveSyncInterval() time.Duration {
	if c.SyncInterval == 0 {
		return min(timing.RetryPeriod(c.TTL, c.RetryPeriod), 100*time.Millisecond)
	}
	return c.SyncInterval
}

// EffectiveDebounce is Debounce, or the effective RetryPeriod when it is
// zero.
func (c Config) EffectiveDebounce() time.Duration {
	if c.Debounce == 0 {
		return timing.RetryPeriod(c.TTL, c.RetryPeriod)
	}
	return c.Debounce
}

// PartitionNames returns the partitions' names: Names, or "0" to "P−1".
func (c Config) PartitionNames() []string {
	if c.Names != nil {
		return c.Names
	}
	return Names(c.Partitions)
}

// Validate reports every impossible setting, one error per field, each
// wrapping tenure.ErrInvalidConfig and naming the field and its value.
func (c Config) Validate() error {
	var errs []error
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{tenure.ErrInvalidConfig}, args...)...))
	}
	if c.Partitions < 1 {
		bad("Config.Partitions (%d) must be at least 1", c.Partitions)
	}
	if c.Names != nil && len(c.Names) != c.Partitions {
		bad("Config.Names has %d names for Config.Partitions (%d)", len(c.Names), c.Partitions)
	}
	longest := 0
	if c.Names == nil { // "0" to "P−1": valid, distinct, the last the longest
		longest = len(strconv.Itoa(max(c.Partitions-1, 0)))
	}
	seen := make(map[string]bool, len(c.Names))
	for i, n := range c.Names {
		longest = max(longest, len(n))
		if err := inputs.PartitionName(n); err != nil {
			bad("Config.Names[%d]: %w", i, err)
		} else if seen[n] {
			bad("Config.Names[%d] (%q) is a duplicate", i, n)
		}
		seen[n] = true
	}
	if err := inputs.Group(c.Key, longest); err != nil && tenure.ValidateKey(c.Key) == nil {
		bad("Config.Key: %w", err)
	}
	if c.SyncInterval < 0 {
		bad("Config.SyncInterval (%s) must not be negative", c.SyncInterval)
	}
	if c.Debounce < 0 {
		bad("Config.Debounce (%s) must not be negative", c.Debounce)
	}
	return errors.Join(errs...)
}
