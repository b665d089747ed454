package chaos

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxDetails bounds the events listed per checker.
const maxDetails = 20

// Check is one checker's verdict.
type Check struct {
	Name string `json:"name"`
	// Safety checkers must report 0; others are informational.
	Safety bool `json:"safety"`
	Count  int  `json:"count"`
	// Details lists the offending events (at most 20).
	Details []string `json:"details,omitempty"`
	// Marks place the offending events on the timeline (at most
	// maxMarks): those with a time and a node.
	Marks []Mark `json:"marks,omitempty"`
	Note  string `json:"note,omitempty"`
}

func (c *Check) add(format string, args ...any) {
	c.Count++
	if len(c.Details) < maxDetails {
		c.Details = append(c.Details, fmt.Sprintf(format, args...))
	}
}

// Span is one term as its node lived it: [Start, End] on the Mono clock,
// End being the earlier of the term's end and its local deadline.
type Span struct {
	Node   int    `json:"node"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	// How says how the term ended: expired, lost, fenced, resigned, killed, …
	How string `json:"how"`
	// Partition names the term's partition in a partitioned run.
	Partition string `json:"partition,omitempty"`
}

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
	// LateFenced counts writes that were in flight across a pause of their
	// process and landed after their lease: the register's fencing decided
	// them (accepted only when no newer token had written yet).
	LateWritesAcrossPause int `json:"late_writes_across_pause"`

	Faults []FaultRecord `json:"faults"`
	Spans  []Span        `json:"spans"`
	// RenewRoundTrips are the round trips of successful renewals.
	RenewRoundTrips RoundTrips `json:"renew_round_trips"`
	// LeaseRates are the slowest and fastest rates of a node clock that a
	// lease was counted at: {1, 1} when no clock was off.
	LeaseRates [2]float64 `json:"lease_rates"`
	// Rejections are the register's rejected writes.
	Rejections []Decision `json:"rejections"`
	// timeline holds the writes, renewals and local deadlines the HTML
	// report draws; it is left out of the JSON.
	timeline []point

	StaleWrites  Check         `json:"stale_writes"`
	TokenOrder   Check         `json:"token_order"`
	Overlap      Check         `json:"overlap"`
	OverlapTotal time.Duration `json:"overlap_total"`
	LeaseOverrun Check         `json:"lease_overrun"`
	Linearizable Check         `json:"linearizability"`
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
func (r *Report) Checks() []*Check {
	return []*Check{&r.StaleWrites, &r.TokenOrder, &r.Overlap, &r.LeaseOverrun, &r.Linearizable}
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
	rep.timeline = timeline(h)
	return rep
}

// analyzeKey runs every checker over the history of one key.
func (rep *Report) analyzeKey(h *History) {
	rep.Spans = Spans(h)
	rep.StaleWrites = CheckStaleWrites(h)
	rep.TokenOrder = CheckTokenOrder(h, rep.Spans)
	rep.Overlap, rep.OverlapTotal = CheckOverlap(h, rep.Spans)
	rep.LeaseOverrun, rep.LateWritesAcrossPause = checkLeaseOverrun(h)
	rep.Linearizable, rep.LinearizabilityResult = checkLinearizable(h)
	rep.Liveness = liveness(h, rep.Spans)
}

// newReport returns the report of h with the run's description filled in.
func newReport(h *History) *Report {
	o := h.Options
	rep := &Report{
		Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, TTL: o.TTL, Margin: o.Margin, MaxDrift: o.MaxDrift,
		Plant: o.Plant, Families: StrikingFamilies(o.Families, o.Members), Origin: h.Origin, Finish: h.Finish, Faults: h.Faults,
		NodeErrors: h.NodeErrors, Reads: len(h.Reads),
	}
	switch {
	case o.Postgres != "":
		rep.Coordinator = "postgres"
	case len(o.Endpoints) > 0:
		rep.Coordinator = "external etcd"
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
func renewRoundTrips(evs []Event) RoundTrips {
	var rtts []time.Duration
	for _, ev := range evs {
		if (ev.Kind == kindRenew || ev.Kind == kindRenewMember) && ev.OK {
			rtts = append(rtts, time.Duration(ev.At-ev.Sent))
		}
	}
	if len(rtts) == 0 {
		return RoundTrips{}
	}
	slices.Sort(rtts)
	return RoundTrips{P50: rtts[(len(rtts)-1)/2], Max: rtts[len(rtts)-1]}
}

// writeOps pairs every write's start event with its result event, by value.
type writeOps struct {
	starts, results map[string]Event
}

func indexWrites(evs []Event) writeOps {
	w := writeOps{starts: map[string]Event{}, results: map[string]Event{}}
	for _, ev := range evs {
		switch ev.Kind {
		case kindWriteStart:
			w.starts[ev.Value] = ev
		case kindWrite:
			w.results[ev.Value] = ev
		}
	}
	return w
}

// countWrites counts the writes attempted, accepted, rejected and of
// unknown outcome.
func (rep *Report) countWrites(h *History) {
	w := indexWrites(h.Events)
	for v := range w.starts {
		res, ok := w.results[v]
		switch {
		case ok && res.Result == resultRefused:
			continue
		case !ok || res.Result == resultUnknown:
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

// rel returns t as seconds since the start of h.
func (h *History) rel(t int64) float64 { return float64(t-h.Origin) / 1e9 }

// CheckStaleWrites reports every write the register accepted with a token
// lower than one it had accepted before.
func CheckStaleWrites(h *History) Check {
	c := Check{Name: "stale writes accepted", Safety: true}
	starts := indexWrites(h.Events).starts
	var highest uint64
	for _, d := range h.Decisions {
		if !d.Accepted {
			continue
		}
		if d.Token < highest {
			c.addAt(d.At, writerNode(starts, d.Value), "%.3fs: write %s with token %d accepted (%s path) after token %d", h.rel(d.At), d.Value, d.Token, d.Path, highest)
		}
		highest = max(highest, d.Token)
	}
	return c
}

// byStart returns spans sorted by start.
func byStart(spans []Span) []Span {
	s := slices.Clone(spans)
	slices.SortStableFunc(s, func(a, b Span) int { return cmpInt(a.Start, b.Start) })
	return s
}

// CheckTokenOrder reports every term that began after another had ended
// without a greater token.
func CheckTokenOrder(h *History, spans []Span) Check {
	c := Check{Name: "token order", Safety: true}
	s := byStart(spans)
	for i, b := range s {
		for _, a := range s[:i] {
			if a.End < b.Start && b.Token <= a.Token {
				c.addAt(b.Start, b.Node, "%s began term %d at %.3fs after %s's term %d ended at %.3fs", b.Holder, b.Token, h.rel(b.Start), a.Holder, a.Token, h.rel(a.End))
			}
		}
	}
	return c
}

// CheckOverlap reports every two terms of different tokens whose spans
// overlap, and the overlapping time in all.
func CheckOverlap(h *History, spans []Span) (Check, time.Duration) {
	c := Check{Name: "safe-lease overlap", Safety: true}
	var total time.Duration
	s := byStart(spans)
	for i, a := range s {
		for _, b := range s[i+1:] {
			if b.Start >= a.End {
				break
			}
			if a.Token == b.Token {
				continue
			}
			d := time.Duration(min(a.End, b.End) - b.Start)
			total += d
			c.addAt(b.Start, b.Node, "%s (token %d) led %.3fs–%.3fs and %s (token %d) led %.3fs–%.3fs: %s overlap",
				a.Holder, a.Token, h.rel(a.Start), h.rel(a.End), b.Holder, b.Token, h.rel(b.Start), h.rel(b.End), d.Round(time.Millisecond))
		}
	}
	return c, total
}

// leaseKey names one term of one holder.
type leaseKey struct {
	holder string
	token  uint64
}

// lease is one successful acquire or renewal.
type lease struct {
	sent, reply int64
	ttl         time.Duration
	// rate is the rate of the node's clock the lease was counted on
	// (0: a true clock).
	rate float64
}

// leasesOf returns every successful acquire and renewal, per term.
func leasesOf(evs []Event) map[leaseKey][]lease {
	out := map[leaseKey][]lease{}
	for _, ev := range evs {
		if (ev.Kind == kindAcquire || ev.Kind == kindRenew) && ev.OK {
			k := leaseKey{ev.Holder, ev.Token}
			out[k] = append(out[k], lease{ev.Sent, ev.At, ev.TTL, ev.Rate})
		}
	}
	return out
}

// leaseEnd is the earliest the coordinator may expire the term's lease, as
// known at time at: the end of the last lease whose reply came by then
// (see end). It returns math.MinInt64 when no lease is known.
func leaseEnd(ls []lease, at int64, maxDrift float64) int64 {
	end := int64(math.MinInt64)
	for _, l := range ls {
		if l.reply <= at {
			end = max(end, l.end(maxDrift))
		}
	}
	return end
}

// end is the earliest the coordinator may expire l. The design assumes
// the coordinator's clock runs at most maxDrift faster than the node's:
// while clock rates stay within that bound, the lease may end
// TTL·(1−maxDrift) after its send on the node's clock, which is
// TTL·(1−maxDrift)/rate in real time for a node clock running at rate (1
// for a true clock, the run's clock faults set others). It never ends
// later than the TTL the real coordinator keeps on this machine's clock:
// a node clock slower than the bound allows is judged against the lease
// the coordinator really keeps.
func (l lease) end(maxDrift float64) int64 {
	rate := l.rate
	if rate == 0 {
		rate = 1
	}
	return l.sent + int64(float64(l.ttl)*min(1, (1-maxDrift)/rate))
}

// checkLeaseOverrun reports every accepted write that landed after the
// lease its writer was acting on could have expired. Writes in flight
// across a pause of their process are not counted, only returned: no lease
// can stop them, fencing decides them.
func checkLeaseOverrun(h *History) (c Check, acrossPause int) {
	c = Check{Name: "lease overrun", Safety: true}
	starts := indexWrites(h.Events).starts
	leases := leasesOf(h.Events)
	for _, d := range h.Decisions {
		ws, ok := starts[d.Value]
		if !d.Accepted || !ok {
			continue
		}
		end := leaseEnd(leases[leaseKey{ws.Holder, ws.Token}], d.At, h.Options.MaxDrift)
		switch {
		case d.At <= end:
		case pausedDuring(h.Pauses[ws.Holder], ws.At, d.At):
			acrossPause++
		case end == math.MinInt64:
			c.addAt(d.At, ws.Node, "%.3fs: write %s (token %d) accepted with no lease known for it", h.rel(d.At), d.Value, d.Token)
		default:
			c.addAt(d.At, ws.Node, "%.3fs: write %s (token %d, sent %.3fs) landed %s after its lease could have expired (%.3fs)",
				h.rel(d.At), d.Value, d.Token, h.rel(ws.At), time.Duration(d.At-end).Round(time.Millisecond), h.rel(end))
		}
	}
	return c, acrossPause
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pausedDuring(ws [][2]int64, from, to int64) bool {
	for _, w := range ws {
		if w[0] <= to && from <= w[1] {
			return true
		}
	}
	return false
}

// Spans rebuilds every term from the node events: from its elected event
// to the earlier of its end event and the local deadline that event carries;
// a term with no end ends when its process was killed, or at the end of
// the run.
func Spans(h *History) []Span {
	type k struct {
		holder string
		token  uint64
	}
	idx := map[k]int{}
	var out []Span
	last := map[string]int64{} // holder → its last event
	for _, ev := range h.Events {
		last[ev.Holder] = max(last[ev.Holder], ev.At)
		switch ev.Kind {
		case KindElected:
			idx[k{ev.Holder, ev.Token}] = len(out)
			out = append(out, Span{Node: ev.Node, Holder: ev.Holder, Token: ev.Token, Start: ev.At})
		case kindTransition:
			if i, ok := idx[k{ev.Holder, ev.Token}]; ok && out[i].How == "" {
				out[i].How = ev.Result
			}
		case KindEnd:
			if i, ok := idx[k{ev.Holder, ev.Token}]; ok {
				end := ev.At
				if ev.Deadline != 0 && ev.Deadline < end {
					end = ev.Deadline
				}
				out[i].End = end
			}
		}
	}
	for i := range out {
		s := &out[i]
		if s.End != 0 {
			continue
		}
		if at, ok := h.Kills[s.Holder]; ok {
			s.End, s.How = at, "killed"
		} else {
			s.End = max(last[s.Holder], h.Finish)
			if s.How == "" {
				s.How = "running at the end"
			}
		}
	}
	return out
}

// liveness measures recovery after each fault and the time without a
// leader.
func liveness(h *History, sp []Span) Liveness {
	l := recoveries(h, func(from int64) int64 { return firstAccepted(h.Decisions, from) })
	if total := h.Finish - h.Origin; total > 0 {
		l.NoLeaderShare = 1 - float64(covered(sp, h.Origin, h.Finish))/float64(total)
	}
	return l
}

// recoveries returns the liveness figures of h but NoLeaderShare: the time
// from each fault's heal to writtenAt(heal), when a write is accepted again
// (math.MaxInt64: never), for faults followed by that write before the
// next fault.
func recoveries(h *History, writtenAt func(from int64) int64) Liveness {
	o := h.Options
	l := Liveness{Bound: o.TTL + o.TTL/3 + o.TTL/10}
	for i, f := range h.Faults {
		next := int64(math.MaxInt64)
		if i+1 < len(h.Faults) {
			next = h.Faults[i+1].Start
		}
		if at := writtenAt(f.End); at != math.MaxInt64 && at <= next {
			l.Recoveries = append(l.Recoveries, time.Duration(at-f.End))
		}
	}
	l.summarize()
	return l
}

// covered returns how much of [from, to] lies within some span.
func covered(sp []Span, from, to int64) int64 {
	iv := make([][2]int64, 0, len(sp))
	for _, s := range sp {
		a, b := max(s.Start, from), min(s.End, to)
		if b > a {
			iv = append(iv, [2]int64{a, b})
		}
	}
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmpInt(a[0], b[0]) })
	var sum, curA, curB int64
	curA, curB = -1, -1
	for _, x := range iv {
		if curB < 0 || x[0] > curB {
			if curB >= 0 {
				sum += curB - curA
			}
			curA, curB = x[0], x[1]
		} else {
			curB = max(curB, x[1])
		}
	}
	if curB >= 0 {
		sum += curB - curA
	}
	return sum
}

// Linearizability model: a fenced register.
type regState struct {
	token uint64
	value string
}

type regInput struct {
	write bool
	token uint64
	value string
}

type regOutput struct {
	outcome string // write: accepted, rejected, unknown; read: ""
	token   uint64
	value   string
}

var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		if !in.write {
			if out.token == st.token && out.value == st.value {
				return []interface{}{st}
			}
			return nil
		}
		next := regState{token: in.token, value: in.value}
		fresh := in.token >= st.token && in.token > 0
		switch out.outcome {
		case resultAccepted:
			if fresh {
				return []interface{}{next}
			}
			return nil
		case resultUnknown:
			if fresh {
				return []interface{}{st, next}
			}
			return []interface{}{st}
		default:
			if !fresh {
				return []interface{}{st}
			}
			return nil
		}
	},
	Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		if in.write {
			return fmt.Sprintf("write(%d, %s) → %s", in.token, in.value, out.outcome)
		}
		return fmt.Sprintf("read() → (%d, %s)", out.token, out.value)
	},
}

// checkLinearizable checks the register history with porcupine: writes
// whose outcome their writer never learned are modelled as unknown (they
// may or may not have taken effect). It returns the check and porcupine's
// answer. A history porcupine cannot decide within
// Options.CheckTimeout counts as a violation: no verdict is not a pass.
func checkLinearizable(h *History) (Check, string) {
	c := Check{Name: "linearizability", Safety: true}
	ops := registerOps(h)
	res := porcupine.CheckOperationsTimeout(registerModel.ToModel(), ops, h.Options.CheckTimeout)
	switch res {
	case porcupine.Illegal:
		c.add("the register history of %d operations is not linearizable", len(ops))
	case porcupine.Unknown:
		c.add("porcupine found no verdict within %s on %d operations: the history is unchecked (raise the check timeout, or shorten the run)", h.Options.CheckTimeout, len(ops))
	default:
		c.Note = fmt.Sprintf("%d operations", len(ops))
	}
	return c, string(res)
}

// registerOps turns the writes and reads of h into porcupine operations.
func registerOps(h *History) []porcupine.Operation {
	w := indexWrites(h.Events)
	var ops []porcupine.Operation
	end := h.Finish + int64(time.Hour)
	for v, ws := range w.starts {
		res, ok := w.results[v]
		if ok && res.Result == resultRefused {
			continue
		}
		op := porcupine.Operation{ClientId: ws.Node, Input: regInput{write: true, token: ws.Token, value: v}, Call: ws.At}
		switch {
		case !ok || res.Result == resultUnknown:
			op.Output, op.Return = regOutput{outcome: resultUnknown}, end
		case res.Result == resultAccepted:
			op.Output, op.Return = regOutput{outcome: resultAccepted}, res.At
		default:
			op.Output, op.Return = regOutput{outcome: resultRejected}, res.At
		}
		ops = append(ops, op)
	}
	for _, r := range h.Reads {
		if r.OK {
			ops = append(ops, porcupine.Operation{ClientId: h.Options.Nodes, Input: regInput{}, Output: regOutput{token: r.Token, value: r.Value}, Call: r.Call, Return: r.Return})
		}
	}
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmpInt(a.Call, b.Call) })
	return ops
}
