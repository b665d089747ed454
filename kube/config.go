package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tenure-dev/tenure/internal/display"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenure-dev/tenure"
)

// DefaultMaxDrift is WithMaxDrift's default, tenure.Config's default.
const DefaultMaxDrift = 0.01

// An Option configures a Coordinator, for New or Dial.
type Option func(*config)

// WithMaxDrift sets the largest difference in clock rate assumed between
// two contenders, as a fraction (0.01: one clock may run up to 1% faster
// than another). A contender takes over a Lease only after it has seen the
// same resourceVersion for leaseDurationSeconds·(1 + d) on its own clock.
// In [0, 0.5). Default DefaultMaxDrift (0.01).
func WithMaxDrift(d float64) Option { return func(c *config) { c.MaxDrift = d } }

// WithLogger sets where the coordinator logs debug records (grants,
// conflicts, watch restarts). Nil, the default, discards them.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.Logger = l } }

// config is what New's arguments and options set.
type config struct {
	Namespace string
	MaxDrift  float64
	Logger    *slog.Logger
}

func newConfig(namespace string, opts []Option) config {
	c := config{Namespace: namespace, MaxDrift: DefaultMaxDrift}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// validate reports every unusable setting, one error per setting, each
// wrapping tenure.ErrInvalidConfig and naming the setting and its value.
func (c config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{tenure.ErrInvalidConfig}, args...)...))
	}
	if c.Namespace == "" {
		bad("kube: the namespace is empty: name the namespace that holds the Leases")
	} else if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		bad("kube: namespace %s is not a namespace name: %s", display.Input(c.Namespace), strings.Join(msgs, "; "))
	}
	if !(c.MaxDrift >= 0 && c.MaxDrift < 0.5) { // also rejects NaN
		bad("kube: WithMaxDrift (%v) must be in [0, 0.5)", c.MaxDrift)
	}
	return errors.Join(errs...)
}
