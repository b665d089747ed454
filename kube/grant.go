package kube

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// attempts bounds how often a call re-reads a Lease that changed under it
// (a conflict) before it gives up.
const attempts = 5

// Acquire grants key to holder for ttl rounded up to whole seconds (the
// Lease's leaseDurationSeconds), if the Lease is free, held by holder
// itself, or expired on this coordinator's clock (see the package
// documentation): it updates the Lease with the resourceVersion it decided
// on as a precondition, after creating it empty when there is none. The
// token is one more than that resourceVersion, written by the same update
// in AnnotationToken (see take). A Lease another holder holds live is
// refused with a *tenure.HeldError; a partition's Lease of a partition
// group (its tenure.dev/member annotation names a membership Lease),
// whether or not its owner lives, with an error wrapping
// tenure.ErrInvalidKey that names the group (the group owns that key).
// See tenure.Coordinator.
//
// When the newest version of the Lease this coordinator has seen (read,
// written or watched) already allows the grant, Acquire writes at once,
// preconditioned on it; a refusal is only ever decided on a fresh read.
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	op := fmt.Sprintf("kube: acquire %q for %q", key, holder)
	if err := validateAcquire(key, holder, ttl); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return tenure.Grant{}, err
	}
	secs := ttlSeconds(ttl)
	ttl = time.Duration(secs) * time.Second
	cur, fresh := c.cached(LeaseName(key))
	fresh = fresh && cur.takeable(holder, ttl, c.cfg.MaxDrift) && checkKey(cur.lease, key) == nil && groupLease(cur.lease) == nil
	for range attempts {
		if !fresh {
			var found bool
			var err error
			if cur, found, err = c.get(ctx, key); err != nil {
				return tenure.Grant{}, fail(ctx, op, err)
			}
			if !found {
				cur, err = c.create(ctx, key)
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				if err != nil {
					return tenure.Grant{}, fail(ctx, op, err)
				}
			}
		}
		fresh = false
		if err := groupLease(cur.lease); err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
		if !cur.takeable(holder, ttl, c.cfg.MaxDrift) {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, cur.heldError(key))
		}
		g, err := c.take(ctx, key, cur, holder, secs)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // someone wrote or deleted the Lease since: read it again
		}
		if err != nil {
			return tenure.Grant{}, fail(ctx, op, err)
		}
		return g, nil
	}
	return tenure.Grant{}, fmt.Errorf("%s: the Lease changed during each of %d attempts; try again", op, attempts)
}

func validateAcquire(key, holder string, ttl time.Duration) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := tenure.ValidateHolder(holder); err != nil {
		return err
	}
	return tenure.ValidateTTL(ttl)
}

// create creates the Lease of key empty (see empty): no holder, so that
// the write that grants it is an update preconditioned on a
// resourceVersion, whose token is known before it is sent (see take).
func (c *Coordinator) create(ctx context.Context, key string) (record, error) {
	name := LeaseName(key)
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: c.cfg.Namespace,
		Labels: map[string]string{LabelManagedBy: "tenure"},
	}}
	if name != key {
		l.Annotations = map[string]string{AnnotationKey: key}
	}
	return c.createEmpty(ctx, l)
}

// createEmpty creates Lease l, which must be empty (see empty), and
// returns its record.
func (c *Coordinator) createEmpty(ctx context.Context, l *coordv1.Lease) (record, error) {
	out, err := c.leases.Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return record{}, err
	}
	return c.sight(out, tenure.Now())
}

// tokenAfter is the token of a grant written over r, by an update
// preconditioned on r's resourceVersion: one more than it. The update's
// own resourceVersion is greater (resourceVersions are integers, and every
// write has a greater one), so the token is no greater than the
// resourceVersion of the write that carries it, and greater than every
// token granted before on the Lease, each no greater than the
// resourceVersion of its own write. A version is replaced by one write
// at most, so no two grants have the same token; after a delete the Lease
// is created anew at a greater resourceVersion.
func tokenAfter(r record) uint64 { return r.rv.n + 1 }

// take writes a new grant to holder over cur, preconditioned on cur's
// resourceVersion: holder, duration, a new acquireTime, one more
// leaseTransitions (so that the record client-go compares always changes;
// 0 at an empty Lease's first grant, as client-go creates one), and the
// grant's token (tokenAfter) in AnnotationToken, bound to holder and that
// acquireTime. The token is in the Lease from the write that grants it:
// a later write that tenure did not make (a label, another annotation)
// keeps it, and one that changes the holder, the acquireTime or the
// annotation ends the grant.
func (c *Coordinator) take(ctx context.Context, key string, cur record, holder string, secs int32) (tenure.Grant, error) {
	l := cur.lease.DeepCopy()
	now := metav1.NewMicroTime(after(time.Now(), l.Spec.AcquireTime))
	transitions := nextTransitions(l.Spec.LeaseTransitions, 0)
	token := tokenAfter(cur)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &now, &now, &transitions
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationToken] = tokenAnnotation(token, now.Time, holder)
	l.Annotations[AnnotationTTL] = strconv.FormatInt(int64(secs), 10)
	delete(l.Annotations, AnnotationReleased)
	if l.Name != key {
		l.Annotations[AnnotationKey] = key
	}
	sent := tenure.Now()
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	return c.granted(key, holder, token, secs, sent, out, tenure.Now(), cur.rv)
}

// granted records the Lease an acquiring write returned at `at` and
// returns the grant it made with token: its TTL is secs, the
// leaseDurationSeconds asked for, or the one the server stored when that
// is shorter (an admission policy may have lowered it). The write's
// resourceVersion must be later than prev, the version it was
// preconditioned on, and the Lease must hold token as written.
func (c *Coordinator) granted(key, holder string, token uint64, secs int32, sent tenure.Instant, out *coordv1.Lease, at tenure.Instant, prev version) (tenure.Grant, error) {
	r, err := c.sight(out, at)
	if err != nil {
		return tenure.Grant{}, err
	}
	if !r.rv.after(prev) {
		return tenure.Grant{}, fmt.Errorf("%w: the write that granted the Lease has resourceVersion %s, not later than %s before it", ErrIncomparable, r.rv.s, prev.s)
	}
	if r.holder != holder || r.token != token {
		return tenure.Grant{}, fmt.Errorf("%w: the write that granted the Lease with token %d at resourceVersion %s reads as held by %s with token %d", ErrIncomparable, token, r.rv.s, display.Holder(r.holder), r.token)
	}
	g := tenure.Grant{Key: key, Holder: holder, Token: token, TTL: grantedTTL(time.Duration(secs)*time.Second, r), Sent: sent}
	c.log.Debug("leadership granted", "key", key, "lease", out.Name, "holder", holder, "token", g.Token, "ttl", g.TTL)
	return g, nil
}

// nextTransitions is the leaseTransitions a write over a Lease whose count
// is t writes: one more, first when there is none, and 0 after the largest
// int32 (written by hand or by another program), so that the count still
// changes and is never negative, which the API server refuses.
func nextTransitions(t *int32, first int32) int32 {
	if t == nil {
		return first
	}
	if *t == math.MaxInt32 {
		return 0
	}
	return *t + 1
}

// after returns now, or a microsecond after prev when now is not later
// (MicroTime keeps microseconds): a new acquireTime or renewTime always
// differs from the one before it.
func after(now time.Time, prev *metav1.MicroTime) time.Time {
	now = now.Truncate(time.Microsecond)
	if prev != nil && !now.After(prev.Time) {
		return prev.Add(time.Microsecond)
	}
	return now
}

// groupLease reports, as an error wrapping tenure.ErrInvalidKey, that Lease
// l is a partition's Lease (see partitionOf), which only the group
// writes; nil when it is not. Its labels are not read.
func groupLease(l *coordv1.Lease) error {
	if _, ok := partitionOf(l); !ok {
		return nil
	}
	key, _ := keyOf(l)
	group, _ := groupOfKey(key)
	return fmt.Errorf("%w: key %s is partition %s of group %s: only the group's members hold it", tenure.ErrInvalidKey, display.Input(key), display.Input(key[len(group)+1:]), display.Input(group))
}
