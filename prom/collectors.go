package prom

import "github.com/prometheus/client_golang/prometheus"

// Help texts of the metrics, without the namespace. docs/monitoring.md's metric
// table repeats them; a test in package monitor checks that it does.
const (
	helpIsLeader    = "1 while this instance leads the key (holds a live term whose local deadline has not passed), 0 otherwise."
	helpLeaderInfo  = "1 for the key's current holder (display name) as this instance last saw it; no series while the key is free."
	helpToken       = "Fencing token of this instance's current or most recent term on the key; it grows with every grant."
	helpTransitions = "Leadership transitions of this instance on the key, by reason: acquired, released (given up on purpose), deadline (the local deadline passed before a renewal succeeded), lost (the coordinator expired or superseded the grant), fenced (a resource rejected the token)."
	helpRenew       = "Duration of lease renewal attempts on the key, by result: ok, lost (the grant was gone), error (retried until the local deadline)."
	helpLastRenew   = "Unix time of the last successful grant or renewal of the key by this instance."
	helpLease       = "Time left until this instance's local deadline on the key, computed when scraped; 0 when not leading."
	helpLeadership  = "How long this instance's terms on the key lasted, observed when each ended."
	helpLeaderless  = "How long the key was seen without a holder before one appeared, as observed by this instance."
	helpStale       = "Writes a fence guard rejected because their fencing token was older than one it had accepted, by resource."
	helpCoordErrors = "Coordinator calls that failed (unreachable, timed out, refused), by operation; a key held by another node or a lost grant is not an error."
)

// newMetrics creates the collectors of New, unregistered.
func newMetrics(ns string, cl prometheus.Labels) *Metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl, Buckets: buckets}, labels)
	}
	m := &Metrics{
		isLeader:    gauge("is_leader", helpIsLeader, labelKey),
		leaderInfo:  gauge("leader_info", helpLeaderInfo, labelKey, labelHolder),
		token:       gauge("fencing_token", helpToken, labelKey),
		transitions: counter("transitions_total", helpTransitions, labelKey, labelReason),
		renew:       histogram("renew_duration_seconds", helpRenew, renewBuckets, labelKey, labelResult),
		lastRenew:   gauge("last_renew_timestamp_seconds", helpLastRenew, labelKey),
		leadership:  histogram("leadership_duration_seconds", helpLeadership, leadershipBuckets, labelKey),
		leaderless:  histogram("leaderless_seconds", helpLeaderless, leaderlessBuckets, labelKey),
		stale:       counter("stale_rejections_total", helpStale, labelResource),
		coordErrors: counter("coordinator_errors_total", helpCoordErrors, labelOp),
		keys:        make(map[string]*keyState),
	}
	m.lease = &leaseCollector{
		desc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "lease_remaining_seconds"), helpLease, []string{labelKey}, cl),
		m:    m,
	}
	return m
}

// leaseCollector reports tenure_lease_remaining_seconds from the live
// terms when scraped.
type leaseCollector struct {
	desc *prometheus.Desc
	m    *Metrics
}

// Describe sends the one description.
func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the time left on every key this instance has led.
func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for key, s := range c.m.keys {
		if !s.tracked {
			continue
		}
		left := 0.0
		if s.term != nil {
			left = max(s.term.Remaining().Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, left, key)
	}
}
