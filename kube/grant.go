package kube

import (
	"context"
	"fmt"
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
// documentation): it creates the Lease, or updates it with the
// resourceVersion it decided on as a precondition. The token is the
// resourceVersion of that write. A Lease another holder holds live is
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
				g, err := c.create(ctx, key, holder, secs)
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				if err != nil {
					return tenure.Grant{}, fail(ctx, op, err)
				}
				return g, nil
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

// create creates the Lease of key, granted to holder.
func (c *Coordinator) create(ctx context.Context, key, holder string, secs int32) (tenure.Grant, error) {
	name := LeaseName(key)
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: c.cfg.Namespace,
		Labels: map[string]string{LabelManagedBy: "tenure"},
	}}
	if name != key {
		l.Annotations = map[string]string{AnnotationKey: key}
	}
	now := metav1.NewMicroTime(time.Now())
	zero := int32(0)
	l.Spec = coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs,
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: &zero}
	sent := tenure.Now()
	out, err := c.leases.Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	return c.granted(key, holder, secs, sent, out, tenure.Now(), version{})
}

// take writes a new grant to holder over cur, preconditioned on cur's
// resourceVersion: holder, duration, a new acquireTime, and one more
// leaseTransitions (so that the record client-go compares always
// changes). It removes AnnotationToken: this write's resourceVersion is the
// token.
func (c *Coordinator) take(ctx context.Context, key string, cur record, holder string, secs int32) (tenure.Grant, error) {
	l := cur.lease.DeepCopy()
	now := metav1.NewMicroTime(after(time.Now(), l.Spec.AcquireTime))
	transitions := int32(1)
	if t := l.Spec.LeaseTransitions; t != nil {
		transitions = *t + 1
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime, l.Spec.LeaseTransitions = &now, &now, &transitions
	delete(l.Annotations, AnnotationToken)
	delete(l.Annotations, AnnotationReleased)
	if l.Name != key {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationKey] = key
	}
	sent := tenure.Now()
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	return c.granted(key, holder, secs, sent, out, tenure.Now(), cur.rv)
}

// granted records the Lease an acquiring write returned at `at` and
// returns the grant it made: its TTL is secs, the leaseDurationSeconds
// asked for, or the one the server stored when that is shorter (an
// admission policy may have lowered it), its token the write's
// resourceVersion, which must be later than prev (the version the write was
// preconditioned on; zero for a create).
func (c *Coordinator) granted(key, holder string, secs int32, sent tenure.Instant, out *coordv1.Lease, at tenure.Instant, prev version) (tenure.Grant, error) {
	r, err := c.sight(out, at)
	if err != nil {
		return tenure.Grant{}, err
	}
	if prev.s != "" && !r.rv.after(prev) {
		return tenure.Grant{}, fmt.Errorf("%w: the write that granted the Lease has resourceVersion %s, not later than %s before it", ErrIncomparable, r.rv.s, prev.s)
	}
	g := tenure.Grant{Key: key, Holder: holder, Token: r.rv.n, TTL: grantedTTL(time.Duration(secs)*time.Second, r), Sent: sent}
	c.log.Debug("leadership granted", "key", key, "lease", out.Name, "holder", holder, "token", g.Token, "ttl", g.TTL)
	return g, nil
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
