package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// Renew extends grant g: it updates the Lease's renewTime, preconditioned
// on the Lease's resourceVersion, if the Lease still holds g (the same
// holder and token) and has not expired on this coordinator's clock.
// Otherwise g is lost (tenure.ErrLost). See tenure.Coordinator.
//
// The renewed grant's Sent is when the update was sent, except when its
// renewTime falls in the same second as the renewTime it replaces: then
// client-go, which compares the record at whole seconds, sees no change,
// and a client-go contender's wait may have started at the write that
// first showed that second, so Sent stays g.Sent (see the package
// documentation).
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	op := fmt.Sprintf("kube: renew %v", g)
	if err := g.Validate(); err != nil {
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
// hold g live; nil when it does.
func (c *Coordinator) holds(r record, g tenure.Grant) error {
	switch {
	case r.holder == "":
		return fmt.Errorf("%w: the Lease was released", tenure.ErrLost)
	case !r.owns(g):
		return fmt.Errorf("%w: the Lease holds %s (token %d) now", tenure.ErrLost, tenure.DescribeHolder(r.holder), r.token)
	case !r.live(c.cfg.MaxDrift):
		return fmt.Errorf("%w: expired: resourceVersion %s unchanged for %s", tenure.ErrLost, r.rv.s, wait(r.ttl, c.cfg.MaxDrift))
	}
	return nil
}

// extend writes a new renewTime and the bound token annotation over cur,
// which holds g, preconditioned on cur's resourceVersion.
func (c *Coordinator) extend(ctx context.Context, cur record, g tenure.Grant) (tenure.Grant, error) {
	l := cur.lease.DeepCopy()
	prev := l.Spec.RenewTime
	now := metav1.NewMicroTime(after(time.Now(), prev))
	l.Spec.RenewTime = &now
	if l.Spec.AcquireTime == nil { // removed by hand: the token binds to one
		l.Spec.AcquireTime = &now
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationToken] = tokenAnnotation(g.Token, l.Spec.AcquireTime.Time, g.Holder)
	sent := tenure.Now()
	out, err := c.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		return tenure.Grant{}, err
	}
	if _, err := c.sight(out, tenure.Now()); err != nil {
		return tenure.Grant{}, err
	}
	if prev != nil && sameSecond(prev.Time, now.Time) {
		sent = sent.Earlier(g.Sent) // unchanged for client-go: see Renew
		if g.Sent.IsZero() {
			sent = sent.Add(-time.Second)
		}
	}
	return tenure.Grant{Key: g.Key, Holder: g.Holder, Token: g.Token, TTL: cur.ttl, Sent: sent}, nil
}

// sameSecond reports whether a and b fall in the same second, as
// client-go's record (metav1.Time, RFC 3339 without fractions) shows them.
func sameSecond(a, b time.Time) bool { return a.Unix() == b.Unix() }
