package cli

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/partition"
)

// leaderTTL returns the TTL the leader of a key was granted, g being its
// grant as c.Leader returns it: on etcd the TTL of its lease, on Kubernetes
// the Lease's leaseDurationSeconds. A PostgreSQL row keeps when the lease
// ends, not its TTL: ok is false there.
func leaderTTL(ctx context.Context, c tenure.Coordinator, g tenure.Grant) (ttl time.Duration, ok bool) {
	switch c := c.(type) {
	case *etcd.Coordinator:
		return g.TTL, g.TTL > 0 // 0: the lease has just expired
	case *kube.Coordinator:
		l, err := c.Client().CoordinationV1().Leases(c.Namespace()).Get(ctx, kube.LeaseName(g.Key), metav1.GetOptions{})
		if err != nil || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
			return 0, false
		}
		return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second, true
	}
	return 0, false
}

// warnTTLDisagreement warns when g, the leader of a key this member
// campaigns for with TTL own, was granted another TTL than own would be
// (rounded up to whole seconds, as etcd and Kubernetes do). A follower
// takes over only once the leader's lease has run out: members that
// disagree take over at different speeds, and the shorter TTL promises
// what the longer one does not keep.
func warnTTLDisagreement(ctx context.Context, log *slog.Logger, c tenure.Coordinator, g tenure.Grant, own time.Duration) {
	theirs, ok := leaderTTL(ctx, c, g)
	if !ok {
		return
	}
	if mine := (own + time.Second - 1).Truncate(time.Second); theirs == mine {
		return
	}
	log.Warn("the leader's lease TTL differs from --ttl: a takeover waits for the leader's TTL",
		"key", g.Key, "leader", display.Holder(g.Holder), "leader_ttl", theirs, "ttl", own)
}

// warnGroupTTLDisagreement warns once when a live member of group runs
// with another TTL than own, this member's (as recorded: exactly, or
// rounded up to whole seconds by etcd and Kubernetes), naming both and
// counting the others; within timeout, and silently when the members
// cannot be read.
func warnGroupTTLDisagreement(ctx context.Context, log *slog.Logger, c partition.Coordinator, group string, own, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	members, err := c.GroupMembers(ctx, group)
	if err != nil {
		return
	}
	rounded := (own + time.Second - 1).Truncate(time.Second)
	var first *partition.Member
	others := 0
	for i, m := range members {
		if m.TTL == own || m.TTL == rounded {
			continue
		}
		if first == nil {
			first = &members[i]
		} else {
			others++
		}
	}
	if first != nil {
		log.Warn("a member of the group runs with another TTL than --ttl: takeovers wait for the longest",
			"key", group, "member", display.Holder(first.ID), "member_ttl", first.TTL, "ttl", own, "more_members_that_differ", others)
	}
}
