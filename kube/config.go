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

// DefaultMaxDrift is Config.MaxDrift's default, tenure.Config's default.
const DefaultMaxDrift = 0.01

// Config configures a Coordinator made by New or NewForConfig. Start from
// DefaultConfig and set Namespace.
type Config struct {
	// Namespace holds the Leases, one per key. Required: a DNS-1123 label
	// ("default", "my-app").
	Namespace string

	// MaxDrift is the largest difference in clock rate assumed between two
	// contenders, as a fraction (0.01: one clock may run up to 1% faster
	// than another). A contender takes over a Lease only after it has seen
	// the same resourceVersion for leaseDurationSeconds·(1 + MaxDrift) on
	// its own clock. In [0, 0.5). Default DefaultMaxDrift (0.01).
	MaxDrift float64

	// Logger receives debug logs (grants, conflicts, watch restarts). Nil
	// discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default filled in except
// Namespace: the Config to start from.
func DefaultConfig() Config {
	return Config{MaxDrift: DefaultMaxDrift}
}

// Validate reports every unusable setting, one error per field, each
// wrapping tenure.ErrInvalidConfig and naming the field and its value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{tenure.ErrInvalidConfig}, args...)...))
	}
	if c.Namespace == "" {
		bad("kube: Config.Namespace is empty: name the namespace that holds the Leases")
	} else if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		bad("kube: Config.Namespace %s is not a namespace name: %s", display.Input(c.Namespace), strings.Join(msgs, "; "))
	}
	if !(c.MaxDrift >= 0 && c.MaxDrift < 0.5) { // also rejects NaN
		bad("kube: Config.MaxDrift (%v) must be in [0, 0.5)", c.MaxDrift)
	}
	return errors.Join(errs...)
}
