package guard

import (
	"fmt"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// signaller reaches every process of the command's tree.
//
// Every method but kill gets due, which says whether the kill is due now:
// reading /proc can take longer than the
// freeze's and the kill's leads (on a host with many processes, or a
// loaded one), so each ends once the kill is due and leaves the rest to
// the kill, which goes first.
type signaller interface {
	signal(sig syscall.Signal, due func() bool) // sig to every process of the tree
	kill()                                      // SIGKILL to every process of the tree (the guard repeats it while any is left)
	// scout learns which processes the tree holds, so that the next
	// SIGSTOP or SIGKILL reaches them at once, before the tree is looked
	// for again. The guard scouts on each lease that comes before its
	// freeze is due: finding the tree means reading /proc (its processes'
	// children lists, then, as a backstop, every process of the host),
	// which can take a guard starved of CPU on a loaded host longer than
	// the freeze's lead (reading every process: up to 950 ms measured, on
	// two cores under a load average of 37). Scouted on the renewal, the
	// freeze and the kill reach the processes found then at once, and no
	// walk of /proc is under way when the freeze is due; the processes
	// started since are found by reading /proc after that.
	scout(due func() bool)
	// freeze is signal(SIGSTOP): a process that undoes the freeze writes
	// until the kill lands, so the freeze too ends once the kill is due.
	freeze(due func() bool)
}

// state is the guard's deadline logic: what to do to the tree, and when,
// given the messages from tenure and the boot clock. It does no I/O of its
// own besides its signaller and the lease file (when path is set).
type state struct {
	clock boottime.Clock
	grace time.Duration
	tree  signaller
	path  string // lease file; "" keeps none
	// offset is the boottime offset of the guard's time namespace (tenure's
	// too): the lease file says it (Lease.BootOffset).
	offset time.Duration

	lease   Lease
	termAt  boottime.Instant // SIGTERM then, unless 0 or sent
	termed  bool
	overdue bool // SIGTERM sent at a termAt, ever: see overdueEnd
	// termedAt is when the last SIGTERM for an overdue renewal was sent;
	// renewedSince, whether a renewal came after it.
	termedAt     boottime.Instant
	renewedSince bool
	killAt       boottime.Instant // set once the term ends or the command exits
	stopped      bool             // by Ctrl-Z (OpStop)
	frozen       bool             // SIGSTOPped freezeLead before the deadline
	killed       bool             // SIGKILL sent: the tree is gone for good
	expired      bool             // killed because the deadline passed (or tenure went away)
	leased       bool             // an OpLease has arrived
	scoutTook    time.Duration    // how long the last scout took: see freezeAt
}

// handle applies one message from tenure.
func (s *state) handle(m Message) {
	now := s.clock()
	if s.leased && !s.killed && now >= s.killDue() {
		// The kill fell due before this message was handled (the guard
		// woke for it before its timer, or late): whatever it says, even
		// a renewal, comes too late.
		s.killIfDue()
	}
	switch m.Op {
	case OpLease:
		if m.Lease == nil || s.killed || !s.lease.Live && s.leased {
			return
		}
		s.lease, s.leased = *m.Lease, true
		s.lease.Live, s.lease.BootOffset = true, s.offset
		s.renewedSince = s.overdue
		s.termAt, s.termed = m.TermAt, false
		s.save()
		if s.frozen && now < s.freezeAt() {
			s.frozen = false // renewed after all
			if !s.stopped {
				s.tree.signal(syscall.SIGCONT, s.due)
			}
		}
		if !s.frozen && now < s.freezeAt() {
			began := s.clock()  // after the SIGCONT, which is no scout's time
			s.tree.scout(s.due) // see signaller
			s.scoutTook = s.clock().Sub(began)
		}
	case OpSignal:
		// SIGCONT goes through OpCont's rules: a tree frozen for its
		// deadline, or past it, is never continued.
		if !s.killed && !(m.Signal == syscall.SIGCONT && (s.frozen || now >= s.killDue())) {
			s.tree.signal(m.Signal, s.due)
		}
	case OpEnd:
		s.end(m.Signal, now.Add(s.grace))
	case OpStop:
		if !s.killed {
			s.stopped = true
			s.tree.signal(syscall.SIGSTOP, s.due)
		}
	case OpCont:
		if !s.stopped || s.killed {
			return
		}
		s.stopped = false
		if now >= s.killDue() {
			s.expire() // never continued once its kill is due
			return
		}
		if !s.frozen {
			s.tree.signal(syscall.SIGCONT, s.due)
		}
	}
}

// tooLate says why a command whose first lease has arrived must not start,
// or returns "": the deadline has passed, or the tree is being killed
// already (tenure went away, or asked for it).
func (s *state) tooLate() string {
	if now := s.clock(); now >= s.killDue() {
		when := fmt.Sprintf("passed %s before the command could start", now.Sub(s.lease.Deadline).Round(time.Millisecond))
		if now < s.lease.Deadline {
			when = fmt.Sprintf("was %s away when the command could start, less than the kill's lead before it", s.lease.Deadline.Sub(now).Round(time.Millisecond))
		}
		return "the term's local deadline " + when + " (tenure or the guard was stopped or slow)"
	}
	if s.killed {
		return "the term ended (or tenure went away) before the command could start"
	}
	return ""
}

// end ends the term: sig now (unless 0, or SIGTERM sent already, for an
// overdue renewal with no renewal since or by an earlier end: a second one
// tells many commands to skip their clean-up, and a guard sent SIGTERM
// again and again would spend its time reading /proc for it; or unless
// the kill is due already, as under --kill-grace 0: the tree gets SIGKILL
// alone), SIGKILL at at or at the deadline, whichever comes first.
func (s *state) end(sig syscall.Signal, at boottime.Instant) {
	s.endLease()
	if s.killed {
		return
	}
	// The kill falls due at the grace's end from now on: a sig that reads
	// /proc longer than the grace ends there (see due), not at the
	// deadline's kill.
	at = min(at, s.killDue())
	if s.killAt == 0 || at < s.killAt {
		s.killAt = at
	}
	if sig != 0 && !s.due() {
		if sig != syscall.SIGTERM || !s.termed {
			s.tree.signal(sig, s.due)
		}
		if sig == syscall.SIGTERM {
			s.termed = true // the lease has ended: no renewal resets it
		}
		if (s.stopped || s.frozen) && sig != syscall.SIGKILL && s.clock() < s.freezeAt() {
			s.tree.signal(syscall.SIGCONT, s.due) // let it act on sig
			s.stopped, s.frozen = false, false
		}
	}
}

// tick acts on the boot clock: SIGTERM at termAt, SIGSTOP at freezeAt,
// SIGKILL at killDue or at killAt.
func (s *state) tick() {
	if s.killed || !s.leased {
		return
	}
	if s.killIfDue() {
		return
	}
	now := s.clock()
	if s.termAt != 0 && !s.termed && now >= s.termAt {
		s.termed, s.overdue, s.termedAt, s.renewedSince = true, true, now, false
		s.tree.signal(syscall.SIGTERM, s.due)
	}
	if !s.frozen && now >= s.freezeAt() {
		s.frozen = true
		s.tree.freeze(s.due)
	}
	s.killIfDue() // it fell due while the tree was signalled
}

// killIfDue kills the tree if its kill is due (see due), and reports
// whether it did. It is Expired when the deadline's kill came first: not
// when the term ended and its grace did before it, however late the guard
// got to the kill.
func (s *state) killIfDue() bool {
	now := s.clock()
	switch {
	case s.killAt != 0 && s.killAt < s.killDue() && now >= s.killAt:
		s.killNow()
	case now >= s.killDue():
		s.expire()
	default:
		return false
	}
	return true
}

// due reports whether the tree's kill is due: at killDue, or at killAt
// once the term has ended. Before the first lease, and once the tree is
// killed, never.
func (s *state) due() bool {
	if !s.leased || s.killed {
		return false
	}
	at := s.killDue()
	if s.killAt != 0 {
		at = min(at, s.killAt)
	}
	return s.clock() >= at
}

// overdueEnd reports whether the tree, ending now, ended because of the
// SIGTERM sent for an overdue renewal (Report.Overdue): one was sent, and
// either no renewal came since or the tree ended within the kill grace of
// it, still obeying it. A command that survived that SIGTERM, was renewed,
// and ended later on its own ended for its own reasons.
func (s *state) overdueEnd() bool {
	return s.overdue && (!s.renewedSince || s.clock().Sub(s.termedAt) <= s.grace)
}

// freezeLead is how long before the deadline the tree is stopped
// (SIGSTOP), so that it does nothing more by the deadline, when SIGKILL
// comes: at most a twentieth of the TTL.
const freezeLead = 100 * time.Millisecond

// freezeAt is when the tree is frozen unless a renewal comes first: the
// freeze's lead before the deadline, or, for a tree that took long to
// scout, early enough that the freeze (which signals what the scout
// found) ends before the kill falls due: the kill's lead and twice the
// last scout's time, at most a tenth of the TTL (at the default margin,
// still after the next renewal is overdue). A signal to a process group of
// 3,000 processes took about 100 ms, their scout 200-600 ms, on two loaded
// cores.
func (s *state) freezeAt() boottime.Instant {
	ttl := time.Duration(s.lease.TTLMs) * time.Millisecond
	lead := max(min(freezeLead, ttl/20), 0)
	if wide := s.lease.Deadline.Sub(KillAt(s.lease)) + 2*s.scoutTook; wide > lead {
		lead = max(min(wide, ttl/10), lead)
	}
	return s.lease.Deadline.Add(-lead)
}

// killLead is how long before the deadline the tree is killed (SIGKILL),
// so that the kill lands before it: a process that undoes the freeze with
// SIGCONT of its own (a timer of its own, say) runs until the SIGKILL
// lands, about a millisecond after it is sent (0.8-1.5 ms measured on two
// cores), and the rest of the lead is for a guard slow to wake on a loaded
// host. At most a fortieth of the TTL; a renewal that comes later than
// that is too late.
const killLead = 50 * time.Millisecond

// MinTTL is the shortest lease the guard keeps its promise under, and the
// shortest --ttl tenure run accepts: its kill lead, a fortieth of the TTL,
// is 25 ms there. A process that undoes the freeze with SIGCONT of its own
// wrote 1-5 ms after the deadline in most runs under a 100 ms TTL (a lead
// of 2.5 ms, which a guard woken a little late on a loaded host misses);
// under 400 ms (10 ms) it wrote within 2 ms of the deadline in at least 5 of 20
// runs beside two busy loops, and 0.3-8 ms after it in 2 runs on a host
// loaded further.
const MinTTL = time.Second

// killDue is when the tree is killed unless a renewal comes first.
func (s *state) killDue() boottime.Instant { return KillAt(s.lease) }

// KillAt is when the guard kills the tree of a term whose last lease is l,
// unless a renewal comes first: its lead (50 ms, a fortieth of the TTL at
// most) before l's deadline, so that the kill lands before the deadline.
func KillAt(l Lease) boottime.Instant {
	lead := max(min(killLead, time.Duration(l.TTLMs)*time.Millisecond/40), 0)
	return l.Deadline.Add(-lead)
}

// expire kills the whole tree because its kill is due (killDue), or
// because tenure is gone and nobody will move it.
func (s *state) expire() {
	s.expired = true
	s.killNow()
}

// killNow kills the whole tree and marks the term over.
// The lease file says so first: nothing of the tree acts after it reads
// the term is over.
func (s *state) killNow() {
	s.killed = true
	s.endLease()
	s.tree.kill()
}

// wake is how long until tick has something to do (capped by most).
func (s *state) wake(most time.Duration) time.Duration {
	if s.killed || !s.leased {
		return most
	}
	now := s.clock()
	d := min(most, s.killDue().Sub(now))
	if s.killAt != 0 {
		d = min(d, s.killAt.Sub(now))
	}
	if s.termAt != 0 && !s.termed {
		d = min(d, s.termAt.Sub(now))
	}
	if !s.frozen {
		d = min(d, s.freezeAt().Sub(now))
	}
	return max(d, 0)
}

// save writes the lease file, if there is one.
func (s *state) save() {
	if s.path != "" {
		_ = writeLease(s.path, s.lease)
	}
}
