package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/internal/limits"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// ListForeign returns the Leases of keys under prefix, sorted by key, that
// Acquire refuses but that no tenure or client-go grant wrote as they
// stand: a holderIdentity that is not a holder identity, no holder without
// tenure's release mark, a leaseDurationSeconds longer than a day, an
// AnnotationKey that names another key than the Lease's name, or a name
// spelled as LeaseName makes for a key that is not a Lease name without
// that annotation (no tenure key has it); the
// partitions owned by a membership Lease that no member wrote as it stands
// (see foreignOwner), and, with Member set, those membership Leases
// themselves, as records of their groups' keys; and the partitions' Leases
// that no live membership owns, of groups with no live member (see
// strayPartition). A partition's Lease is judged by its owner alone, never
// by its own duration or holder, so a live member's partition is never
// listed unless its membership is. Their tokens are the
// Leases' resourceVersions. Users free such a record with RemoveForeign.
// It is one request.
func (c *Coordinator) ListForeign(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	op := fmt.Sprintf("kube: list foreign Leases under %q", prefix)
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
	members, err := c.memberRecords(list.Items, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var out []tenure.ForeignRecord
	for i := range list.Items {
		l := &list.Items[i]
		if _, member := members[l.Name]; member {
			continue // a membership Lease: the Lease of no key (no key is spelled so), listed below when no member wrote it
		}
		key, clash, ok := leaseKey(l)
		if !ok || !strings.HasPrefix(key, prefix) {
			continue
		}
		r, err := c.sight(l, at)
		if err != nil {
			return nil, fmt.Errorf("%s: Lease %s: %w", op, l.Name, err)
		}
		if _, part := partitionOf(l); part {
			// A partition's Lease, which Acquire refuses whoever holds it:
			// judged by its owner alone, never by its own duration.
			if f, ok := foreignOwner(key, r, members, c.cfg.MaxDrift); ok {
				out = append(out, f)
			} else if f, ok := strayPartition(key, r, members, c.cfg.MaxDrift); ok {
				out = append(out, f)
			}
		} else if f, ok := foreignOf(key, l, r, clash, c.cfg.MaxDrift); ok {
			out = append(out, f)
		}
	}
	out = append(out, foreignMemberships(members, prefix, c.cfg.MaxDrift)...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Key < out[j].Key || out[i].Key == out[j].Key && out[i].Member < out[j].Member
	})
	return out, nil
}

// leaseKey returns the key Lease l holds, or (clash) the key it is named
// for when its AnnotationKey names another key, or it has a hashed name
// and no AnnotationKey; ok is false when it is the Lease of no key.
func leaseKey(l *coordv1.Lease) (key string, clash, ok bool) {
	if k, ok := keyOf(l); ok {
		return k, false, true
	}
	clash = tenure.ValidateKey(l.Name) == nil && LeaseName(l.Name) == l.Name
	return l.Name, clash, clash
}

// foreignOf describes Lease l of key, read as r by a coordinator with
// maxDrift, when Acquire refuses it but no grant wrote it as it stands;
// clash says its AnnotationKey names another key, or it has a hashed name
// and no AnnotationKey.
func foreignOf(key string, l *coordv1.Lease, r record, clash bool, maxDrift float64) (tenure.ForeignRecord, bool) {
	f := tenure.ForeignRecord{Key: key, Holder: r.holder, Token: r.rv.n, TTL: r.grant(key, maxDrift).TTL}
	var why []string
	if clash {
		format := "annotation %s names another key"
		if _, has := l.Annotations[AnnotationKey]; !has {
			format = "a name tenure makes only for a key that is not a Lease name, without annotation %s"
		}
		why = append(why, fmt.Sprintf(format, AnnotationKey))
		f.TTL = -1 // Acquire fails on it until it is removed
	} else if !r.live(maxDrift) {
		return f, false
	}
	switch {
	case r.holder == "" && r.cleared:
		why = append(why, "no holder, without tenure's release mark")
	case r.holder != "" && tenure.ValidateHolder(r.holder) != nil:
		why = append(why, "a holderIdentity that is not a holder identity")
	}
	f.Malformed = len(why) > 0
	if r.ttl > limits.MaxTTL {
		why = append(why, fmt.Sprintf("a leaseDurationSeconds of %d, longer than tenure grants", *l.Spec.LeaseDurationSeconds))
	}
	f.Reason = strings.Join(why, ", ")
	return f, len(why) > 0
}

// RemoveForeign deletes r's Lease if it is still at the resourceVersion
// r was read at (a delete preconditioned on it), and reports whether it
// did. The next Acquire creates the Lease anew, at a greater
// resourceVersion, so tokens still increase. For a partition owned by a
// membership Lease that no member wrote, it deletes that membership Lease
// instead (see removeForeignOwner), which frees every partition it owns;
// for a membership record (Member set), it deletes that membership Lease,
// preconditioned on its resourceVersion; for a partition's Lease that no
// live membership owns, it decides on one list of every Lease (see
// removeStrayPartition). r is a record ListForeign
// returned; the Lease deleted is judged as it is read at that
// resourceVersion, never by r's other fields, so that a record naming a
// live grant or member, however it was made, removes nothing.
func (c *Coordinator) RemoveForeign(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	op := fmt.Sprintf("kube: remove foreign Lease of %q at resourceVersion %d", r.Key, r.Token)
	if err := tenure.ValidateKey(r.Key); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return false, err
	}
	if r.Member != "" {
		removed, err := c.removeForeignMembership(ctx, r)
		return removed, failIf(ctx, op, err)
	}
	name := LeaseName(r.Key)
	l, err := c.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fail(ctx, op, err)
	}
	rv, err := parseVersion(l.ResourceVersion)
	if err != nil || rv.n != r.Token {
		return false, nil // another write since: not the record r read
	}
	if handled, removed, err := c.removeForeignOwner(ctx, l, r); handled || err != nil {
		if err != nil {
			return false, fail(ctx, op, err)
		}
		return removed, nil
	}
	if _, part := partitionOf(l); part {
		removed, err := c.removeStrayPartition(ctx, r)
		return removed, failIf(ctx, op, err)
	}
	seen, err := c.sight(l, tenure.Now())
	if err != nil {
		return false, fail(ctx, op, err)
	}
	if key, clash, ok := leaseKey(l); !ok || key != r.Key {
		return false, nil
	} else if _, foreign := foreignOf(key, l, seen, clash, c.cfg.MaxDrift); !foreign {
		return false, nil // a grant as tenure or client-go writes one
	}
	pre := metav1.Preconditions{ResourceVersion: &l.ResourceVersion, UID: &l.UID}
	err = c.leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fail(ctx, op, err)
	}
	c.unsee(name)
	c.log.Info("foreign Lease removed", "key", r.Key, "lease", name, "holder", r.Holder, "resource_version", r.Token, "reason", r.Reason)
	return true, nil
}

// failIf is fail(ctx, op, err) when err is not nil, and nil when it is.
func failIf(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	return fail(ctx, op, err)
}
