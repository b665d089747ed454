package kube

import (
	"strconv"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/limits"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// A record is one resourceVersion of a Lease as tenure reads it, and when
// this coordinator first saw that resourceVersion.
type record struct {
	lease  *coordv1.Lease // as read; never modified (copy it to write)
	rv     version
	holder string        // "" when nobody holds the Lease
	ttl    time.Duration // leaseDurationSeconds; for a clear, see cleared
	token  uint64        // the held grant's fencing token (see tokenOf)
	seen   tenure.Instant

	// cleared is true when the holder is "" but no tenure release of the
	// grant before it says so (see releasedBy): client-go's release, which
	// checks its own, possibly stale, record and may clear a grant it no
	// longer holds. Such a clear is a change like any other: the Lease is
	// free only wait(ttl) after it was first seen, where ttl is the longest
	// duration of the grant it may have cleared that this coordinator knows
	// of: the Lease's AnnotationTTL (see ttlOf), and the grant seen before
	// (see Coordinator.sight). was and wasToken name that grant, when this
	// coordinator saw it.
	cleared  bool
	was      string
	wasToken uint64
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
	} else if r.cleared = !releasedBy(l, rv) && !empty(l); r.cleared {
		r.ttl = max(r.ttl, ttlOf(l))
	}
	return r
}

// ttlOf is the TTL of the last grant tenure wrote to Lease l, from its
// AnnotationTTL: zero when it has none, or none tenure could have
// written (not a whole number of seconds from 1 up to limits.MaxTTL).
func ttlOf(l *coordv1.Lease) time.Duration {
	secs, err := strconv.ParseInt(l.Annotations[AnnotationTTL], 10, 32)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > limits.MaxTTL {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// empty reports whether Lease l bears no trace of a holder: no holder, no
// times, duration or transitions, no token or release mark. Acquire and
// ClaimPartitions create a Lease so before they grant it (see take), and
// it is free at once, as no Lease is: a clear (client-go's release, an
// edit of the holder) keeps the times and transitions, and a Lease
// emptied by hand is no more free than one deleted by hand.
func empty(l *coordv1.Lease) bool {
	s := l.Spec
	_, tok := l.Annotations[AnnotationToken]
	_, rel := l.Annotations[AnnotationReleased]
	return (s.HolderIdentity == nil || *s.HolderIdentity == "") && s.AcquireTime == nil && s.RenewTime == nil &&
		s.LeaseDurationSeconds == nil && s.LeaseTransitions == nil && !tok && !rel
}

// bound parses v, an annotation "token,time in Unix microseconds,holder",
// and reports whether it binds a token no later than rv to holder (any,
// when holder is "") and to the time at.
func bound(v string, rv version, holder string, at *metav1.MicroTime) (token uint64, who string, ok bool) {
	parts := strings.SplitN(v, ",", 3)
	if len(parts) != 3 || at == nil || parts[2] == "" || (holder != "" && parts[2] != holder) {
		return 0, "", false
	}
	tok, err1 := strconv.ParseUint(parts[0], 10, 64)
	micros, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || tok == 0 || tok > rv.n || micros != at.UnixMicro() {
		return 0, "", false
	}
	if parts[0] != strconv.FormatUint(tok, 10) || parts[1] != strconv.FormatInt(micros, 10) {
		return 0, "", false // not as tenure writes it ("042", "+17…")
	}
	return tok, parts[2], true
}

// releasedBy reports whether Lease l, at rv with no holder, was cleared by
// tenure's Release of the grant it held: its AnnotationReleased names
// that grant's holder and token and is bound to the renewTime the release
// wrote (and acquireTime, the same). Every write over a Lease sets both
// times, and client-go's writes keep the annotations they find: a marker
// copied by a later clear carries another write's time and says nothing.
func releasedBy(l *coordv1.Lease, rv version) bool {
	v, ok := l.Annotations[AnnotationReleased]
	if !ok || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil || !l.Spec.AcquireTime.Equal(l.Spec.RenewTime) {
		return false
	}
	_, _, ok = bound(v, rv, "", l.Spec.RenewTime)
	return ok
}

// tokenOf returns the fencing token of the grant Lease l holds: the one in
// its AnnotationToken when that is bound to the Lease's holder and
// acquireTime (tenure's granting write writes it so, and every renewal
// keeps it), and otherwise the Lease's own resourceVersion: a holder
// client-go wrote, or one an edit changed, which no tenure grant made.
// That resourceVersion changes at every write: it names the holder to
// tenure's followers, who never present it to a resource, and a tenure
// holder whose grant it replaced is told it lost.
func tokenOf(l *coordv1.Lease, rv version, holder string) uint64 {
	if holder == "" {
		return rv.n // a free Lease carries no token; bound would take any holder
	}
	if tok, _, ok := bound(l.Annotations[AnnotationToken], rv, holder, l.Spec.AcquireTime); ok {
		return tok
	}
	return rv.n
}

// tokenAnnotation is the AnnotationToken value that binds token to holder
// and to acquired, the acquireTime of the Lease as the server stored it;
// and the AnnotationReleased value that binds the grant of token to holder
// released by the write whose renewTime is acquired.
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
// It is zero or negative once expired, and for a Lease tenure released.
func (r record) left(maxDrift float64) time.Duration {
	if r.holder == "" && !r.cleared {
		return 0
	}
	return r.seen.Add(wait(r.ttl, maxDrift)).Until()
}

// live reports whether the record holds a grant, or may have cleared one
// (see cleared), that has not expired on this coordinator's clock.
func (r record) live(maxDrift float64) bool { return r.left(maxDrift) > 0 }

// liveFor reports whether a grant of ttl that r holds has not expired on
// this coordinator's clock: wait(ttl) since r's resourceVersion was first
// seen. A holder judges its own grant or membership so, by the TTL it was
// granted, never by the Lease's leaseDurationSeconds, which anyone may
// edit (see Coordinator.Renew).
func (r record) liveFor(ttl time.Duration, maxDrift float64) bool {
	return r.seen.Add(wait(ttl, maxDrift)).Until() > 0
}

// grantedTTL is the TTL a holder that asked for ttl holds after a write
// of its own returned r: ttl, or the server's leaseDurationSeconds when
// that is shorter (an admission policy lowered it, and contenders wait
// only that long). Never longer than ttl: a duration read from a Lease
// (edited by hand) never lengthens a holder's deadline.
func grantedTTL(ttl time.Duration, r record) time.Duration { return min(ttl, r.ttl) }

// takeable reports whether holder, asking for ttl, may write a new grant
// over r: the Lease was released by tenure, has expired, or is held by
// holder itself for at most a day (a new grant supersedes its earlier one;
// a longer hold is a foreign record, see ListForeign). A clear tenure
// cannot attribute expires after the longest of the grant durations it
// knows (the Lease's AnnotationTTL among them) and ttl.
func (r record) takeable(holder string, ttl time.Duration, maxDrift float64) bool {
	if r.cleared {
		r.ttl = max(r.ttl, ttl)
	}
	return (r.holder != "" && r.holder == holder && r.ttl <= limits.MaxTTL) || !r.live(maxDrift)
}

// owns reports whether r holds grant g: the same holder and token.
func (r record) owns(g tenure.Grant) bool {
	return r.holder != "" && r.holder == g.Holder && r.token == g.Token
}

// grant is the live grant r holds on key, with the time left as its TTL:
// at most the Lease's duration (the drift allowance is this coordinator's
// caution, not lease the holder has), zero in the allowance.
// A clear tenure cannot attribute names the grant it may have cleared, when
// this coordinator saw it, and the clear's resourceVersion otherwise.
func (r record) grant(key string, maxDrift float64) tenure.Grant {
	holder, token := r.holder, r.token
	if r.cleared {
		holder, token = r.was, r.wasToken
		if token == 0 {
			token = r.rv.n
		}
	}
	return tenure.Grant{Key: key, Holder: holder, Token: token, TTL: min(max(r.left(maxDrift)-(wait(r.ttl, maxDrift)-r.ttl), 0), r.ttl)}
}

// heldError is the refusal of an Acquire of key while r is live.
func (r record) heldError(key string) *tenure.HeldError {
	g := r.grant(key, 0)
	return &tenure.HeldError{Key: key, Holder: g.Holder, Token: g.Token}
}
