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
