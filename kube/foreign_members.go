package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tenure-dev/tenure/internal/limits"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// A membership Lease that no member wrote as it stands (a
// leaseDurationSeconds longer than a day, which no join or renewal writes,
// a holder that is not a holder identity, or a name that is not the group's
// its group annotation names, as when it was moved to another group by
// hand, copied under another name, or its annotations removed) is no
// member: GroupMembers
// and GroupPartitions leave it and its partitions out. It may never expire,
// and claims do not take the partitions it owns while it is live, so
// ListForeign lists each such partition as a foreign record, and
// RemoveForeign of one deletes the membership Lease, which frees every
// partition it owns.

// foreignMembership says why membership record r is no member's as it
// stands; "" when a member wrote it.
func foreignMembership(r record) (why string, malformed bool) {
	var out []string
	if l := r.lease; l != nil { // nil: no record (see GroupPartitions)
		switch group, ok := l.Annotations[AnnotationGroup]; {
		case !ok:
			out = append(out, fmt.Sprintf("no %s annotation", AnnotationGroup))
		case !memberOf(l, group):
			out = append(out, fmt.Sprintf("a name that is not group %q's", group))
		}
	}
	if tenure.ValidateHolder(r.holder) != nil {
		out, malformed = append(out, "a holderIdentity that is not a holder identity"), true
	}
	if r.ttl > limits.MaxTTL {
		out = append(out, fmt.Sprintf("a leaseDurationSeconds of %d, longer than tenure grants", int64(r.ttl.Seconds())))
	}
	return strings.Join(out, ", "), malformed
}

// foreignOwner describes partition Lease l of key, read as p, when the
// live membership Lease that owns it (among members, by name) is no
// member's as it stands. Its token is l's resourceVersion.
func foreignOwner(key string, p record, members map[string]record, maxDrift float64) (tenure.ForeignRecord, bool) {
	name := ownerOf(p.lease)
	owner, ok := members[name]
	if name == "" || !ok || owner.holder != p.holder || !owner.live(maxDrift) {
		return tenure.ForeignRecord{}, false
	}
	why, malformed := foreignMembership(owner)
	if why == "" {
		return tenure.ForeignRecord{}, false
	}
	return tenure.ForeignRecord{Key: key, Holder: p.holder, Token: p.rv.n, TTL: owner.grant(key, maxDrift).TTL, Malformed: malformed,
		Reason: fmt.Sprintf("owned by a membership Lease that no member wrote as it stands (%s: %s)", name, why)}, true
}

// memberRecords reads the membership Leases among ls (see membership), by
// name.
func (c *Coordinator) memberRecords(ls []coordv1.Lease, at tenure.Instant) (map[string]record, error) {
	out := map[string]record{}
	for i := range ls {
		if l := &ls[i]; membership(l) {
			r, err := c.sight(l, at)
			if err != nil {
				return nil, fmt.Errorf("Lease %s: %w", l.Name, err)
			}
			out[l.Name] = r
		}
	}
	return out, nil
}

// removeForeignOwner deletes the membership Lease that owns partition
// Lease l, read for r, if it is still no member's as it stands (see
// foreignMembership), with a delete preconditioned on the version checked;
// it reports whether it did. handled is false when l is owned by no such
// membership.
func (c *Coordinator) removeForeignOwner(ctx context.Context, l *coordv1.Lease, r tenure.ForeignRecord) (handled, removed bool, err error) {
	name := ownerOf(l)
	if name == "" {
		return false, false, nil
	}
	m, err := c.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return true, false, err
	}
	owner, err := c.sight(m, tenure.Now())
	if err != nil {
		return true, false, err
	}
	p, err := c.sight(l, tenure.Now())
	if err != nil {
		return true, false, err
	}
	if _, ok := foreignOwner(r.Key, p, map[string]record{name: owner}, c.cfg.MaxDrift); !ok || owner.holder != r.Holder {
		return false, false, nil
	}
	err = c.deleteAt(ctx, owner)
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return true, false, nil
	case err != nil:
		return true, false, err
	}
	c.log.Info("foreign membership Lease removed", "key", r.Key, "lease", name, "holder", r.Holder, "reason", r.Reason)
	return true, true, nil
}

// foreignMemberships returns, as records of their groups' keys with
// Member set, the live membership Leases among members (by name) of the
// groups under prefix that no member wrote as they stand.
func foreignMemberships(members map[string]record, prefix string, maxDrift float64) []tenure.ForeignRecord {
	var out []tenure.ForeignRecord
	for name, r := range members {
		if f, ok := foreignMember(name, r, maxDrift); ok && strings.HasPrefix(f.Key, prefix) {
			out = append(out, f)
		}
	}
	return out
}

// foreignMember describes membership Lease name, read as r, when it is
// live and no member wrote it as it stands: a record of its group's key
// naming the member (the Lease's name when it has no holder).
func foreignMember(name string, r record, maxDrift float64) (tenure.ForeignRecord, bool) {
	group := r.lease.Annotations[AnnotationGroup]
	why, malformed := foreignMembership(r)
	if why == "" || !r.live(maxDrift) || tenure.ValidateKey(group) != nil {
		return tenure.ForeignRecord{}, false
	}
	return tenure.ForeignRecord{Key: group, Member: cmp.Or(r.holder, name), Holder: r.holder, Token: r.rv.n,
		TTL: r.grant(group, maxDrift).TTL, Malformed: malformed,
		Reason: fmt.Sprintf("a membership Lease that no member wrote as it stands (%s: %s)", name, why)}, true
}

// removeForeignMembership deletes the membership Lease of group r.Key that
// r names, if it is still at the resourceVersion r was read at (a delete
// preconditioned on it) and no member's, and reports whether it did. It
// lists every Lease of the namespace (one request): a membership Lease
// moved to another group by hand is not among its name's group's.
func (c *Coordinator) removeForeignMembership(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	list, err := c.leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	members, err := c.memberRecords(list.Items, tenure.Now())
	if err != nil {
		return false, err
	}
	for name, m := range members {
		f, ok := foreignMember(name, m, c.cfg.MaxDrift)
		if !ok || f.Key != r.Key || f.Member != r.Member || f.Token != r.Token {
			continue
		}
		err := c.deleteAt(ctx, m)
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		c.log.Info("foreign membership Lease removed", "group", r.Key, "lease", name, "member", r.Member, "reason", f.Reason)
		return true, nil
	}
	return false, nil
}

// strayPartition describes partition Lease p of key (see partitionOf) when
// no live membership owns it and its group has no live member that could
// claim it: its tenure.dev/member annotation names a membership Lease of
// another group (which owns nothing), one that does not exist, one held by
// another holder, or one expired on this coordinator's clock. A claim of
// its group would take such a partition (see freeOwner), but with no
// member to claim it Acquire refuses it for as long as the annotation
// stands (a key's Lease given the annotation by hand, a partition of a
// group nobody runs any more), so it is a record of its key, which never
// expires. members are the membership Leases by name, listed with p.
func strayPartition(key string, p record, members map[string]record, maxDrift float64) (tenure.ForeignRecord, bool) {
	group, _ := groupOfKey(key)
	for _, m := range members {
		if why, _ := foreignMembership(m); why == "" && memberOf(m.lease, group) && m.live(maxDrift) {
			return tenure.ForeignRecord{}, false // a member of the group claims it, or owns it
		}
	}
	named := p.lease.Annotations[AnnotationMember]
	owner, ok := members[named]
	var why string
	switch {
	case ownerOf(p.lease) == "":
		why = "a membership Lease of another group, which owns nothing"
	case !ok:
		why = "a membership Lease that does not exist"
	case p.holder == "" || owner.holder != p.holder:
		why = "a membership Lease held by another holder"
	case !owner.live(maxDrift):
		why = "a membership Lease that expired"
	default:
		return tenure.ForeignRecord{}, false // a live member's partition
	}
	return tenure.ForeignRecord{Key: key, Holder: p.holder, Token: p.rv.n, TTL: -1, Malformed: tenure.ValidateHolder(p.holder) != nil,
		Reason: fmt.Sprintf("annotation %s names %s, %s, and group %q has no live member", AnnotationMember, named, why, group)}, true
}

// removeStrayPartition deletes the partition Lease of r.Key if, on one
// list of every Lease of the namespace (the partition and the memberships
// of one moment), it is still at the resourceVersion r was read at and no
// live membership owns it (see strayPartition), and reports whether it did.
// An expired owner is first deleted as a claim deletes it (see freeOwner),
// preconditioned on the version that expired, so that its member can never
// renew it and believe the partition its own; then the partition's Lease,
// preconditioned on its resourceVersion.
func (c *Coordinator) removeStrayPartition(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	list, err := c.leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	at := tenure.Now()
	members, err := c.memberRecords(list.Items, at)
	if err != nil {
		return false, err
	}
	name := LeaseName(r.Key)
	i := slices.IndexFunc(list.Items, func(l coordv1.Lease) bool { return l.Name == name })
	if i < 0 {
		return false, nil
	}
	l := &list.Items[i]
	p, err := c.sight(l, at)
	if err != nil {
		return false, err
	}
	if key, ok := keyOf(l); !ok || key != r.Key || p.rv.n != r.Token {
		return false, nil // another write since: not the record r read
	}
	if _, ok := strayPartition(r.Key, p, members, c.cfg.MaxDrift); !ok {
		return false, nil
	}
	var held *tenure.HeldError
	switch err := c.freeOwner(ctx, p, members); {
	case errors.As(err, &held) || errors.Is(err, errConflict):
		return false, nil // its owner lives, or renewed since
	case err != nil:
		return false, err
	}
	pre := metav1.Preconditions{ResourceVersion: &l.ResourceVersion, UID: &l.UID}
	err = c.leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	c.unsee(name)
	c.log.Info("foreign partition Lease removed", "key", r.Key, "lease", name, "holder", r.Holder, "resource_version", r.Token, "reason", r.Reason)
	return true, nil
}
