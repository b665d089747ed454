package kube

import (
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/tenure-dev/tenure"
)

// A record is one resourceVersion of a Lease as tenure reads it, and when
// this coordinator first saw that resourceVersion.
type record struct {
	lease  *coordv1.Lease // as read; never modified (copy it to write)
	rv     version
	holder string        // "" when the Lease is free
	ttl    time.Duration // leaseDurationSeconds
	token  uint64        // the held grant's fencing token (see tokenOf)
	seen   tenure.Instant
}

// newRecord reads Lease l, whose resourceVersion this coordinator first saw
// at seen.
func newRecord(l *coordv1.Lease, rv version, seen tenure.Instant) record {
	r := record{lease: l, rv: rv, seen: seen}
	if h := l.Spec.HolderIdentity; h != nil {
		r.holder = *h
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		r.ttl = time.Duration(*d) * time.Second
	}
	if r.holder != "" {
		r.token = tokenOf(l, rv, r.holder)
	}
	return r
}

// tokenOf returns the fencing token of the grant Lease l holds: the one in
// its AnnotationToken when that is bound to the Lease's holder and
// acquireTime (every renewal writes it so), and otherwise the Lease's own
// resourceVersion, because tenure's acquiring write removes the
// annotation: a Lease without a bound annotation was last written by the
// write that granted it. (A Lease written by client-go also gets its own
// resourceVersion, which changes as client-go renews: it only names the
// holder to tenure's followers, who never present it to a resource.)
func tokenOf(l *coordv1.Lease, rv version, holder string) uint64 {
	v, ok := l.Annotations[AnnotationToken]
	if !ok || l.Spec.AcquireTime == nil {
		return rv.n
	}
	parts := strings.SplitN(v, ",", 3)
	if len(parts) != 3 || parts[2] != holder {
		return rv.n
	}
	tok, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil || tok == 0 || tok > rv.n || v != tokenAnnotation(tok, l.Spec.AcquireTime.Time, holder) {
		return rv.n // not as a renewal writes it ("042", "+17…" included)
	}
	return tok
}

// tokenAnnotation is the AnnotationToken value that binds token to holder
// and to acquired, the acquireTime of the Lease as the server stored it.
func tokenAnnotation(token uint64, acquired time.Time, holder string) string {
	return strconv.FormatUint(token, 10) + "," + strconv.FormatInt(acquired.UnixMicro(), 10) + "," + holder
}

// wait is how long a contender waits, on its own clock, after it first saw
// a resourceVersion of a held Lease before it may take the Lease: the
// Lease's duration plus the drift allowance.
func wait(ttl time.Duration, maxDrift float64) time.Duration {
	return ttl + time.Duration(float64(ttl)*maxDrift)
}

// left is how long until the record's lease has expired on this
// coordinator's clock: wait(ttl) after its resourceVersion was first seen.
// It is zero or negative once expired, and for a free Lease.
func (r record) left(maxDrift float64) time.Duration {
	if r.holder == "" {
		return 0
	}
	return r.seen.Add(wait(r.ttl, maxDrift)).Until()
}

// live reports whether the record holds a grant that has not expired on
// this coordinator's clock.
func (r record) live(maxDrift float64) bool { return r.left(maxDrift) > 0 }

// takeable reports whether holder may write a new grant over r: the Lease
// is free, expired, or held by holder itself (a new grant supersedes its
// earlier one).
func (r record) takeable(holder string, maxDrift float64) bool {
	return r.holder == holder || !r.live(maxDrift)
}

// owns reports whether r holds grant g: the same holder and token.
func (r record) owns(g tenure.Grant) bool {
	return r.holder != "" && r.holder == g.Holder && r.token == g.Token
}

// grant is the live grant r holds on key, with the time left as its TTL:
// at most the Lease's duration (the drift allowance is this coordinator's
// caution, not lease the holder has), zero in the allowance.
func (r record) grant(key string, maxDrift float64) tenure.Grant {
	return tenure.Grant{Key: key, Holder: r.holder, Token: r.token, TTL: min(max(r.left(maxDrift)-(wait(r.ttl, maxDrift)-r.ttl), 0), r.ttl)}
}

// heldError is the refusal of an Acquire of key while r is live.
func (r record) heldError(key string) *tenure.HeldError {
	return &tenure.HeldError{Key: key, Holder: r.holder, Token: r.token}
}
