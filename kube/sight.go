package kube

import (
	"context"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// sight records that this coordinator saw Lease l at `at` (read with
// tenure.Now after the reply or event that carried it arrived), and
// returns its record. The record's seen is when its resourceVersion was
// first seen: at, unless an earlier sighting of the same resourceVersion
// is remembered. A version older than the newest one remembered is dated
// at, which is later than its real first sighting, so the wait counted
// from it is never too short. A clear that tenure cannot attribute (see
// record.cleared) lasts as long as the grant remembered before it.
func (c *Coordinator) sight(l *coordv1.Lease, at tenure.Instant) (record, error) {
	rv, err := parseVersion(l.ResourceVersion)
	if err != nil {
		return record{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.seen[l.Name]
	switch {
	case ok && prev.rv == rv:
		return prev, nil
	case ok && prev.rv.after(rv):
		return newRecord(l, rv, at), nil
	}
	r := newRecord(l, rv, at)
	if ok && r.cleared {
		// A clear tenure cannot attribute: wait at least as long as the
		// grant seen before it, which it may have cleared, lasted.
		r.ttl = max(r.ttl, prev.ttl)
		r.was, r.wasToken = prev.was, prev.wasToken
		if prev.holder != "" {
			r.was, r.wasToken = prev.holder, prev.token
		}
	}
	c.seen[l.Name] = r
	return r, nil
}

// unsee forgets Lease name, which no longer exists.
func (c *Coordinator) unsee(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.seen, name)
}

// cached returns the newest version of Lease name this coordinator has
// seen, if any: a Lease it read, wrote or watched. It may be out of date;
// a write preconditioned on it then fails with a conflict.
func (c *Coordinator) cached(name string) (record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.seen[name]
	return r, ok
}

// get reads the Lease that holds key. found is false when it does not
// exist.
func (c *Coordinator) get(ctx context.Context, key string) (r record, found bool, err error) {
	name := LeaseName(key)
	l, err := c.leases.Get(ctx, name, metav1.GetOptions{})
	at := tenure.Now()
	if apierrors.IsNotFound(err) {
		c.unsee(name)
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	if err := checkKey(l, key); err != nil {
		return record{}, false, err
	}
	r, err = c.sight(l, at)
	return r, err == nil, err
}
