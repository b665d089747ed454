package tenure

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/internal/identity"
)

// Config configures an Elector. Start from DefaultConfig and set Key.
type Config struct {
	// Key is the name of what is led: 1–200 bytes of [A-Za-z0-9._/-], no
	// leading '/', no '..'. Required.
	Key string

	// Holder is this node's display name. Default (from DefaultConfig): the
	// host name, the process id and 8 random hex digits, "web-1-4242-9f2a01c3",
	// drawn once per DefaultConfig call. Two processes may be given the same
	// name: the identity the coordinator compares also carries Instance.
	Holder string

	// Instance is appended to Holder to form the identity that the
	// coordinator compares and that grants carry, "Holder#Instance" (see
	// Identity), so that two processes (or two Electors) given the same
	// Holder are two contenders and never replace each other's grant. Empty
	// means one drawn at random by NewElector for that Elector alone (and by
	// partition.New for that Group): two Electors in one process given one
	// Holder are still two contenders. To give every Elector of a process
	// the same one, draw a value once per process (8 random hex digits, say)
	// and set it in each Config; never share one across processes.
	//
	// Electors that share a Holder and an Instance must never campaign for
	// the same key: to the coordinator they are one contender, so each
	// one's Acquire takes the key from the other (acquiring a key its
	// holder already holds is a new grant), and both lead until their next
	// renewal finds the grant lost, over and over. Within one process,
	// Elector.Run refuses the second of two such Electors on one
	// Coordinator; across processes nothing can see it, so never give two
	// processes one Instance.
	Instance string

	// TTL is the lease the coordinator is asked for. Default 10s.
	TTL time.Duration

	// Margin is subtracted from the local deadline as a safety allowance for
	// scheduling delays between checking the term and acting, and for host
	// suspends too short to be counted. Default 1s. Must be at least 50ms
	// (a term does not count a host suspend of up to 50ms against its lease:
	// it cannot tell one from scheduling noise) and less than
	// TTL·(1 − MaxDrift).
	Margin time.Duration

	// MaxDrift is the largest difference in clock rate assumed between this
	// node and the coordinator, as a fraction: 0.01 means one clock may run
	// up to 1% faster than the other. In [0, 0.5). Default 0.01.
	MaxDrift float64

	// RenewInterval is how often the lease is renewed while leading. Zero
	// means TTL/3, as etcd's sessions and client-go renew. Must be less than
	// the safe lease, TTL·(1 − MaxDrift) − Margin, so that at least one
	// renewal is tried before the deadline. While leading, renewals are
	// never further apart than a third of the TTL actually granted, nor
	// than half the time left until the local deadline, so that a
	// coordinator that grants less than was asked, or a lease granted ahead,
	// still sees several renewals per lease.
	RenewInterval time.Duration

	// RetryPeriod is the base delay between campaign attempts (jittered, with
	// backoff up to 4×) and between retries of a failed renewal. Zero means
	// TTL/10. Must be less than RenewInterval.
	RetryPeriod time.Duration

	// RequestTimeout bounds one acquire or renewal attempt, so that a call
	// hung on a half-open connection is abandoned and retried. Zero means
	// RenewInterval. A renewal is also bounded by the local deadline.
	RequestTimeout time.Duration

	// Logger receives structured logs. Nil discards them.
	Logger *slog.Logger

	// Metrics receives observations. Nil means none.
	Metrics Metrics

	// OnTransition, if set, is called on every leadership transition, from
	// the elector's goroutine, after the term's context has been cancelled
	// for endings. It must not block.
	OnTransition func(Transition)
}

// DefaultConfig returns a Config with every default filled in except Key.
// Start every Config from it, so that a field added later gets its
// default.
func DefaultConfig() Config {
	return Config{
		Holder:   identity.DefaultHolder(),
		TTL:      10 * time.Second,
		Margin:   time.Second,
		MaxDrift: 0.01,
	}
}

// Identity joins a display name and an instance id into the identity a
// coordinator compares, "name#instance", as Elector.Identity returns it: the
// holder to give a Coordinator's Acquire when calling it directly.
func Identity(name, instance string) string { return name + "#" + instance }

// Validate reports every impossible setting, one error per field, each
// wrapping ErrInvalidConfig and naming the field and its value. It never
// replaces a bad value with a default.
func (c Config) Validate() error {
	var p problems
	c.validateIdentity(&p)
	ttlErr := ValidateTTL(c.TTL)
	if ttlErr != nil {
		p.add("Config.TTL: %w", ttlErr)
	}
	ttlOK := ttlErr == nil
	driftOK := c.MaxDrift >= 0 && c.MaxDrift < 0.5 // also rejects NaN
	if !driftOK {
		p.add("Config.MaxDrift (%v) must be in [0, 0.5)", c.MaxDrift)
	}
	marginOK := c.validateMargin(&p, ttlOK, driftOK)
	renewOK := c.validateRenewInterval(&p, ttlOK && driftOK && marginOK)
	c.validateRetryPeriod(&p, ttlOK && renewOK)
	if c.RequestTimeout < 0 {
		p.add("Config.RequestTimeout (%s) must not be negative", c.RequestTimeout)
	}
	return errors.Join(p...)
}

// problems collects what Validate finds wrong, each wrapping
// ErrInvalidConfig.
type problems []error

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
}

// validateIdentity checks Key, Holder and Instance.
func (c Config) validateIdentity(p *problems) {
	if err := ValidateKey(c.Key); err != nil {
		p.add("Config.Key: %w", err)
	}
	if err := ValidateHolder(c.Holder); err != nil {
		p.add("Config.Holder: %w", err)
	} else if err := ValidateHolder(Identity(c.Holder, cmp.Or(c.Instance, "00000000"))); err != nil {
		p.add("Config.Holder and Config.Instance: %w", err)
	}
	if strings.Contains(c.Instance, "#") {
		p.add("Config.Instance %q must not contain '#'", c.Instance)
	}
}

// validateMargin checks Margin, against TTL and MaxDrift when those are
// valid, and reports whether it is.
func (c Config) validateMargin(p *problems, ttlOK, driftOK bool) bool {
	switch {
	case c.Margin < 0:
		p.add("Config.Margin (%s) must not be negative", c.Margin)
	case c.Margin < timing.MinMargin:
		p.add("Config.Margin (%s) must be at least %s, the longest host suspend a term does not count: "+
			"a suspend of %s just before the deadline would let the term act %s − %s = %s past its lease",
			c.Margin, timing.MinMargin, timing.MinMargin, timing.MinMargin, c.Margin, timing.MinMargin-c.Margin)
	case ttlOK && c.Margin >= c.TTL:
		p.add("Config.Margin (%s) must be less than Config.TTL (%s)", c.Margin, c.TTL)
	case ttlOK && driftOK && timing.SafeLease(c.TTL, c.MaxDrift, c.Margin) <= 0:
		p.add("Config.Margin (%s) leaves no safe lease: TTL·(1−MaxDrift) = %s", c.Margin, timing.SafeLease(c.TTL, c.MaxDrift, 0))
	default:
		return true
	}
	return false
}

// validateRenewInterval checks RenewInterval, against the safe lease when
// TTL, MaxDrift and Margin are valid (leaseOK), and reports whether it is.
func (c Config) validateRenewInterval(p *problems, leaseOK bool) bool {
	if c.RenewInterval < 0 {
		p.add("Config.RenewInterval (%s) must not be negative", c.RenewInterval)
		return false
	}
	if !leaseOK {
		return true
	}
	safe := timing.SafeLease(c.TTL, c.MaxDrift, c.Margin)
	if ri := timing.RenewInterval(c.TTL, c.RenewInterval); ri <= 0 {
		p.add("Config.RenewInterval (%s) must be positive", ri)
		return false
	} else if ri >= safe {
		p.add("Config.RenewInterval (%s) must be less than the safe lease TTL·(1−MaxDrift)−Margin (%s)", ri, safe)
		return false
	}
	return true
}

// validateRetryPeriod checks RetryPeriod, against the renew interval when
// TTL and RenewInterval are valid (renewOK).
func (c Config) validateRetryPeriod(p *problems, renewOK bool) {
	if c.RetryPeriod < 0 {
		p.add("Config.RetryPeriod (%s) must not be negative", c.RetryPeriod)
		return
	}
	if !renewOK {
		return
	}
	ri := timing.RenewInterval(c.TTL, c.RenewInterval)
	if rp := timing.RetryPeriod(c.TTL, c.RetryPeriod); rp <= 0 {
		p.add("Config.RetryPeriod (%s) must be positive", rp)
	} else if rp >= ri {
		p.add("Config.RetryPeriod (%s) must be less than the renew interval (%s)", rp, ri)
	}
}
