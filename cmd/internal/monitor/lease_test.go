package monitor

import (
	"fmt"
	"testing"
	"time"
)

// etcdReads replays what a Monitor polling every poll sees of a lease of
// ttl that a holder renews every ttl/3, each renewal landing lag after it
// was due, until it dies at death: etcd's time left in whole seconds,
// rounded down, read at each poll, and for a second after the lease ran
// out (etcd lists it until it collects it). It calls at with each read's
// start, the lease's true end, whether the holder is still alive, and the
// lease as read so far.
func etcdReads(ttl, poll, phase, lag, death time.Duration, at func(now, end time.Time, alive bool, l *lease)) {
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var l lease
	l.granted(ttl)
	renewed := t0
	for now := t0.Add(phase); ; now = now.Add(poll) {
		for next := renewed.Add(ttl / 3).Add(lag); !next.After(now) && next.Sub(t0) <= death; next = renewed.Add(ttl / 3).Add(lag) {
			renewed = next
		}
		end := renewed.Add(ttl)
		if !now.Before(end.Add(time.Second)) {
			return
		}
		// A lease that ran out is listed with 0 s left until etcd collects it.
		l.read(now, max(end.Sub(now), 0).Truncate(time.Second))
		at(now, end, now.Sub(t0) <= death, &l)
	}
}

// A lease read as etcd reports it (whole seconds, rounded down) ends, as
// far as the Monitor can tell, never later than the truth and at most a
// second earlier; a holder that renews on time, even a retry late, is
// always renewing; one that died is shown not renewing before its lease
// runs out, and not before a renewal would have been overdue.
func TestLeaseRenewalRule(t *testing.T) {
	for _, ttl := range []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute} {
		for _, poll := range []time.Duration{100 * time.Millisecond, DefaultPoll, time.Second} {
			for _, phase := range []time.Duration{0, 130 * time.Millisecond, 770 * time.Millisecond} {
				t.Run(fmt.Sprintf("ttl=%s/poll=%s/phase=%s", ttl, poll, phase), func(t *testing.T) {
					checkRenewing(t, ttl, poll, phase)
					checkDead(t, ttl, poll, phase)
				})
			}
		}
	}
}

// checkRenewing: a live holder whose every renewal lands one retry
// (ttl/10) late is never shown not renewing, and the end shown is within a
// second before the truth.
func checkRenewing(t *testing.T, ttl, poll, phase time.Duration) {
	t.Helper()
	reads := 0
	etcdReads(ttl, poll, phase, ttl/10, 10*ttl, func(now, end time.Time, alive bool, l *lease) {
		if !alive {
			return
		}
		reads++
		s := l.status(now, poll)
		if d := end.Sub(l.end); d < 0 || d > leftResolution {
			t.Fatalf("read %d: lease end shown %s before the truth; want 0 to %s", reads, d, leftResolution)
		}
		if *s.TTLMs != ttl.Milliseconds() || !*s.Renewing {
			t.Fatalf("read %d of a live holder: ttl %d ms, renewing %t (%d ms since the last renewal shown, overdue after %d ms); want %d ms, renewing",
				reads, *s.TTLMs, *s.Renewing, *s.SinceRenewalMs, *s.NotRenewingAfterMs, ttl.Milliseconds())
		}
	})
	if reads < 20 {
		t.Fatalf("%d reads; want many", reads)
	}
}

// checkDead: a holder that dies after a few renewals is shown renewing
// until its next renewal would be due, and then not renewing, with the
// time left shown below two thirds of the TTL: before its lease runs out
// whenever the rule leaves room for that (renewalOverdue and a poll less
// than the TTL: not for TTLs of about 3 s or less, with whole seconds),
// and within a poll of the rule.
func checkDead(t *testing.T, ttl, poll, phase time.Duration) {
	t.Helper()
	death := 2*ttl + ttl/7
	var last, flagged time.Time
	etcdReads(ttl, poll, phase, 0, death, func(now, end time.Time, _ bool, l *lease) {
		last = end.Add(-ttl)
		if l.end.After(end) {
			t.Fatalf("lease end shown %s after the truth", l.end.Sub(end))
		}
		s := l.status(now, poll)
		if *s.Renewing {
			return
		}
		if flagged.IsZero() {
			flagged = now
		}
		if since := now.Sub(last); since < ttl/3 {
			t.Fatalf("shown not renewing %s after the last renewal; want not before a renewal is due (%s)", since, ttl/3)
		}
		if left := time.Duration(*s.TTLLeftMs) * time.Millisecond; left > ttl*2/3 {
			t.Fatalf("not renewing with %s left of %s shown; want at most two thirds", left, ttl)
		}
	})
	documented := ttl/3 + ttl/10 + time.Second + poll // docs/monitoring.md
	if documented+poll >= ttl {
		return
	}
	if flagged.IsZero() || !flagged.Before(last.Add(ttl)) {
		t.Fatalf("a dead holder's lease ran out at %s, shown not renewing at %s; want before it ran out", last.Add(ttl), flagged)
	}
	if d := flagged.Sub(last); d > documented+poll {
		t.Errorf("shown not renewing %s after the last renewal; want within %s and a poll", d, documented)
	}
}
