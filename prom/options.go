package prom

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/tenure-dev/tenure"
)

// DefaultNamespace is the prefix of every metric name unless WithNamespace
// sets another.
const DefaultNamespace = "tenure"

// An Option configures New and NewPartition.
type Option func(*options)

type options struct {
	namespace   string
	constLabels prometheus.Labels
}

// WithNamespace sets the prefix of every metric name, "tenure" by default:
// WithNamespace("app") gives app_leader, app_fencing_token, and so on. It
// must be a valid Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*); New
// reports an empty or malformed namespace. It keeps two sets of tenure
// metrics apart in one registry.
func WithNamespace(namespace string) Option {
	return func(o *options) { o.namespace = namespace }
}

// WithConstLabels adds labels with fixed values to every series, such as
// the deployment or the zone. Label names must be valid Prometheus label
// names, must not start with "__" and must not be one the metrics use
// themselves (key, reason, result, holder, resource, op, group); values
// must be valid UTF-8. New reports any that are not. Repeated calls add to
// the set; a later value for the same name wins.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(o *options) {
		if o.constLabels == nil {
			o.constLabels = make(prometheus.Labels, len(labels))
		}
		maps.Copy(o.constLabels, labels)
	}
}

// reserved are the label names the metrics use themselves.
var reserved = map[string]bool{
	labelKey: true, labelReason: true, labelResult: true, labelHolder: true,
	labelResource: true, labelOp: true, labelGroup: true,
}

// validate reports the first problem with o, wrapping tenure.ErrInvalidConfig.
func (o *options) validate() error {
	if o.namespace == "" {
		return fmt.Errorf("%w: prom: namespace must not be empty", tenure.ErrInvalidConfig)
	}
	if !model.LegacyValidation.IsValidMetricName(o.namespace) {
		return fmt.Errorf("%w: prom: namespace %q is not a valid metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)", tenure.ErrInvalidConfig, o.namespace)
	}
	for _, name := range slices.Sorted(maps.Keys(o.constLabels)) {
		value := o.constLabels[name]
		switch {
		case reserved[name]:
			return fmt.Errorf("%w: prom: const label %q is reserved for the metrics' own label", tenure.ErrInvalidConfig, name)
		case len(name) >= 2 && name[:2] == "__":
			return fmt.Errorf("%w: prom: const label %q: names starting with \"__\" are reserved", tenure.ErrInvalidConfig, name)
		case !model.LegacyValidation.IsValidLabelName(name):
			return fmt.Errorf("%w: prom: const label %q is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)", tenure.ErrInvalidConfig, name)
		case !utf8.ValidString(value):
			return fmt.Errorf("%w: prom: const label %q: value %q is not valid UTF-8", tenure.ErrInvalidConfig, name, value)
		}
	}
	return nil
}

// newOptions applies opts to the defaults and validates the result.
func newOptions(opts []Option) (options, error) {
	o := options{namespace: DefaultNamespace}
	for _, opt := range opts {
		opt(&o)
	}
	return o, o.validate()
}
