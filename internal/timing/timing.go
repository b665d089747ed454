// Package timing holds the defaults of an Elector's and a partition
// group's timing settings (tenure.Config's RenewInterval, RetryPeriod and
// RequestTimeout), for every package that runs a lease.
package timing

import "time"

// RenewInterval is renew, or ttl/3 when renew is zero.
func RenewInterval(ttl, renew time.Duration) time.Duration {
	if renew == 0 {
		return ttl / 3
	}
	return renew
}

// RetryPeriod is retry, or ttl/10 when retry is zero.
func RetryPeriod(ttl, retry time.Duration) time.Duration {
	if retry == 0 {
		return ttl / 10
	}
	return retry
}

// RequestTimeout is timeout, or the renew interval (RenewInterval of ttl
// and renew) when timeout is zero.
func RequestTimeout(ttl, renew, timeout time.Duration) time.Duration {
	if timeout == 0 {
		return RenewInterval(ttl, renew)
	}
	return timeout
}

// MinMargin is the least tenure.Config.Margin, 50ms: a term does not count
// a host suspend of up to MinMargin against its lease, as it cannot tell
// one from the scheduling noise between its two clocks.
const MinMargin = 50 * time.Millisecond

// SafeLease is how long after sending a request that produced a grant of
// ttl the holder may act: ttl·(1 − maxDrift) − margin. It is the one home
// of that rule.
func SafeLease(ttl time.Duration, maxDrift float64, margin time.Duration) time.Duration {
	return time.Duration(float64(ttl)*(1-maxDrift)) - margin
}

// NextRenewal is how long after a renewal (or the grant) the next renewal
// is due, for a lease granted for granted with remaining left until the
// local deadline: renew (the effective renew interval), but never more
// than a third of the TTL granted nor half the time left (a lease granted
// ahead has less), so that failed attempts can be retried before the
// deadline. At least 1ms.
func NextRenewal(renew, granted, remaining time.Duration) time.Duration {
	return max(min(renew, granted/3, remaining/2), time.Millisecond)
}
