package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

var _ partition.Coordinator = (*Coordinator)(nil)

// Labels and annotations of partition groups' Leases. Users name them in
// kubectl selectors and their own tools that list a group's Leases. The
// labels are for people only: tenure decides what a Lease is (a key's, a
// partition's, a membership's) by its name and annotations, so a label
// removed or changed by hand changes nothing tenure does.
const (
	// LabelGroup is a hash of the group's key on its membership and
	// partition Leases (a label value cannot hold every key), so that
	// `kubectl get lease -l tenure.dev/group=HASH` lists a group.
	LabelGroup = "tenure.dev/group"
	// LabelRole is "member" on a membership Lease, "partition" on a
	// partition's.
	LabelRole = "tenure.dev/role"
	// AnnotationGroup carries the group's key on a membership Lease.
	AnnotationGroup = "tenure.dev/group"
	// AnnotationPartitions carries the partition count a member announced.
	AnnotationPartitions = "tenure.dev/partitions"
	// AnnotationMember names, on a partition's Lease, the membership Lease
	// of the member that owns it: the partition lives exactly as long as
	// that Lease.
	AnnotationMember = "tenure.dev/member"
)

// groupHash is the LabelGroup value of group.
func groupHash(group string) string {
	sum := sha256.Sum256([]byte(group))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// memberName is the name of the membership Lease of epoch in group: "tm-",
// the group's hash and the epoch, so that a Member names its Lease.
func memberName(group string, epoch uint64) string {
	return fmt.Sprintf("tm-%s-%016x", groupHash(group), epoch)
}

// JoinGroup creates a membership Lease of its own for id in group: a
// Lease held by id for ttl (whole seconds), with a random epoch in its
// name, the group's hash as a label and the partition count announced as
// an annotation. The Member's TTL is ttl rounded up to whole seconds, or
// the leaseDurationSeconds the server stored when that is shorter (an
// admission policy). See partition.Coordinator.
func (c *Coordinator) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	op := fmt.Sprintf("kube: join %q as %q", group, id)
	if err := inputs.Join(group, id, ttl, partitions); err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return partition.Member{}, err
	}
	secs := ttlSeconds(ttl)
	for range attempts {
		var b [8]byte
		_, _ = rand.Read(b[:])
		epoch := binary.BigEndian.Uint64(b[:]) | 1 // never 0
		now := metav1.NewMicroTime(time.Now())
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: memberName(group, epoch),
				Annotations: map[string]string{AnnotationGroup: group, AnnotationPartitions: strconv.Itoa(partitions)}},
			Spec: coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}
		labelAs(l, group, "member")
		sent := tenure.Now()
		out, err := c.leases.Create(ctx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue // the same random epoch: draw again
		}
		if err != nil {
			return partition.Member{}, fail(ctx, op, err)
		}
		r, err := c.sight(out, tenure.Now())
		if err != nil {
			return partition.Member{}, fmt.Errorf("%s: %w", op, err)
		}
		return partition.Member{Group: group, ID: id, Epoch: epoch, TTL: grantedTTL(time.Duration(secs)*time.Second, r), Sent: sent, Partitions: partitions}, nil
	}
	return partition.Member{}, fmt.Errorf("%s: no free epoch in %d draws", op, attempts)
}

// member reads m's membership Lease and returns its record; the error
// wraps tenure.ErrLost when m has left (its Lease is gone), expired on this
// coordinator's clock, or the Lease is not m's.
func (c *Coordinator) member(ctx context.Context, m partition.Member) (record, error) {
	name := memberName(m.Group, m.Epoch)
	l, err := c.leases.Get(ctx, name, metav1.GetOptions{})
	at := tenure.Now()
	if apierrors.IsNotFound(err) {
		c.unsee(name)
		return record{}, fmt.Errorf("%w: membership Lease %s is gone (left, or taken as expired)", tenure.ErrLost, name)
	}
	if err != nil {
		return record{}, err
	}
	r, err := c.sight(l, at)
	if err != nil {
		return record{}, err
	}
	return r, c.memberLive(r, m)
}

// memberLive reports, as an error wrapping tenure.ErrLost, why membership
// record r is not m live (its holder or group annotation is not m's, or it
// holds a key: edited by hand; it was deleted, and a finalizer keeps it
// terminating; or it expired, judged by m.TTL, never by the Lease's
// duration: see RenewMember); nil when it is. Its labels are not read (see
// roles.go). A deleted membership is over, finalizer or not: a claimer
// that deleted it as expired takes its partitions at once.
func (c *Coordinator) memberLive(r record, m partition.Member) error {
	switch {
	case r.lease.DeletionTimestamp != nil:
		return fmt.Errorf("%w: membership Lease %s was deleted (a finalizer keeps it until %v)", tenure.ErrLost, r.lease.Name, r.lease.Finalizers)
	case r.holder != m.ID || r.lease.Annotations[AnnotationGroup] != m.Group || r.lease.Name != memberName(m.Group, m.Epoch) || holdsKey(r.lease):
		return fmt.Errorf("%w: membership Lease %s holds %s of %q", tenure.ErrLost, r.lease.Name, display.Holder(r.holder), r.lease.Annotations[AnnotationGroup])
	case !r.liveFor(m.TTL, c.cfg.MaxDrift):
		return fmt.Errorf("%w: membership expired: resourceVersion %s unchanged for %s", tenure.ErrLost, r.rv.s, wait(m.TTL, c.cfg.MaxDrift))
	}
	return nil
}

// RenewMember extends m's lease, and so every partition m owns: one update
// of its membership Lease's renewTime, preconditioned on its
// resourceVersion, which also writes back m.TTL (rounded up to whole
// seconds) as leaseDurationSeconds and the labels JoinGroup wrote, if they
// were edited. The renewed Member's TTL is m.TTL, or the duration the
// server stored when that is shorter (an admission policy): never a
// duration read from the Lease, so that a leaseDurationSeconds edited by
// hand changes neither the member's deadline nor, after the renewal, the
// Lease (which would otherwise be listed as foreign, and freed, while its
// member renews). See partition.Coordinator.
func (c *Coordinator) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	op := fmt.Sprintf("kube: renew %s", m)
	if err := tenure.ValidateTTL(m.TTL); err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return partition.Member{}, err
	}
	cur, fresh := c.cached(memberName(m.Group, m.Epoch))
	fresh = fresh && c.memberLive(cur, m) == nil
	for range attempts {
		if !fresh {
			var err error
			if cur, err = c.member(ctx, m); err != nil {
				return partition.Member{}, fail(ctx, op, err)
			}
		}
		fresh = false
		l := cur.lease.DeepCopy()
		now := metav1.NewMicroTime(after(time.Now(), l.Spec.RenewTime))
		secs := ttlSeconds(m.TTL)
		l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, &secs
		labelAs(l, m.Group, "member")
		sent := tenure.Now()
		out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return partition.Member{}, fail(ctx, op, err)
		}
		r, err := c.sight(out, tenure.Now())
		if err != nil {
			return partition.Member{}, fmt.Errorf("%s: %w", op, err)
		}
		m.TTL, m.Sent = grantedTTL(m.TTL, r), sent
		return m, nil
	}
	return partition.Member{}, fmt.Errorf("%s: the membership Lease changed during each of %d attempts", op, attempts)
}

// LeaveGroup deletes m's membership Lease, preconditioned on its
// resourceVersion: every partition naming it is free at once. See
// partition.Coordinator.
func (c *Coordinator) LeaveGroup(ctx context.Context, m partition.Member) error {
	op := fmt.Sprintf("kube: leave %s", m)
	if err := c.begin(ctx, op); err != nil {
		return err
	}
	for range attempts {
		cur, err := c.member(ctx, m)
		if err != nil {
			if ctx.Err() == nil && isLost(err) {
				return nil // gone already
			}
			return fail(ctx, op, err)
		}
		err = c.deleteAt(ctx, cur)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fail(ctx, op, err)
		}
		return nil
	}
	return fmt.Errorf("%s: the membership Lease changed during each of %d attempts", op, attempts)
}

// deleteAt deletes the Lease of record r if it is still at r's
// resourceVersion.
func (c *Coordinator) deleteAt(ctx context.Context, r record) error {
	rv := r.rv.s
	err := c.leases.Delete(ctx, r.lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if err == nil || apierrors.IsNotFound(err) {
		c.unsee(r.lease.Name)
	}
	return err
}

// GroupMembers lists group's Leases (one request) and returns the live
// membership Leases of group, sorted by ID, each with the time left as
// TTL. See partition.Coordinator.
func (c *Coordinator) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	op := fmt.Sprintf("kube: members of %q", group)
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	members, _, err := c.listGroup(ctx, group, false)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	var out []partition.Member
	for _, r := range members {
		if why, _ := foreignMembership(r); why != "" || !r.live(c.cfg.MaxDrift) {
			continue // a foreign membership is no member: see foreignOwner
		}
		p, _ := strconv.Atoi(r.lease.Annotations[AnnotationPartitions])
		out = append(out, partition.Member{Group: group, ID: r.holder, Epoch: epochOf(r.lease.Name), TTL: r.ttl, Partitions: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// epochOf is the epoch in a membership Lease's name (0 if none).
func epochOf(name string) uint64 {
	if len(name) < 16 {
		return 0
	}
	e, _ := strconv.ParseUint(name[len(name)-16:], 16, 64)
	return e
}

// listGroup lists, in one request, the Leases labelled as group's, or with
// all every Lease of the namespace, and returns group's membership Leases
// among them by name (memberOf: named as group's, whatever their
// annotations say) and the Leases of group's partition keys by key (a
// partition's, or a single key's on a partition key). The label is a hint
// that keeps the list short: a Lease whose label was edited by hand is
// missing from it until its member's next write labels it again (see
// labelAs), so a claim reads an owner missing from it by name.
func (c *Coordinator) listGroup(ctx context.Context, group string, all bool) (members map[string]record, parts map[string]record, err error) {
	opts := metav1.ListOptions{LabelSelector: LabelGroup + "=" + groupHash(group)}
	if all {
		opts = metav1.ListOptions{}
	}
	list, err := c.leases.List(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	at := tenure.Now()
	members, parts = map[string]record{}, map[string]record{}
	for i := range list.Items {
		l := &list.Items[i]
		key, isKey := keyOf(l)
		of, isPart := groupOfKey(key)
		mine := memberOf(l, group)
		if !mine && (!isKey || !isPart || of != group) {
			continue
		}
		r, err := c.sight(l, at)
		if err != nil {
			return nil, nil, err
		}
		if mine {
			members[l.Name] = r
		} else {
			parts[key] = r
		}
	}
	return members, parts, nil
}
