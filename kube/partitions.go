package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// parallel bounds how many requests a batch call has in flight: the API
// server has no request that writes several objects.
const parallel = 32

// forEach calls f(i) for i in [0, n), at most parallel at a time, and
// waits for them.
func forEach(n int, f func(i int)) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// isLost reports whether err says a grant or membership is lost.
func isLost(err error) bool { return errors.Is(err, tenure.ErrLost) }

// ClaimPartitions claims the named partitions of m's group: it reads m's
// membership Lease and lists the group's Leases (two requests), then
// writes only the partitions whose ownership changes, each in a request of
// its own (at most 32 at once): an update preconditioned on the
// partition's resourceVersion that names m's membership Lease, after a
// create of the Lease empty when there is none. The token is one more than
// that resourceVersion, written by the same update in AnnotationToken (see
// take). A partition whose owner's
// membership expired on this coordinator's clock is taken only after that
// membership Lease is deleted, preconditioned on the resourceVersion that
// expired, so that its member can never renew it again; so is a
// membership that expired and owns nothing (a crashed member's). See
// partition.Coordinator.
func (c *Coordinator) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	op := fmt.Sprintf("kube: claim %d partitions for %s", len(names), m)
	for _, n := range names {
		if err := validPartition(m.Group, n); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	me, err := c.member(ctx, m)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	members, parts, err := c.listGroup(ctx, m.Group, false)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	out := make([]partition.ClaimResult, len(names))
	forEach(len(names), func(i int) {
		key := partition.Key(m.Group, names[i])
		p, found := parts[key]
		g, err := c.claim(ctx, m, me, key, p, found, members)
		out[i] = partition.ClaimResult{Grant: g, Err: err}
	})
	c.deleteIdle(ctx, members, parts)
	return out, nil
}

// deleteIdle deletes the membership Leases, as listed in members, that
// expired on this coordinator's clock and own no partition in parts (a
// crashed member's): each preconditioned on the version that expired, so
// that a member that renewed since keeps its Lease. A member that owns
// partitions is deleted by the claim that takes them. Errors are left for
// the next claim.
func (c *Coordinator) deleteIdle(ctx context.Context, members, parts map[string]record) {
	owning := map[string]bool{}
	for _, p := range parts {
		if name := ownerOf(p.lease); name != "" && p.holder != "" && members[name].holder == p.holder {
			owning[name] = true
		}
	}
	for name, r := range members {
		if owning[name] || r.live(c.cfg.MaxDrift) {
			continue
		}
		if err := c.deleteAt(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			c.log.Debug("delete an expired membership", "lease", name, "err", err)
		}
	}
}

func validPartition(group, name string) error {
	if err := inputs.PartitionName(name); err != nil {
		return err
	}
	return inputs.Group(group, len(name))
}

// claim claims partition key for m, whose membership is me, deciding first
// on p (found: the partition's Lease exists) and the group's memberships as
// listed, then, after a conflict, on fresh reads. Every decision is made
// by a write preconditioned on the version it was decided on, so a read
// that is out of date (a cache behind the server) costs a retry, never a
// second owner: a new owner's write, or the preconditioned delete of an
// expired membership. A partition already m's is taken again, with a new
// token, as a free one is.
func (c *Coordinator) claim(ctx context.Context, m partition.Member, me record, key string, p record, found bool, members map[string]record) (tenure.Grant, error) {
	reread, complete := false, false // complete: members lists every membership (not by label)
	for range attempts {
		if reread {
			var err error
			if p, found, err = c.get(ctx, key); err != nil {
				return tenure.Grant{}, err
			}
			members = nil // read the owner's membership afresh
		}
		reread = true
		if !found {
			var err error
			if p, err = c.createPartition(ctx, m.Group, key); apierrors.IsAlreadyExists(err) {
				continue
			} else if err != nil {
				return tenure.Grant{}, err
			}
		}
		if _, part := partitionOf(p.lease); !part && p.live(c.cfg.MaxDrift) {
			// A single key's Lease (tenure.Elector's, client-go's), or a
			// partition's whose member annotation was edited away: its
			// holder keeps it until it expires.
			return tenure.Grant{}, p.heldError(key)
		}
		var err error
		if p.holder != m.ID || p.lease.Annotations[AnnotationMember] != me.lease.Name {
			listed := members
			if _, ok := members[ownerOf(p.lease)]; !ok && !complete {
				listed = nil // not among those labelled as the group's: read it by name
			}
			err = c.freeOwner(ctx, p, listed)
		} // else m's, as read: taken again with a new token (see partition.Coordinator)
		if errors.Is(err, errUnsure) {
			// The owner's membership read as gone: decide on one
			// listing of every Lease, where the partition and the
			// memberships are of one moment, whatever their labels.
			var parts map[string]record
			if members, parts, err = c.listGroup(ctx, m.Group, true); err != nil {
				return tenure.Grant{}, err
			}
			p, found = parts[key]
			reread, complete = false, true
			continue
		}
		if err != nil {
			if errors.Is(err, errConflict) {
				continue
			}
			return tenure.Grant{}, err
		}
		g, err := c.takePartition(ctx, m, me, key, p)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		return g, err
	}
	return tenure.Grant{}, fmt.Errorf("partition %q changed during each of %d attempts", key, attempts)
}

// confirm checks that Lease record r is the Lease's current version with
// an update of r preconditioned on its resourceVersion, and returns the
// record the server replied with. When mine, r holds a grant of this
// coordinator's member: the update writes r's token bound to it in
// AnnotationToken, which the granting write wrote already (a grant of an
// older tenure, which wrote it at the first check, gets it here), and
// the labels tenure writes, which an edit may have changed. The update
// changes nothing when both are there already: the API server then writes
// nothing and answers with the current version, or with a conflict
// (NotFound when the Lease is gone).
func (c *Coordinator) confirm(ctx context.Context, r record, mine bool) (record, error) {
	l := r.lease.DeepCopy()
	if mine && r.holder != "" && l.Spec.AcquireTime != nil {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationToken] = tokenAnnotation(r.token, l.Spec.AcquireTime.Time, r.holder)
		if key, _ := keyOf(l); key != "" {
			group, _ := groupOfKey(key)
			labelAs(l, group, "partition")
		}
	}
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return record{}, err
	}
	got, err := c.sight(out, tenure.Now())
	if err == nil && mine && got.token != r.token {
		err = fmt.Errorf("%w: Lease %s: confirming token %d wrote token %d", ErrIncomparable, l.Name, r.token, got.token)
	}
	return got, err
}

// errConflict says a membership changed under a claim: decide again.
var errConflict = errors.New("kube: membership changed")

// errUnsure says a read of its own found the owner's membership gone: a
// read that may be older than the partition's, so decide on a listing.
var errUnsure = errors.New("kube: membership read as gone")

// freeOwner checks that the owner of partition p, if any, is gone: nil
// when p is free or its owner's membership Lease is gone (after deleting
// it, when it expired on this coordinator's clock); a *tenure.HeldError
// when its owner lives; errConflict when the membership changed meanwhile;
// errUnsure when members is nil and a read of the owner's membership found
// it gone. members are the group's memberships as listed (nil: read the
// owner's).
func (c *Coordinator) freeOwner(ctx context.Context, p record, members map[string]record) error {
	name := ownerOf(p.lease)
	if p.holder == "" || name == "" {
		return nil // free, an expired key's Lease, or owned by no member of the group
	}
	owner, ok := members[name]
	if members == nil {
		l, err := c.leases.Get(ctx, name, metav1.GetOptions{})
		at := tenure.Now()
		switch {
		case apierrors.IsNotFound(err):
			return errUnsure
		case err != nil:
			return err
		default:
			if owner, err = c.sight(l, at); err != nil {
				return err
			}
			ok = true
		}
	}
	if !ok || owner.holder != p.holder {
		return nil // left, or taken as expired
	}
	if owner.live(c.cfg.MaxDrift) {
		return &tenure.HeldError{Key: p.lease.Annotations[AnnotationKey], Holder: p.holder, Token: p.token}
	}
	// Expired here: end the membership for good before taking anything of
	// it, preconditioned on the version that expired (a renewal since
	// makes this a conflict, and the member lives).
	if err := c.deleteAt(ctx, owner); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return errConflict
		}
		return err
	}
	return nil
}

// partitionGrant is m's grant of partition key with token.
func (c *Coordinator) partitionGrant(key string, token uint64, m partition.Member) tenure.Grant {
	return tenure.Grant{Key: key, Holder: m.ID, Token: token, TTL: m.TTL, Sent: m.Sent}
}

// createPartition creates partition key's Lease of group empty (see
// empty), for a claim to take (see takePartition).
func (c *Coordinator) createPartition(ctx context.Context, group, key string) (record, error) {
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(key),
		Annotations: map[string]string{AnnotationKey: key}}}
	labelAs(l, group, "partition")
	return c.createEmpty(ctx, l)
}

// takePartition writes m as the owner of partition key over p,
// preconditioned on p's resourceVersion, with the grant's token
// (tokenAfter) in AnnotationToken, as take does.
func (c *Coordinator) takePartition(ctx context.Context, m partition.Member, me record, key string, p record) (tenure.Grant, error) {
	l := p.lease.DeepCopy()
	transitions := nextTransitions(l.Spec.LeaseTransitions, 1)
	l.Spec.LeaseTransitions = &transitions
	token := tokenAfter(p)
	ownBy(l, m, me, token, after(time.Now(), l.Spec.AcquireTime))
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	r, err := c.sight(out, tenure.Now())
	switch {
	case err != nil:
	case !r.rv.after(p.rv):
		err = fmt.Errorf("%w: the write that granted partition %q has resourceVersion %s, not later than %s", ErrIncomparable, key, r.rv.s, p.rv.s)
	case r.holder != m.ID || r.token != token:
		err = fmt.Errorf("%w: the write that granted partition %q with token %d at resourceVersion %s reads as held by %s with token %d", ErrIncomparable, key, token, r.rv.s, display.Holder(r.holder), r.token)
	}
	return c.partitionGrant(key, token, m), err
}

// ownBy makes partition Lease l m's with token, whose membership Lease is
// me's: its holder, duration and times (for people: the partition lives as
// long as the membership), the annotation naming the membership, and the
// token bound to the holder and acquireTime.
func ownBy(l *coordv1.Lease, m partition.Member, me record, token uint64, now time.Time) {
	t := metav1.NewMicroTime(now)
	secs := ttlSeconds(m.TTL)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &m.ID, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
	labelAs(l, m.Group, "partition")
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationMember] = me.lease.Name
	l.Annotations[AnnotationToken] = tokenAnnotation(token, now, m.ID)
	delete(l.Annotations, AnnotationReleased)
}

// ownedBy reports whether partition record p holds g for m.
func ownedBy(p record, m partition.Member, g tenure.Grant) bool {
	return p.holder == m.ID && p.token == g.Token && p.lease.Annotations[AnnotationMember] == memberName(m.Group, m.Epoch)
}

// ReleasePartitions frees the partitions of gs that m still owns with
// their tokens: each an update, preconditioned on its resourceVersion,
// that clears the holder (at most 32 at once). See partition.Coordinator.
func (c *Coordinator) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	op := fmt.Sprintf("kube: release %d partitions of %s", len(gs), m)
	if err := c.begin(ctx, op); err != nil {
		return err
	}
	errs := make([]error, len(gs))
	forEach(len(gs), func(i int) { errs[i] = c.releasePartition(ctx, m, gs[i]) })
	if err := errors.Join(errs...); err != nil {
		return fail(ctx, op, err)
	}
	return nil
}

func (c *Coordinator) releasePartition(ctx context.Context, m partition.Member, g tenure.Grant) error {
	for range attempts {
		p, found, err := c.get(ctx, g.Key)
		if err != nil || !found || !ownedBy(p, m, g) {
			return err // gone already, or an error
		}
		l := p.lease.DeepCopy()
		now := metav1.NewMicroTime(after(time.Now(), l.Spec.RenewTime))
		none, one := "", int32(1)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &none, &one
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		delete(l.Annotations, AnnotationMember)
		delete(l.Annotations, AnnotationToken)
		l.Annotations[AnnotationReleased] = tokenAnnotation(g.Token, now.Time, g.Holder)
		out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("partition %q: %w", g.Key, err)
		}
		_, err = c.sight(out, tenure.Now())
		return err
	}
	return fmt.Errorf("partition %q changed during each of %d attempts", g.Key, attempts)
}

// CheckPartitions reads m's membership Lease and each partition of gs (a
// request each, at most 32 at once: the API server has no request that
// reads several named objects) and returns the grants m no longer owns
// with their tokens. Each "still m's" is confirmed by an update
// preconditioned on the version read, which writes nothing when it
// succeeds (see confirm): a read out of date cannot keep a grant m lost.
// See partition.Coordinator.
func (c *Coordinator) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	op := fmt.Sprintf("kube: check %d partitions of %s", len(gs), m)
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	if err := c.confirmMember(ctx, m); err != nil {
		return nil, fail(ctx, op, err)
	}
	owned := make([]bool, len(gs))
	errs := make([]error, len(gs))
	forEach(len(gs), func(i int) { owned[i], errs[i] = c.stillOwned(ctx, m, gs[i]) })
	if err := errors.Join(errs...); err != nil {
		return nil, fail(ctx, op, err)
	}
	var lost []tenure.Grant
	for i, g := range gs {
		if !owned[i] {
			lost = append(lost, g)
		}
	}
	return lost, nil
}

// confirmMember reads m's membership Lease and confirms the version read
// (see confirm); the error wraps tenure.ErrLost when m is not live.
func (c *Coordinator) confirmMember(ctx context.Context, m partition.Member) error {
	for range attempts {
		me, err := c.member(ctx, m)
		if err != nil {
			return err
		}
		_, err = c.confirm(ctx, me, false)
		switch {
		case apierrors.IsConflict(err):
			continue // renewed meanwhile, or read out of date
		case apierrors.IsNotFound(err):
			c.unsee(me.lease.Name)
			return fmt.Errorf("%w: membership Lease %s is gone (left, or taken as expired)", tenure.ErrLost, me.lease.Name)
		}
		return err
	}
	return fmt.Errorf("membership Lease of %s changed during each of %d attempts", m, attempts)
}

// stillOwned reports whether m still owns partition grant g, confirming a
// yes with an update preconditioned on the version read.
func (c *Coordinator) stillOwned(ctx context.Context, m partition.Member, g tenure.Grant) (bool, error) {
	for range attempts {
		p, found, err := c.get(ctx, g.Key)
		if err != nil || !found || !ownedBy(p, m, g) {
			return false, err
		}
		_, err = c.confirm(ctx, p, true)
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
			return false, nil
		}
		return err == nil, err
	}
	return false, fmt.Errorf("partition %q changed during each of %d attempts", g.Key, attempts)
}

// GroupPartitions lists group's Leases (one request) and returns the grant
// of every partition whose owner's membership is live on this
// coordinator's clock, sorted by key, with the time left on the membership
// as TTL. See partition.Coordinator.
func (c *Coordinator) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("kube: partitions of %q", group)
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	members, parts, err := c.listGroup(ctx, group, false)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	var out []tenure.Grant
	for key, p := range parts {
		owner, ok := members[ownerOf(p.lease)]
		if why, _ := foreignMembership(owner); p.holder == "" || !ok || owner.holder != p.holder || !owner.live(c.cfg.MaxDrift) || why != "" {
			continue // a foreign membership's: see foreignOwner
		}
		out = append(out, tenure.Grant{Key: key, Holder: p.holder, Token: p.token, TTL: owner.grant(key, c.cfg.MaxDrift).TTL})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
