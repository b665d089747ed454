package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// Release ends grant g now, as client-go's ReleaseOnCancel does: if the
// Lease still holds g live, it clears the holder, sets
// leaseDurationSeconds to 1 and both times to now, preconditioned on the
// Lease's resourceVersion, and marks the Lease with AnnotationReleased. A
// follower watching the Lease acquires it on that event. A grant already
// gone is not an error. See tenure.Coordinator.
func (c *Coordinator) Release(ctx context.Context, g tenure.Grant) error {
	op := fmt.Sprintf("kube: release %v", g)
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return err
	}
	cur, fresh := c.cached(LeaseName(g.Key))
	fresh = fresh && cur.owns(g) && checkKey(cur.lease, g.Key) == nil
	for range attempts {
		if !fresh {
			var found bool
			var err error
			if cur, found, err = c.get(ctx, g.Key); err != nil {
				return fail(ctx, op, err)
			}
			if !found {
				return nil
			}
		}
		fresh = false
		if !cur.owns(g) || !cur.live(c.cfg.MaxDrift) {
			// Gone already. Judged by the Lease's duration, not g.TTL:
			// clearing a Lease still g's frees it, whatever its duration.
			return nil
		}
		err := c.clear(ctx, cur, g)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fail(ctx, op, err)
		}
		c.log.Debug("released", "key", g.Key, "token", g.Token)
		return nil
	}
	return fmt.Errorf("%s: the Lease changed during each of %d attempts; try again", op, attempts)
}

// clear writes the released record over cur, which holds g,
// preconditioned on its resourceVersion, with the AnnotationReleased that
// binds g to this write's times: the mark by which contenders know the
// clear for a release by g's holder, and take the Lease at once.
func (c *Coordinator) clear(ctx context.Context, cur record, g tenure.Grant) error {
	l := cur.lease.DeepCopy()
	now := metav1.NewMicroTime(after(time.Now(), l.Spec.RenewTime))
	none, one := "", int32(1)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &none, &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	delete(l.Annotations, AnnotationToken)
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationReleased] = tokenAnnotation(g.Token, now.Time, g.Holder)
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	_, err = c.sight(out, tenure.Now())
	return err
}
