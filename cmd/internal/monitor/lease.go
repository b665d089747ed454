package monitor

import "time"

// leftResolution is how coarsely a coordinator may report the time left
// on a lease: etcd counts whole seconds, rounded down (tenure.Coordinator).
const leftResolution = time.Second

// Lease is what Status says of a holder's lease. Every field is absent
// when it is not known.
type Lease struct {
	// TTLLeftMs is the time left on the lease: to this instance's local
	// deadline on its own terms; else until the lease runs out as the
	// coordinator reported it, counted down since (see lease).
	TTLLeftMs *int64 `json:"ttl_left_ms,omitempty"`
	// TTLMs is the TTL the lease was granted; where the coordinator
	// reports only the time left (PostgreSQL, which stores only the expiry;
	// a member's lease on the memory coordinator), the most time left ever
	// read on it.
	TTLMs *int64 `json:"ttl_ms,omitempty"`
	// SinceRenewalMs is how long ago the lease was last renewed (or
	// granted): its end as last known, less its TTL.
	SinceRenewalMs *int64 `json:"since_renewal_ms,omitempty"`
	// NotRenewingAfterMs is the SinceRenewalMs past which a renewal is
	// overdue: see renewalOverdue.
	NotRenewingAfterMs *int64 `json:"not_renewing_after_ms,omitempty"`
	// Renewing is false once SinceRenewalMs is past NotRenewingAfterMs:
	// the holder has stopped renewing (it died, or cannot reach the
	// coordinator) and the lease is running out.
	Renewing *bool `json:"renewing,omitempty"`
}

// renewalOverdue is how long after a renewal the next one is overdue.
// Holders renew every TTL/3 (tenure.Config's default RenewInterval, which
// tenure run always uses) and retry a failed renewal after TTL/10 (the
// default RetryPeriod); a renewal shows up in the time left at the next
// poll, and a time left read in whole seconds (etcd) may place the last
// renewal up to leftResolution too early. Past TTL/3 + TTL/10 + 1 s + one
// poll, no renewal that was sent on time, or retried once, can still be
// on its way: the holder is not renewing. (A library user who sets a
// longer RenewInterval is shown as not renewing between renewals.)
func renewalOverdue(ttl, poll time.Duration) time.Duration {
	return ttl/3 + ttl/10 + leftResolution + poll
}

// lease is what a Monitor knows of one lease it sees from outside, from
// the time left that the coordinator reported at each read.
type lease struct {
	// ttl is the TTL granted when the coordinator reported it, raised to
	// the most time left ever read (on PostgreSQL, the only bound).
	ttl time.Duration
	// end is when the lease runs out, as far as the reads tell: the latest
	// (start of a read + time left it reported). Each such sum is never
	// later than the truth (the coordinator counted the time left after the
	// read began, and rounded it down), so the latest is the closest. Zero
	// before any read said the time left.
	end time.Time
}

// read records that a read begun at at reported left on the lease. A read
// of nothing left says nothing: etcd reports a lease that has run out, and
// that it has not yet collected, as 0 s left, like one with less than a
// second left; the end is left as the reads before placed it.
func (l *lease) read(at time.Time, left time.Duration) {
	if left <= 0 {
		return
	}
	if e := at.Add(left); e.After(l.end) {
		l.end = e
	}
	l.ttl = max(l.ttl, left)
}

// granted records the TTL the coordinator says it granted.
func (l *lease) granted(ttl time.Duration) { l.ttl = max(l.ttl, ttl) }

// known reports whether a read said the time left.
func (l *lease) known() bool { return !l.end.IsZero() }

// left is the time left at now, when known.
func (l *lease) left(now time.Time) (time.Duration, bool) {
	return max(l.end.Sub(now), 0), l.known()
}

// renewed is when the lease was last renewed or granted: its end less its
// TTL (never later than the truth when the TTL is exact).
func (l *lease) renewed() time.Time { return l.end.Add(-l.ttl) }

// status is what Status says of the lease at now; poll is how often the
// coordinator is read.
func (l *lease) status(now time.Time, poll time.Duration) Lease {
	var s Lease
	if l.ttl > 0 {
		s.TTLMs = ms(l.ttl)
	}
	if left, ok := l.left(now); ok {
		s.TTLLeftMs = ms(left)
		s.renewal(now.Sub(l.renewed()), l.ttl, poll)
	}
	return s
}

// renewal fills the renewal fields: the lease was renewed since ago.
func (s *Lease) renewal(since, ttl, poll time.Duration) {
	overdue := renewalOverdue(ttl, poll)
	renewing := since <= overdue
	s.SinceRenewalMs, s.NotRenewingAfterMs, s.Renewing = ms(max(since, 0)), ms(overdue), &renewing
}
