package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/plant"
)

// slowClockLate is how far past its lease the slow-clock plant puts a
// node's local deadline, as a share of the TTL.
const slowClockLate = 0.25

// slowClockRate is the rate of a node clock under the slow-clock plant:
// slower than any MaxDrift allows by more than the margin absorbs, so that
// the local deadline, SafeLease(TTL) on the node's clock, falls
// (1 + slowClockLate)·TTL after the send in real time.
func slowClockRate(cfg tenure.Config) float64 {
	return float64(timing.SafeLease(cfg.TTL, cfg.MaxDrift, cfg.Margin)) / ((1 + slowClockLate) * float64(cfg.TTL))
}

// nodeTime applies a node's own clock to the leases its coordinator
// wrappers (clocked, clockedGroup) hand to the Elector or partition
// member above them, with the clock plants of spec.Plant.
type nodeTime struct {
	clock *nodeClock
	cfg   tenure.Config
	bug   string

	mu      sync.Mutex
	anchors map[uint64]clockCall // the wall-clock plant's reading of both clocks at each term's or membership's first request
}

func newNodeTime(clock *nodeClock, cfg tenure.Config, bug string) *nodeTime {
	return &nodeTime{clock: clock, cfg: cfg, bug: bug, anchors: map[uint64]clockCall{}}
}

// clockCall is the node's clock as a lease request went out: the rate the
// lease is counted at, and the wall and monotonic clocks read together.
type clockCall struct {
	rate       float64
	wall, mono time.Time
}

// begin reads the node's clock as a lease request goes out. Under the
// slow-clock plant, the clock runs at slowClockRate while a clock fault is
// in force, whatever rate the fault set.
func (n *nodeTime) begin() clockCall {
	c := n.clock.get()
	rate := c.rate()
	if n.bug == plant.SlowClock && c.On {
		rate = slowClockRate(n.cfg)
	}
	return clockCall{rate: rate, wall: n.clock.wallNow(), mono: time.Now()}
}

// sent returns the Sent of a lease of ttl that the coordinator reported
// sent for the request read at call, as the node's clock places it: moved
// so that the local deadline, Sent + SafeLease(ttl), falls SafeLease(ttl)
// divided by the clock's rate after the send, as it does on a clock running
// at that rate. id names the term (its token) or the membership (its
// epoch) for the wall-clock plant, which reads the send on the wall clock
// and converts it to the monotonic clock with the offset between the two
// that it measured at the first request of id: a wall clock that has
// jumped forward since moves Sent, and the deadline, forward by the jump.
func (n *nodeTime) sent(id uint64, sent tenure.Instant, ttl time.Duration, call clockCall) tenure.Instant {
	safe := timing.SafeLease(ttl, n.cfg.MaxDrift, n.cfg.Margin)
	sent = sent.Add(time.Duration(float64(safe)/call.rate) - safe)
	if n.bug != plant.WallClock {
		return sent
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.anchors[id]
	if !ok {
		a = call
		n.anchors[id] = a
	}
	return sent.Add(call.wall.Sub(a.wall) - call.mono.Sub(a.mono))
}

// rateKey carries in a call's context the rate its lease is counted at,
// from clocked (above the plants) to the recorder (below them).
type rateKey struct{}

func withRate(ctx context.Context, rate float64) context.Context {
	return context.WithValue(ctx, rateKey{}, rate)
}

// rateOf returns the rate withRate put in ctx, or 0 (a true clock).
func rateOf(ctx context.Context) float64 {
	r, _ := ctx.Value(rateKey{}).(float64)
	return r
}

// clocked is the coordinator of a node's Elector as the node's own clock
// sees it (nodeTime.sent), with the clock plants.
type clocked struct {
	plant.Passthrough
	t *nodeTime
}

func (c clocked) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	call := c.t.begin()
	g, err := c.Coordinator.Acquire(withRate(ctx, call.rate), key, holder, ttl)
	if err == nil {
		g.Sent = c.t.sent(g.Token, g.Sent, g.TTL, call)
	}
	return g, err
}

func (c clocked) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	call := c.t.begin()
	r, err := c.Coordinator.Renew(withRate(ctx, call.rate), g)
	if err == nil {
		r.Sent = c.t.sent(g.Token, r.Sent, r.TTL, call)
	}
	return r, err
}

// clockedGroup is the coordinator of a node's partition group member as
// the node's own clock sees it: clocked, applied to the membership whose
// lease every owned partition shares.
type clockedGroup struct {
	plant.GroupPassthrough
	t *nodeTime
}

func (c clockedGroup) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	call := c.t.begin()
	m, err := c.Group.JoinGroup(withRate(ctx, call.rate), group, id, ttl, partitions)
	if err == nil {
		m.Sent = c.t.sent(m.Epoch, m.Sent, m.TTL, call)
	}
	return m, err
}

func (c clockedGroup) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	call := c.t.begin()
	r, err := c.Group.RenewMember(withRate(ctx, call.rate), m)
	if err == nil {
		r.Sent = c.t.sent(m.Epoch, r.Sent, r.TTL, call)
	}
	return r, err
}
