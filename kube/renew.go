package kube

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// Renew extends grant g: it updates the Lease's renewTime, preconditioned
// on the Lease's resourceVersion, if the Lease still holds g (the same
// holder and token) and has not expired on this coordinator's clock.
// Otherwise g is lost (tenure.ErrLost). The update writes g.TTL (rounded
// up to whole seconds) as leaseDurationSeconds again, and the renewed
// grant's TTL is g.TTL, or the duration the server stored when that is
// shorter (an admission policy): never a duration read from the Lease, so
// that a leaseDurationSeconds edited by hand changes neither the holder's
// deadline nor, after the renewal, the Lease. g is judged live by g.TTL
// likewise. Its Sent is when the update was sent. See tenure.Coordinator.
//
// client-go's contenders compare the record with whole-second times: a
// renewal whose renewTime falls in the same second as the one before it
// also increments leaseTransitions, so that every write changes the
// record they compare (see the package documentation).
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	op := fmt.Sprintf("kube: renew %v", g)
	if err := g.Validate(); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := tenure.ValidateTTL(g.TTL); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return tenure.Grant{}, err
	}
	cur, fresh := c.cached(LeaseName(g.Key))
	fresh = fresh && cur.owns(g) && checkKey(cur.lease, g.Key) == nil
	for range attempts {
		if !fresh {
			var found bool
			var err error
			if cur, found, err = c.get(ctx, g.Key); err != nil {
				return tenure.Grant{}, fail(ctx, op, err)
			}
			if !found {
				return tenure.Grant{}, fmt.Errorf("%s: %w: the Lease was deleted", op, tenure.ErrLost)
			}
		}
		fresh = false
		if err := c.holds(cur, g); err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
		r, err := c.extend(ctx, cur, g)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // written since: read it again, it may still be ours
		}
		if err != nil {
			return tenure.Grant{}, fail(ctx, op, err)
		}
		return r, nil
	}
	return tenure.Grant{}, fmt.Errorf("%s: the Lease changed during each of %d attempts; try again", op, attempts)
}

// holds reports, as an error wrapping tenure.ErrLost, why record r does not
// hold g live; nil when it does. g's expiry is judged by g.TTL, the TTL its
// holder was told, not by the Lease's duration (see Renew).
func (c *Coordinator) holds(r record, g tenure.Grant) error {
	switch {
	case r.holder == "":
		return fmt.Errorf("%w: the Lease was released", tenure.ErrLost)
	case !r.owns(g):
		return fmt.Errorf("%w: the Lease holds %s (token %d) now", tenure.ErrLost, display.Holder(r.holder), r.token)
	case !r.liveFor(g.TTL, c.cfg.MaxDrift):
		return fmt.Errorf("%w: expired: resourceVersion %s unchanged for %s", tenure.ErrLost, r.rv.s, wait(g.TTL, c.cfg.MaxDrift))
	}
	return nil
}

// extend writes a new renewTime, g's TTL as leaseDurationSeconds and the
// bound token annotation over cur, which holds g, preconditioned on cur's
// resourceVersion.
func (c *Coordinator) extend(ctx context.Context, cur record, g tenure.Grant) (tenure.Grant, error) {
	l := cur.lease.DeepCopy()
	prev := l.Spec.RenewTime
	now := metav1.NewMicroTime(after(time.Now(), prev))
	secs := ttlSeconds(g.TTL)
	l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, &secs
	if prev != nil && prev.Unix() == now.Unix() {
		// The same second: without a change client-go would not see
		// this write (see Renew).
		transitions := nextTransitions(l.Spec.LeaseTransitions, 1)
		l.Spec.LeaseTransitions = &transitions
	}
	if l.Spec.AcquireTime == nil { // removed by hand: the token binds to one
		l.Spec.AcquireTime = &now
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationToken] = tokenAnnotation(g.Token, l.Spec.AcquireTime.Time, g.Holder)
	l.Annotations[AnnotationTTL] = strconv.FormatInt(int64(secs), 10)
	sent := tenure.Now()
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	r, err := c.sight(out, tenure.Now())
	if err != nil {
		return tenure.Grant{}, err
	}
	return tenure.Grant{Key: g.Key, Holder: g.Holder, Token: g.Token, TTL: grantedTTL(g.TTL, r), Sent: sent}, nil
}
