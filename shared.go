package tenure

import (
	"context"
	"time"

	"github.com/tenure-dev/tenure/internal/termhook"
)

func init() {
	termhook.NewShared = func(dl Instant) termhook.Shared[Grant, *Term, Instant] {
		return sharedLease{newLeaseAt(leaseTiming{}, 0, Instant{}, dl, false, nil, "membership renewal")}
	}
	termhook.BootDeadline = (*Term).bootDeadlineNow
	termhook.InstantBoot = func(i Instant) int64 { return int64(i.boot) }
	termhook.Renewed = (*Term).renewedChan
}

// sharedLease hands package partition a lease that many terms ride.
type sharedLease struct{ l *lease }

func (s sharedLease) Start(parent context.Context, g Grant) (*Term, termhook.Control[Grant, Instant]) {
	return s.l.start(parent, g)
}

func (s sharedLease) Extend(ttl time.Duration, sent, dl Instant) {
	s.l.extend(Grant{TTL: ttl, Sent: sent}, dl)
}

func (s sharedLease) Stop() { s.l.stop() }
