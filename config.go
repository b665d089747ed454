package tenure

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/lease"
)

// Config configures an Elector. Start from DefaultConfig and set Key.
type Config struct {
	// Key is the name of what is led: 1–200 bytes of [A-Za-z0-9._/-], no
	// leading '/', no '..'. Required.
	Key string

	// Holder is this node's display name. Default (from DefaultConfig):
	// DefaultHolder(), "hostname-pid-random". Two processes may be given the
	// same name: the identity the coordinator compares also carries Instance.
	Holder string

	// Instance is appended to Holder to form the identity that the
	// coordinator compares and that grants carry, "Holder#Instance" (see
	// Identity), so that two processes (or two Electors) given the same
	// Holder are two contenders and never replace each other's grant. Empty
	// means one drawn at random by NewElector for that Elector alone (and by
	// partition.New for that Group): two Electors in one process given one
	// Holder are still two contenders. Set ProcessInstance() to give every
	// Elector of a process the same one, as `tenure run` does.
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
	// suspends too short to be counted. Default 1s. Must be at least
	// MinMargin (a suspend of up to MinMargin is not counted against the
	// lease, see MinMargin) and less than TTL·(1 − MaxDrift).
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

	// Metrics receives observations. Nil means NopMetrics.
	Metrics Metrics

	// OnTransition, if set, is called on every leadership transition, from
	// the elector's goroutine, after the term's context has been cancelled
	// for endings. It must not block.
	OnTransition func(Transition)
}

// MinMargin is the least Config.Margin, 50ms. A Term does not count a
// host suspend of up to MinMargin against its lease: it cannot tell one
// from the scheduling noise between its two clocks (see suspendNoise in
// term.go). With a shorter Margin, such a suspend just before the deadline
// would let the term act up to MinMargin − Margin past its lease. Used by
// Config.Validate, which refuses a shorter Margin, and by the tenure command
// and its benchmarks, which check --margin against it.
const MinMargin = suspendNoise

// DefaultConfig returns a Config with every default filled in except Key.
// Users start every Config from it, as `tenure run` and
// partition.DefaultConfig do.
func DefaultConfig() Config {
	return Config{
		Holder:   DefaultHolder(),
		TTL:      10 * time.Second,
		Margin:   time.Second,
		MaxDrift: 0.01,
	}
}

// DefaultHolder returns "hostname-pid-random", unique per process. Called
// by DefaultConfig, and by `tenure run` when no --holder is given.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Identity is the holder identity the coordinator compares and grants
// carry: Identity(c.Holder, c.Instance). With an empty Instance it is not
// known yet (NewElector draws one): ask the Elector (Elector.Identity).
func (c Config) Identity() string { return Identity(c.Holder, c.Instance) }

// Identity joins a display name and an instance id into the identity a
// coordinator compares: "name#instance". SplitIdentity undoes it. Called
// by Config.Identity, and by users who call a Coordinator's Acquire
// themselves (as ExampleObserver does) to make the holder it compares.
func Identity(name, instance string) string { return name + "#" + instance }

// SplitIdentity splits a holder identity made by Identity into its display
// name and instance id. A holder without '#' (written by another tool, or
// by a version of tenure before instance ids) is all name. Called by the
// tenure command and its status pages, which show name and instance apart,
// by package prom, whose holder label carries the name only, and by the
// memory coordinator's faults, which match a holder by its name.
func SplitIdentity(holder string) (name, instance string) {
	if i := strings.LastIndexByte(holder, '#'); i >= 0 {
		return holder[:i], holder[i+1:]
	}
	return holder, ""
}

// DescribeHolder formats a holder identity for people: the quoted display
// name, and the instance id when there is one: "web-1" (instance 3f2a9c01).
// Called by packages partition and kube for the holder their errors name,
// and by the tenure command (`tenure run`, `tenure status`) for the holders
// it prints.
func DescribeHolder(holder string) string {
	name, inst := SplitIdentity(holder)
	if inst == "" {
		return strconv.Quote(name)
	}
	return strconv.Quote(name) + " (instance " + inst + ")"
}

// ProcessInstance returns this process's instance id: 8 random hex digits,
// drawn once and fixed for the life of the process. Called by `tenure run`,
// which sets it as the Config.Instance of every Elector it starts; users do
// the same when a process's Electors must share one identity.
func ProcessInstance() string { return processInstance() }

var processInstance = sync.OnceValue(newInstance)

// newInstance draws an instance id: 8 random hex digits.
func newInstance() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewInstance draws a new instance id, for a Config whose identity must be
// known before NewElector (or partition.New) would draw one. Called by
// partition.New for a Config without an Instance; users call it to know a
// Config's Identity before NewElector.
func NewInstance() string { return newInstance() }

// SafeLease is how long after sending a request that produced a grant of ttl
// the holder may act: ttl·(1 − MaxDrift) − Margin.
func (c Config) SafeLease(ttl time.Duration) time.Duration {
	return lease.Safe(ttl, c.MaxDrift, c.Margin)
}

// EffectiveRenewInterval is RenewInterval, or TTL/3 when it is zero.
func (c Config) EffectiveRenewInterval() time.Duration {
	if c.RenewInterval == 0 {
		return c.TTL / 3
	}
	return c.RenewInterval
}

// NextRenewal is how long after a renewal (or the grant) the next renewal
// is due, for a lease granted for granted with remaining left until the
// local deadline: RenewInterval, but never more than a third of the TTL
// granted nor half the time left (a lease granted ahead has less), so that
// failed attempts can be retried before the deadline. At least 1ms.
func (c Config) NextRenewal(granted, remaining time.Duration) time.Duration {
	return lease.NextRenewal(c.EffectiveRenewInterval(), granted, remaining)
}

// EffectiveRetryPeriod is RetryPeriod, or TTL/10 when it is zero.
func (c Config) EffectiveRetryPeriod() time.Duration {
	if c.RetryPeriod == 0 {
		return c.TTL / 10
	}
	return c.RetryPeriod
}

// EffectiveRequestTimeout is RequestTimeout, or the renew interval when it is
// zero.
func (c Config) EffectiveRequestTimeout() time.Duration {
	if c.RequestTimeout == 0 {
		return c.EffectiveRenewInterval()
	}
	return c.RequestTimeout
}

// Validate reports every impossible setting, one error per field, each
// wrapping ErrInvalidConfig and naming the field and its value. It never
// replaces a bad value with a default.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if err := ValidateKey(c.Key); err != nil {
		bad("Config.Key: %w", err)
	}
	if err := ValidateHolder(c.Holder); err != nil {
		bad("Config.Holder: %w", err)
	} else if err := ValidateHolder(Identity(c.Holder, cmp.Or(c.Instance, "00000000"))); err != nil {
		bad("Config.Holder and Config.Instance: %w", err)
	}
	if strings.Contains(c.Instance, "#") {
		bad("Config.Instance %q must not contain '#'", c.Instance)
	}
	ttlOK := true
	if err := ValidateTTL(c.TTL); err != nil {
		bad("Config.TTL: %w", err)
		ttlOK = false
	}
	driftOK := true
	if !(c.MaxDrift >= 0 && c.MaxDrift < 0.5) { // also rejects NaN
		bad("Config.MaxDrift (%v) must be in [0, 0.5)", c.MaxDrift)
		driftOK = false
	}
	marginOK := false
	switch {
	case c.Margin < 0:
		bad("Config.Margin (%s) must not be negative", c.Margin)
	case c.Margin < MinMargin:
		bad("Config.Margin (%s) must be at least MinMargin (%s), the longest host suspend a term does not count: "+
			"a suspend of %s just before the deadline would let the term act %s − %s = %s past its lease",
			c.Margin, MinMargin, MinMargin, MinMargin, c.Margin, MinMargin-c.Margin)
	case ttlOK && c.Margin >= c.TTL:
		bad("Config.Margin (%s) must be less than Config.TTL (%s)", c.Margin, c.TTL)
	case ttlOK && driftOK && c.SafeLease(c.TTL) <= 0:
		bad("Config.Margin (%s) leaves no safe lease: TTL·(1−MaxDrift) = %s", c.Margin, lease.Safe(c.TTL, c.MaxDrift, 0))
	default:
		marginOK = true
	}
	renewOK := true
	if c.RenewInterval < 0 {
		bad("Config.RenewInterval (%s) must not be negative", c.RenewInterval)
		renewOK = false
	} else if ttlOK && driftOK && marginOK {
		safe := c.SafeLease(c.TTL)
		if ri := c.EffectiveRenewInterval(); ri <= 0 {
			bad("Config.RenewInterval (%s) must be positive", ri)
			renewOK = false
		} else if ri >= safe {
			bad("Config.RenewInterval (%s) must be less than the safe lease TTL·(1−MaxDrift)−Margin (%s)", ri, safe)
			renewOK = false
		}
	}
	if c.RetryPeriod < 0 {
		bad("Config.RetryPeriod (%s) must not be negative", c.RetryPeriod)
	} else if ttlOK && renewOK {
		if rp := c.EffectiveRetryPeriod(); rp <= 0 {
			bad("Config.RetryPeriod (%s) must be positive", rp)
		} else if rp >= c.EffectiveRenewInterval() {
			bad("Config.RetryPeriod (%s) must be less than the renew interval (%s)", rp, c.EffectiveRenewInterval())
		}
	}
	if c.RequestTimeout < 0 {
		bad("Config.RequestTimeout (%s) must not be negative", c.RequestTimeout)
	}
	return errors.Join(errs...)
}
