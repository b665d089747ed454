package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tenure-dev/tenure/internal/inputs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// Leader reads the Lease of key and returns its grant if it is held and
// has not expired on this coordinator's clock, with the time left as TTL.
// A coordinator that has not seen the Lease before counts the whole
// duration from now: it reports a Lease whose holder is gone as held until
// that has passed, as its Acquire would refuse it; likewise a Lease cleared
// without tenure's release mark, reported held by the grant seen before
// the clear (holder "" when none was seen). See tenure.Coordinator.
func (c *Coordinator) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	op := fmt.Sprintf("kube: leader of %q", key)
	if err := validateKey(key); err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return tenure.Grant{}, false, err
	}
	r, found, err := c.get(ctx, key)
	if err != nil {
		return tenure.Grant{}, false, fail(ctx, op, err)
	}
	if !found || !r.live(c.cfg.MaxDrift) {
		return tenure.Grant{}, false, nil
	}
	return r.grant(key, c.cfg.MaxDrift), true, nil
}

// List returns the live grant of every Lease in the namespace whose key
// starts with prefix, sorted by key, in one request. Leases that hold no
// tenure key (a name or AnnotationKey that is not a key) are left out;
// Leases client-go holds are listed like tenure's. TTL is the time left on
// this coordinator's clock. See tenure.Coordinator.
func (c *Coordinator) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("kube: list %q", prefix)
	if err := inputs.Prefix(prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	list, err := c.leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	at := tenure.Now()
	var out []tenure.Grant
	for i := range list.Items {
		l := &list.Items[i]
		key, ok := keyOf(l)
		if !ok || !strings.HasPrefix(key, prefix) {
			continue
		}
		r, err := c.sight(l, at)
		if err != nil {
			return nil, fmt.Errorf("%s: Lease %s: %w", op, l.Name, err)
		}
		if r.live(c.cfg.MaxDrift) {
			out = append(out, r.grant(key, c.cfg.MaxDrift))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
