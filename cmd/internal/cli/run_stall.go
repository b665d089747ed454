package cli

import (
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/timing"
)

// stallPlan is when the command of a term whose renewals stall gets
// SIGTERM: --kill-grace before the guard's SIGKILL (guard.KillAt, a little
// before the local deadline), but never before a renewal is overdue, that is unanswered a retry period after it was due
// (when the Elector warns "renewal overdue"). A renewal that succeeds
// sends the guard a new deadline, which moves both.
type stallPlan struct {
	cfg   tenure.Config
	grace time.Duration // --kill-grace
	group bool          // a partition group's member: one command per partition
}

// renewAfter is how long after a successful renewal the next is due, for
// the TTL granted and the time left until the local deadline: tenure.Lease
// renews an Elector's lease and a partition group member's alike a third of
// the TTL granted later (at most RenewInterval, and before half
// the time left has gone).
func (p stallPlan) renewAfter(granted, remaining time.Duration) time.Duration {
	return timing.NextRenewal(timing.RenewInterval(p.cfg.TTL, p.cfg.RenewInterval), granted, remaining)
}

// killLead is how long before the local deadline the guard kills a
// term's tree when no renewal came (guard.KillAt), for the TTL granted.
func killLead(granted time.Duration) time.Duration {
	const deadline = boottime.Instant(time.Hour)
	return deadline.Sub(guard.KillAt(guard.Lease{Deadline: deadline, TTLMs: granted.Milliseconds()}))
}

// termAt is when the guard sends SIGTERM unless a renewal comes first, for
// a lease renewed at now with deadline and TTL granted: 0 (none) when the
// next renewal cannot be overdue before the kill.
func (p stallPlan) termAt(now, deadline boottime.Instant, granted time.Duration) boottime.Instant {
	kill := deadline.Add(-killLead(granted))
	overdue := now.Add(p.renewAfter(granted, deadline.Sub(now)) + timing.RetryPeriod(p.cfg.TTL, p.cfg.RetryPeriod))
	at := max(kill.Add(-p.grace), overdue)
	if at >= kill {
		return 0
	}
	return at
}

// room is the most SIGTERM can come before SIGKILL when renewals stall:
// the safe lease less the time until the next renewal is overdue and less
// the kill's lead on the deadline.
func (p stallPlan) room() time.Duration {
	safe := timing.SafeLease(p.cfg.TTL, p.cfg.MaxDrift, p.cfg.Margin)
	return safe - p.renewAfter(p.cfg.TTL, safe) - timing.RetryPeriod(p.cfg.TTL, p.cfg.RetryPeriod) - killLead(p.cfg.TTL)
}

// warning says, with the arithmetic, why --kill-grace cannot be had in
// full when renewals stall, or returns "" when it can.
func (p stallPlan) warning() string {
	room := p.room()
	if p.grace <= room {
		return ""
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	safe := timing.SafeLease(p.cfg.TTL, p.cfg.MaxDrift, p.cfg.Margin)
	renew, retry := p.renewAfter(p.cfg.TTL, safe), timing.RetryPeriod(p.cfg.TTL, p.cfg.RetryPeriod)
	room = room.Truncate(time.Millisecond)
	why := fmt.Sprintf("with --ttl %s, --margin %s and --max-drift %g the local deadline is %s after a renewal, SIGKILL comes %s before it, and the next renewal is overdue %s after the renewal (due after %s, unanswered for the retry period %s)",
		p.cfg.TTL, p.cfg.Margin, p.cfg.MaxDrift, ms(safe), ms(killLead(p.cfg.TTL)), ms(renew+retry), ms(renew), ms(retry))
	if room <= 0 {
		return fmt.Sprintf("--kill-grace %s: a command whose renewals stall gets no SIGTERM, only SIGKILL just before the local deadline: %s; use --ttl %s or more",
			p.grace, why, p.ttlFor())
	}
	return fmt.Sprintf("--kill-grace %s does not fit: a command whose renewals stall gets SIGTERM when a renewal is overdue, only %s before SIGKILL: %s; for the whole grace use --kill-grace %s or less, or --ttl %s or more",
		p.grace, room, why, room, p.ttlFor())
}

// ttlFor is the least whole number of seconds of --ttl with room for the
// whole --kill-grace (at most an hour).
func (p stallPlan) ttlFor() time.Duration {
	q := p
	for q.cfg.TTL = p.cfg.TTL.Truncate(time.Second) + time.Second; q.cfg.TTL < time.Hour; q.cfg.TTL += time.Second {
		if q.room() >= p.grace {
			break
		}
	}
	return q.cfg.TTL
}
