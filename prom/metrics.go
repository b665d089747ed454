package prom

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/termctl"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
)

// Label names of the variable labels. None grows without bound: keys and
// resources are chosen by the application, reasons, results and ops are
// fixed sets, and a key has one leader_info series at a time.
const (
	labelKey      = "key"
	labelReason   = "reason"
	labelResult   = "result"
	labelHolder   = "holder"
	labelResource = "resource"
	labelOp       = "op"
	labelGroup    = "group"
)

// Results of a renewal, the values of the result label of
// tenure_renew_duration_seconds.
const (
	resultOK    = "ok"    // the lease was extended
	resultLost  = "lost"  // the coordinator said the grant was gone
	resultError = "error" // no answer, or an error: retried until the local deadline
)

var (
	// renewBuckets: from 1ms (a coordinator on the same host) to 10s (a
	// renewal that ran into its request timeout).
	renewBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// leadershipBuckets: from a second (a flapping leader) to a day.
	leadershipBuckets = []float64{1, 10, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600}
	// leaderlessBuckets: from a handover (one round trip) to minutes.
	leaderlessBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
)

// Metrics is a tenure.Metrics backed by Prometheus collectors. Create it
// with New and set it as tenure.Config.Metrics; one Metrics may serve any
// number of Electors (their keys tell them apart). It is safe for
// concurrent use and never blocks.
type Metrics struct {
	isLeader    *prometheus.GaugeVec
	leaderInfo  *prometheus.GaugeVec
	token       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	renew       *prometheus.HistogramVec
	lastRenew   *prometheus.GaugeVec
	leadership  *prometheus.HistogramVec
	leaderless  *prometheus.HistogramVec
	stale       *prometheus.CounterVec
	coordErrors *prometheus.CounterVec
	lease       *leaseCollector

	mu   sync.Mutex
	keys map[string]*keyState
}

// keyState is what Metrics remembers of one key.
type keyState struct {
	term    *tenure.Term // this node's live term, nil when not leading
	began   time.Time    // when term began
	holder  string       // the leader_info holder label now set, "" if none
	known   bool         // whether held is known
	held    bool         // whether some node held the key when last seen
	freeAt  time.Time    // when the key was last seen becoming free
	tracked bool         // whether the lease gauge reports the key
}

var _ tenure.Metrics = (*Metrics)(nil)

// New creates the collectors and registers them on reg. It reports invalid
// options (wrapping tenure.ErrInvalidConfig) and registration failures: the
// error names the metric that could not be registered and wraps the
// registry's error, such as prometheus.AlreadyRegisteredError when another
// collector already uses the name (errors.As finds it). On error nothing
// stays registered, so New may be called again, for example with another
// namespace. One Metrics serves a registry; set it as tenure.Config.Metrics.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: prom: registerer is nil", tenure.ErrInvalidConfig)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	m := newMetrics(o.namespace, o.constLabels)
	if err := register(reg, m.collectors(o.namespace)); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers every collector on reg, or none: on an error it
// unregisters those it had registered and names the metric that failed.
func register(reg prometheus.Registerer, collectors []named) error {
	for i, c := range collectors {
		if err := reg.Register(c.c); err != nil {
			for _, done := range collectors[:i] {
				reg.Unregister(done.c)
			}
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("prom: register %s: a collector with this name is already registered: %w", c.name, err)
			}
			return fmt.Errorf("prom: register %s: %w", c.name, err)
		}
	}
	return nil
}

// named is a collector and the name of its metric, for errors.
type named struct {
	name string
	c    prometheus.Collector
}

func (m *Metrics) collectors(ns string) []named {
	return []named{
		{ns + "_is_leader", m.isLeader},
		{ns + "_leader_info", m.leaderInfo},
		{ns + "_fencing_token", m.token},
		{ns + "_transitions_total", m.transitions},
		{ns + "_renew_duration_seconds", m.renew},
		{ns + "_last_renew_timestamp_seconds", m.lastRenew},
		{ns + "_lease_remaining_seconds", m.lease},
		{ns + "_leadership_duration_seconds", m.leadership},
		{ns + "_leaderless_seconds", m.leaderless},
		{ns + "_stale_rejections_total", m.stale},
		{ns + "_coordinator_errors_total", m.coordErrors},
	}
}

// SetLeader sets tenure_is_leader of key to 1 when leading, else 0. When
// leading ends it forgets the term that TermBegan gave it.
func (m *Metrics) SetLeader(key string, leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.isLeader.WithLabelValues(key).Set(v)
	if !leading {
		m.mu.Lock()
		m.state(key).term = nil
		m.mu.Unlock()
	}
}

// SetToken sets tenure_fencing_token of key. Tokens above 2^53 lose
// precision as float64.
func (m *Metrics) SetToken(key string, token uint64) {
	m.token.WithLabelValues(key).Set(float64(token))
}

// TermBegan keeps t, so that tenure_lease_remaining_seconds reads
// t.Remaining() at every scrape, and starts timing the term for
// tenure_leadership_duration_seconds.
func (m *Metrics) TermBegan(t *tenure.Term) {
	now := time.Now()
	m.lastRenew.WithLabelValues(t.Grant().Key).Set(float64(now.UnixNano()) / 1e9)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(t.Grant().Key)
	s.term, s.began, s.tracked = t, now, true
	m.observeHeldLocked(t.Grant().Key, s, true, t.Grant().Holder, now)
}

// Transition counts a transition of key in tenure_transitions_total under
// the reason label (acquired, released, deadline, lost, fenced: kind's
// String, with SteppedDown counted as released). The end of a
// term is observed in tenure_leadership_duration_seconds, and the key
// counts as leaderless from then until a holder is seen again.
func (m *Metrics) Transition(key string, kind tenure.TransitionKind) {
	m.transitions.WithLabelValues(key, termctl.Reason(kind)).Inc()
	if kind == tenure.Elected {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(key)
	if !s.began.IsZero() {
		m.leadership.WithLabelValues(key).Observe(now.Sub(s.began).Seconds())
		s.began = time.Time{}
	}
	m.observeHeldLocked(key, s, false, "", now)
}

// ObserveRenew records one renewal attempt on key in
// tenure_renew_duration_seconds by result (ok, lost, error) and, when it
// succeeded, sets tenure_last_renew_timestamp_seconds to now.
func (m *Metrics) ObserveRenew(key string, took time.Duration, err error) {
	result := resultOK
	switch {
	case errors.Is(err, tenure.ErrLost):
		result = resultLost
	case err != nil:
		result = resultError
	}
	m.renew.WithLabelValues(key, result).Observe(took.Seconds())
	if err == nil {
		m.lastRenew.WithLabelValues(key).Set(float64(time.Now().UnixNano()) / 1e9)
	}
}

// ObserveLeader records who holds key, as seen by a status poller or a
// watch: it sets tenure_leader_info{key,holder} (holder is the display name
// of g.Holder, before its last '#') or removes it when the key is
// free (held false), and observes in tenure_leaderless_seconds how long the
// key was seen free before a holder appeared. Repeated observations of the
// same state change nothing.
func (m *Metrics) ObserveLeader(key string, g tenure.Grant, held bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observeHeldLocked(key, m.state(key), held, g.Holder, time.Now())
}

// observeHeldLocked moves key's leaderless clock and leader_info series.
func (m *Metrics) observeHeldLocked(key string, s *keyState, held bool, holder string, now time.Time) {
	if held {
		if s.known && !s.held && !s.freeAt.IsZero() {
			m.leaderless.WithLabelValues(key).Observe(now.Sub(s.freeAt).Seconds())
		}
		name, _ := display.SplitIdentity(holder)
		if name != s.holder {
			if s.holder != "" {
				m.leaderInfo.DeleteLabelValues(key, s.holder)
			}
			m.leaderInfo.WithLabelValues(key, name).Set(1)
			s.holder = name
		}
	} else {
		if !s.known || s.held {
			s.freeAt = now
		}
		if s.holder != "" {
			m.leaderInfo.DeleteLabelValues(key, s.holder)
			s.holder = ""
		}
	}
	s.known, s.held = true, held
}

// state returns key's state, created on first use. m.mu must be held.
func (m *Metrics) state(key string) *keyState {
	s := m.keys[key]
	if s == nil {
		s = &keyState{}
		m.keys[key] = s
	}
	return s
}

// Forget deletes every series of key, for a key this node will not lead
// again (a partition moved to another node for good, a finished job). It
// returns how many series it deleted. A later call for key starts its series
// afresh, counters from zero.
func (m *Metrics) Forget(key string) int {
	l := prometheus.Labels{labelKey: key}
	n := 0
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.isLeader, m.leaderInfo, m.token, m.transitions, m.renew, m.lastRenew, m.leadership, m.leaderless,
	} {
		n += v.DeletePartialMatch(l)
	}
	m.mu.Lock()
	if s := m.keys[key]; s != nil && s.tracked {
		n++
	}
	delete(m.keys, key)
	m.mu.Unlock()
	return n
}
