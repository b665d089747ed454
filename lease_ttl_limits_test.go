package tenure_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// grantedNothing are TTLs that leave no safe lease under limitsConfig
// (MaxDrift 0, Margin 50ms): zero, negative down to the least Duration,
// and up to the Margin.
var grantedNothing = []time.Duration{
	0, -time.Nanosecond, -time.Hour, math.MinInt64, math.MinInt64 + 1, 50 * time.Millisecond,
}

// limitsConfig is a lease's config whose safe lease is TTL − 50ms.
func limitsConfig() tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "g", "h"
	cfg.TTL, cfg.MaxDrift, cfg.Margin = 3*time.Second, 0, 50*time.Millisecond
	return cfg
}

// A lease granted a TTL that leaves no safe lease (zero, negative, at most
// the Margin) has its deadline already past: a term started on it is over
// at once, however the deadline's arithmetic rounds or overflows.
func TestLeaseGrantedNoTimeStartsNoTerm(t *testing.T) {
	for _, ttl := range grantedNothing {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			l, err := tenure.NewLease(limitsConfig(), ttl, tenure.Now())
			if err != nil {
				t.Fatalf("NewLease() = %v", err)
			}
			defer l.Stop()
			term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: 1, TTL: ttl})
			if err := term.Check(); err == nil {
				t.Fatalf("Check() of a term on a lease granted %s = nil (deadline %s from now); want ErrNotLeader",
					ttl, time.Until(l.Deadline().Time()))
			}
		})
	}
}

// A renewal answered with a TTL that leaves no safe lease ends every term
// riding the lease, and a term started after it is over at once.
func TestLeaseRenewedForNoTimeEndsTerms(t *testing.T) {
	for _, ttl := range grantedNothing {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := limitsConfig()
				l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
				if err != nil {
					t.Fatalf("NewLease() = %v", err)
				}
				defer l.Stop()
				term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: 1})
				ctx, cancel := context.WithCancel(context.Background())
				renewals := 0
				err = l.Keep(ctx, func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
					renewals++
					if renewals == 2 {
						cancel()
					}
					return tenure.Grant{TTL: ttl, Sent: tenure.Now()}, time.Time{}, nil
				})
				if err != nil {
					t.Fatalf("Keep() = %v; want nil (cancelled)", err)
				}
				if !errors.Is(term.Check(), tenure.ErrNotLeader) {
					t.Fatalf("Check() after a renewal for %s = nil (deadline %s from now); want ErrNotLeader",
						ttl, time.Until(l.Deadline().Time()))
				}
				late := l.Start(context.Background(), tenure.Grant{Key: "g/1", Holder: "h", Token: 2})
				if late.Check() == nil {
					t.Fatalf("Check() of a term started after a renewal for %s = nil; want ErrNotLeader", ttl)
				}
			})
		})
	}
}
