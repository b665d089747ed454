package prom

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
)

// Label names of the variable labels.
const (
	labelKey  = "key"
	labelKind = "kind"
)

// renewBuckets are the upper bounds, in seconds, of the renew duration
// histogram's buckets: from 1ms (a coordinator on the same host) to 10s (a
// renewal that ran into its request timeout).
var renewBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics is a tenure.Metrics backed by Prometheus collectors. Create it
// with New and set it as tenure.Config.Metrics; one Metrics may serve any
// number of Electors (their keys tell them apart). It is safe for
// concurrent use and never blocks.
type Metrics struct {
	leader           *prometheus.GaugeVec
	token            *prometheus.GaugeVec
	transitions      *prometheus.CounterVec
	renewDuration    *prometheus.HistogramVec
	renewFailures    *prometheus.CounterVec
	fencedRejections *prometheus.CounterVec
}

var _ tenure.Metrics = (*Metrics)(nil)

// New creates the collectors and registers them on reg. It reports invalid
// options (wrapping tenure.ErrInvalidConfig) and registration failures: the
// error names the metric that could not be registered and wraps the
// registry's error, such as prometheus.AlreadyRegisteredError when another
// collector already uses the name (errors.As finds it). On error nothing
// stays registered, so New may be called again, for example with another
// namespace.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: prom: registerer is nil", tenure.ErrInvalidConfig)
	}
	o := options{namespace: DefaultNamespace}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	ns, cl := o.namespace, o.constLabels

	m := &Metrics{
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "leader", ConstLabels: cl,
			Help: "Whether this node leads the key: 1 while it holds a live term, 0 otherwise.",
		}, []string{labelKey}),
		token: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "fencing_token", ConstLabels: cl,
			Help: "Fencing token of this node's current or most recent term on the key; it grows with every grant, so a change marks a new term.",
		}, []string{labelKey}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "transitions_total", ConstLabels: cl,
			Help: "Leadership transitions of this node on the key, by kind: elected, resigned (released on purpose), lost (the coordinator expired or superseded the grant), expired (the local deadline passed before a renewal succeeded), fenced (a resource rejected the token), stepped-down (user code ended the term).",
		}, []string{labelKey, labelKind}),
		renewDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "renew_duration_seconds", ConstLabels: cl,
			Help:    "Duration of lease renewal attempts on the key, successful or failed; slow renewals eat into the safe lease.",
			Buckets: renewBuckets,
		}, []string{labelKey}),
		renewFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "renew_failures_total", ConstLabels: cl,
			Help: "Lease renewal attempts on the key that failed (retried until the local deadline, or the grant was lost).",
		}, []string{labelKey}),
		fencedRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "fenced_rejections_total", ConstLabels: cl,
			Help: "Times a fenced resource rejected this node's token on the key as stale, proving that another node had taken over; each made the node step down.",
		}, []string{labelKey}),
	}

	collectors := []struct {
		name string
		c    prometheus.Collector
	}{
		{ns + "_leader", m.leader},
		{ns + "_fencing_token", m.token},
		{ns + "_transitions_total", m.transitions},
		{ns + "_renew_duration_seconds", m.renewDuration},
		{ns + "_renew_failures_total", m.renewFailures},
		{ns + "_fenced_rejections_total", m.fencedRejections},
	}
	for i, c := range collectors {
		if err := reg.Register(c.c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done.c)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("prom: register %s: a collector with this name is already registered: %w", c.name, err)
			}
			return nil, fmt.Errorf("prom: register %s: %w", c.name, err)
		}
	}
	return m, nil
}

// SetLeader sets the leader gauge of key to 1 when leading, else 0.
func (m *Metrics) SetLeader(key string, leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.WithLabelValues(key).Set(v)
}

// SetToken sets the fencing token gauge of key. Tokens above 2^53 lose
// precision as float64.
func (m *Metrics) SetToken(key string, token uint64) {
	m.token.WithLabelValues(key).Set(float64(token))
}

// Transition increments the transitions counter of key and kind, labelled
// with kind.String() ("elected", "stepped-down", …).
func (m *Metrics) Transition(key string, kind tenure.TransitionKind) {
	m.transitions.WithLabelValues(key, kind.String()).Inc()
}

// ObserveRenew records one renewal attempt on key in the duration histogram
// and, when err is not nil, in the failures counter. The failures counter of
// key is created at zero by the first attempt, so that ratios of failures to
// attempts are defined before the first failure.
func (m *Metrics) ObserveRenew(key string, took time.Duration, err error) {
	m.renewDuration.WithLabelValues(key).Observe(took.Seconds())
	failures := m.renewFailures.WithLabelValues(key)
	if err != nil {
		failures.Inc()
	}
}

// FencedRejection increments the fenced rejections counter of key.
func (m *Metrics) FencedRejection(key string) {
	m.fencedRejections.WithLabelValues(key).Inc()
}

// Forget deletes every series of key, for a key this node will not lead
// again (a partition moved to another node for good, a finished job). It
// returns how many series it deleted. A later call for key starts its series
// afresh, counters from zero.
func (m *Metrics) Forget(key string) int {
	l := prometheus.Labels{labelKey: key}
	n := 0
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.leader, m.token, m.transitions, m.renewDuration, m.renewFailures, m.fencedRejections,
	} {
		n += v.DeletePartialMatch(l)
	}
	return n
}
