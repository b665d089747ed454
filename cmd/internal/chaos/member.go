package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/partition"
)

// groupConfig returns the partition group configuration the spec describes
// (for a spec with Partitions > 0): the elector's lease settings, the
// spec's key as the group, Partitions partitions named "0" to "P−1".
func (s NodeSpec) groupConfig() partition.Config {
	cfg := partition.DefaultConfig()
	cfg.Config = s.electorConfig()
	cfg.Partitions = s.Partitions
	return cfg
}

// runMember runs one member of the spec's partition group on base, on the
// node's clock, until ctx ends, writing to each owned partition's resource
// of the register.
func runMember(ctx context.Context, spec NodeSpec, base partition.Coordinator, clock *nodeClock, w *writer) error {
	cfg := spec.groupConfig()
	cfg.OnTransition = w.transition
	c := plant.WrapGroup(groupRecorder{plant.GroupPassthrough{Group: base}, w.out}, spec.Plant, cfg.Config)
	grp, err := partition.New(clockedGroup{plant.GroupPassthrough{Group: c}, newNodeTime(clock, cfg.Config, spec.Plant)}, cfg)
	if err != nil {
		return err
	}
	return grp.Run(ctx, w.leadPartition)
}

// leadPartition is the group's partition function: write to p's resource
// every WriteEvery until the term ends. A write the register rejects as
// stale steps the partition down.
func (w *writer) leadPartition(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	context.AfterFunc(t.Context(), func() {
		w.out.emit(history.Event{Kind: history.KindEnd, Token: t.Token(), Deadline: monoOf(t.Deadline()), Partition: p.Name})
	})
	tick := time.NewTicker(w.spec.WriteEvery)
	defer tick.Stop()
	for {
		if t.Check() != nil {
			return nil
		}
		if stale := w.write(ctx, t, p.Name); stale {
			return fmt.Errorf("chaos: partition %s, token %d: %w", p.Name, t.Token(), tenure.ErrStaleToken)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// groupRecorder reports every membership call with its send and reply
// times, the TTL the coordinator really granted and the rate of the node's
// clock its lease is counted at (as recorder does), and every partition a
// claim granted.
type groupRecorder struct {
	plant.GroupPassthrough
	out *eventWriter
}

// member reports a membership call made with ctx.
func (c groupRecorder) member(ctx context.Context, kind string, sent int64, m partition.Member, err error) {
	ev := history.Event{Kind: kind, Sent: sent, OK: err == nil, Epoch: m.Epoch, TTL: m.TTL, Lost: errors.Is(err, tenure.ErrLost), Rate: rateOf(ctx)}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
}

func (c groupRecorder) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	ctx, ws := withSends(ctx)
	sent := Mono()
	m, err := c.Group.JoinGroup(ctx, group, id, ttl, partitions)
	c.member(ctx, history.KindJoin, ws.start(sent), m, err)
	return m, err
}

func (c groupRecorder) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	ctx, ws := withSends(ctx)
	sent := Mono()
	r, err := c.Group.RenewMember(ctx, m)
	if err != nil {
		r = partition.Member{Epoch: m.Epoch}
	}
	c.member(ctx, history.KindRenewMember, ws.start(sent), r, err)
	return r, err
}

func (c groupRecorder) LeaveGroup(ctx context.Context, m partition.Member) error {
	sent := Mono()
	err := c.Group.LeaveGroup(ctx, m)
	c.member(ctx, history.KindLeave, sent, partition.Member{Epoch: m.Epoch}, err)
	return err
}

func (c groupRecorder) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	sent := Mono()
	res, err := c.Group.ClaimPartitions(ctx, m, names)
	at := Mono()
	for i, cr := range res {
		if cr.Err == nil && i < len(names) {
			c.out.emit(history.Event{Kind: history.KindClaim, Sent: sent, At: at, OK: true, Partition: names[i], Token: cr.Grant.Token, Epoch: m.Epoch, TTL: cr.Grant.TTL})
		}
	}
	return res, err
}
