package chaos

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// Liveness summarises recovery after faults.
type Liveness struct {
	// Recoveries are the times from each fault's heal to the next accepted
	// write, for faults followed by a write before the next fault.
	Recoveries []time.Duration `json:"recoveries"`
	P50        time.Duration   `json:"p50"`
	P99        time.Duration   `json:"p99"`
	Max        time.Duration   `json:"max"`
	// Bound is TTL + renew interval + retry period.
	Bound     time.Duration `json:"bound"`
	OverBound int           `json:"over_bound"`
	// NoLeaderShare is the share of the run with no term live.
	NoLeaderShare float64 `json:"no_leader_share"`
}

// Report is the verdict on one run.
type Report struct {
	Seed        uint64        `json:"seed"`
	Duration    time.Duration `json:"duration"`
	Nodes       int           `json:"nodes"`
	Coordinator string        `json:"coordinator"`
	TTL         time.Duration `json:"ttl"`
	Margin      time.Duration `json:"margin"`
	MaxDrift    float64       `json:"max_drift"`
	Plant       string        `json:"plant,omitempty"`
	Families    []string      `json:"families"`

	Origin int64 `json:"origin"`
	Finish int64 `json:"finish"`

	WritesAttempted int `json:"writes_attempted"`
	WritesAccepted  int `json:"writes_accepted"`
	WritesRejected  int `json:"writes_rejected"`
	WritesUnknown   int `json:"writes_unknown"`
	Reads           int `json:"reads"`
	// LateWritesAcrossPause counts the writes that were in flight across a
	// pause of their process and landed after their lease: no lease can
	// stop them, the register's fencing decided them.
	LateWritesAcrossPause int `json:"late_writes_across_pause"`
	// LateWritesRejected counts those of them the register rejected: a
	// newer token had written (the others were accepted: none had yet).
	LateWritesRejected int `json:"late_writes_rejected"`
	// late are the late writes across a pause, value → accepted, for the
	// timeline.
	late map[string]bool

	Faults []FaultRecord  `json:"faults"`
	Spans  []history.Span `json:"spans"`
	// RenewRoundTrips are the round trips of successful renewals.
	RenewRoundTrips RoundTrips `json:"renew_round_trips"`
	// LeaseRates are the slowest and fastest rates of a node clock that a
	// lease was counted at: {1, 1} when no clock was off.
	LeaseRates [2]float64 `json:"lease_rates"`
	// Rejections are the register's rejected writes.
	Rejections []history.Decision `json:"rejections"`
	// timeline holds the writes, renewals and local deadlines the HTML
	// report draws; it is left out of the JSON.
	timeline []point

	StaleWrites  history.Check `json:"stale_writes"`
	TokenOrder   history.Check `json:"token_order"`
	Overlap      history.Check `json:"overlap"`
	OverlapTotal time.Duration `json:"overlap_total"`
	LeaseOverrun history.Check `json:"lease_overrun"`
	Linearizable history.Check `json:"linearizability"`
	// LinearizabilityResult is porcupine's answer: Ok, Illegal or Unknown
	// (timed out).
	LinearizabilityResult string   `json:"linearizability_result"`
	Liveness              Liveness `json:"liveness"`
	NodeErrors            []string `json:"node_errors,omitempty"`

	// Partitions is the number of partitions of a partitioned run, 0 for a
	// single key. Every checker then judged each partition on its own;
	// its count is the sum over the partitions.
	Partitions int `json:"partitions,omitempty"`
	// PerPartition are the figures of each partition.
	PerPartition []PartitionFigures `json:"per_partition,omitempty"`
	// NotReowned names the partitions with no write accepted after the
	// last fault healed.
	NotReowned []string `json:"not_reowned,omitempty"`

	// Violations is the sum of the safety checkers' counts.
	Violations int `json:"violations"`
	// Inconclusive, when not empty, says why the run proved nothing (see
	// Conclusive).
	Inconclusive string `json:"inconclusive,omitempty"`
}

// OK reports whether every safety checker found nothing.
func (r *Report) OK() bool { return r.Violations == 0 }

// Checks returns the checkers in report order.
func (r *Report) Checks() []*history.Check {
	return []*history.Check{&r.StaleWrites, &r.TokenOrder, &r.Overlap, &r.LeaseOverrun, &r.Linearizable}
}

// Analyze runs every checker over h. In a partitioned run
// (Options.Partitions > 0), the checkers judge each partition's history on
// its own (partitionHistory) and the report sums their verdicts.
func Analyze(h *History) *Report {
	rep := newReport(h)
	rep.countWrites(h)
	rep.RenewRoundTrips = renewRoundTrips(h.Events)
	rep.LeaseRates = leaseRates(h.Events)
	if h.Options.Partitions > 0 {
		rep.analyzePartitions(h)
	} else {
		rep.analyzeKey(h)
	}
	for _, c := range rep.Checks() {
		if c.Safety {
			rep.Violations += c.Count
		}
	}
	rep.Inconclusive = rep.vacuity()
	rep.timeline = timeline(h, rep.late)
	return rep
}

// analyzeKey runs every checker over the history of one key.
func (rep *Report) analyzeKey(h *History) {
	rep.Spans = history.Spans(&h.History)
	rep.StaleWrites = history.CheckStaleWrites(&h.History)
	rep.TokenOrder = history.CheckTokenOrder(&h.History, rep.Spans)
	rep.Overlap, rep.OverlapTotal = history.CheckOverlap(&h.History, rep.Spans)
	rep.LeaseOverrun, rep.late = checkLeaseOverrun(h)
	rep.countLate()
	rep.Linearizable, rep.LinearizabilityResult = checkLinearizable(h)
	rep.Liveness = liveness(h, rep.Spans)
}

// newReport returns the report of h with the run's description filled in.
func newReport(h *History) *Report {
	o := h.Options
	rep := &Report{
		Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, TTL: o.TTL, Margin: o.Margin, MaxDrift: o.MaxDrift,
		Plant: o.Plant, Families: StrikingFamilies(o.Families, o.Members, o.KubeAPIServer != ""), Origin: h.Origin, Finish: h.Finish, Faults: h.Faults,
		NodeErrors: h.NodeErrors, Reads: len(h.Reads),
	}
	switch {
	case o.Postgres != "":
		rep.Coordinator = "postgres"
	case len(o.Endpoints) > 0:
		rep.Coordinator = "external etcd"
	case o.Kubeconfig != "":
		rep.Coordinator = "Kubernetes API server of kubeconfig " + o.Kubeconfig
	case o.KubeAPIServer != "":
		rep.Coordinator = fmt.Sprintf("kube-apiserver started by the run, on embedded etcd, %d member(s)", o.Members)
	default:
		rep.Coordinator = fmt.Sprintf("embedded etcd, %d member(s)", o.Members)
	}
	return rep
}

// RoundTrips summarises round-trip times.
type RoundTrips struct {
	P50 time.Duration `json:"p50"`
	Max time.Duration `json:"max"`
}

// renewRoundTrips summarises the round trips of successful renewals.
func renewRoundTrips(evs []history.Event) RoundTrips {
	var rtts []time.Duration
	for _, ev := range evs {
		if (ev.Kind == history.KindRenew || ev.Kind == history.KindRenewMember) && ev.OK {
			rtts = append(rtts, time.Duration(ev.At-ev.Sent))
		}
	}
	if len(rtts) == 0 {
		return RoundTrips{}
	}
	slices.Sort(rtts)
	return RoundTrips{P50: rtts[(len(rtts)-1)/2], Max: rtts[len(rtts)-1]}
}

// countWrites counts the writes attempted, accepted, rejected and of
// unknown outcome.
func (rep *Report) countWrites(h *History) {
	w := history.IndexWrites(h.Events)
	for v := range w.Starts {
		res, ok := w.Results[v]
		switch {
		case ok && res.Result == history.ResultRefused:
			continue
		case !ok || res.Result == history.ResultUnknown:
			rep.WritesUnknown++
		}
		rep.WritesAttempted++
	}
	for _, d := range h.Decisions {
		if d.Accepted {
			rep.WritesAccepted++
		} else {
			rep.WritesRejected++
			rep.Rejections = append(rep.Rejections, d)
		}
	}
}

// countLate counts the late writes across a pause, and those rejected.
func (rep *Report) countLate() {
	rep.LateWritesAcrossPause, rep.LateWritesRejected = len(rep.late), 0
	for _, accepted := range rep.late {
		if !accepted {
			rep.LateWritesRejected++
		}
	}
}
