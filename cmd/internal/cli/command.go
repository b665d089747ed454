package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/display"
)

// A commandEnd is how one run of the command ended.
type commandEnd struct {
	ran time.Duration // how long it ran (0: it did not start)
	err error         // why it could not start (nil when the term was over first)
}

// errKilledAtDeadline ends a term whose command the guard killed at the
// deadline it had.
var errKilledAtDeadline = errors.New("the guard killed the command at the local deadline")

// errRenewalOverdue ends a term whose command ended after the guard's
// SIGTERM for an overdue renewal.
var errRenewalOverdue = errors.New("the command ended after the SIGTERM for an overdue renewal")

// runCommand runs the command for term t under a guard, with env (the
// term's variables) added, until it exits or ctx ends (then it stops it:
// SIGTERM unless tenure's stopping signal was forwarded already, SIGKILL
// after --kill-grace, never past the deadline). attrs name the term in the
// log. It is the leader function of a key and of each partition.
func (s *supervisor) runCommand(ctx context.Context, t *tenure.Term, env []string, attrs ...any) commandEnd {
	if ctx.Err() != nil || s.stopping() {
		return commandEnd{} // stopping already: do not start
	}
	c, err := s.startCommand(t, env, attrs)
	if c == nil {
		return commandEnd{err: err}
	}
	defer s.setRunning(c, false)
	defer c.removeLease()
	// Feed the guard from the start: the command waits for the guard to
	// start it, and a renewal may come meanwhile.
	fed, stopFeed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fed)
		s.feed(ctx, c, t, stopFeed)
	}()
	defer func() { close(stopFeed); <-fed }()
	if err := c.awaitStart(); err != nil {
		<-c.done
		if c.died() != nil {
			s.guardDied(t, c, attrs)
			s.keepTold(t, c, attrs)
			return commandEnd{}
		}
		return commandEnd{err: s.notStarted(t, err, attrs)}
	}
	attrs = append(attrs, "pid", c.pid, "token", t.Token())
	s.log.Info("command started", append(attrs, "command", s.argv[0])...)
	stopped := false
	select {
	case <-c.done:
	case <-ctx.Done():
		s.stopCommand(ctx, c, t, attrs)
		stopped = true
	}
	switch {
	case c.died() != nil:
		s.guardDied(t, c, attrs)
	case stopped:
	case c.expired():
		// The guard killed it on its own, at the deadline it last heard
		// of (tenure was stopped, or slow): the term is over.
		s.log.Warn("the guard killed the command at the local deadline", attrs...)
		t.StepDown(errKilledAtDeadline)
	case c.overdue():
		// It ended after the guard's SIGTERM for an overdue renewal: the
		// term ends, not tenure (the command did not end on its own).
		s.log.Warn("the command ended after the SIGTERM for an overdue renewal; its term is over",
			append(attrs, "status", c.describe())...)
		t.StepDown(errRenewalOverdue)
	default:
		s.exited(c, attrs)
	}
	s.keepTold(t, c, attrs)
	return commandEnd{ran: time.Since(c.began)}
}

// guardDied ends the term of a command whose guard ended without its
// report (killed by a signal, say): processes of the command's tree may
// outlive it, still holding the term's fencing token. For one key, tenure
// exits 70 (after keepTold); a partition is claimed again after it.
func (s *supervisor) guardDied(t *tenure.Term, c *child, attrs []any) {
	err := fmt.Errorf("%w (token %d of %q): processes of the command's tree may outlive it, so the key is kept, neither renewed nor released, until the last deadline the guard was told",
		c.died(), t.Token(), t.Grant().Key)
	s.log.Error("the guard died", append(attrs, "err", err)...)
	t.StepDown(err)
	if !s.group {
		s.finish(outcome{byCommand, &exitError{code: ExitSoftware, err: err}})
		s.cancel()
	}
}

// keepTold keeps the key (or the partition) of a command whose guard
// died, or whose lease file could not be marked ended, until the last
// deadline tenure told the guard, and the term's own deadline, have
// passed: the term is ended, so nothing renews it, and the key is released
// only when this returns. Until then what the command was told (its lease
// file, its fencing token) may still say the lease is held; after, the
// lease file says it is not. It returns at once otherwise.
func (s *supervisor) keepTold(t *tenure.Term, c *child, attrs []any) {
	why := c.stillTold()
	if why == nil {
		return
	}
	t.StepDown(why) // stop renewing, if still leading
	until := max(c.toldUntil(), boottime.Instant(t.BootDeadline()))
	s.log.Warn("keeping the key, neither renewed nor released, until the last deadline told to the command",
		append(attrs, "token", t.Token(), "for", max(boottime.Until(until), 0).Round(time.Millisecond), "why", why)...)
	for d := boottime.Until(until); d > 0; d = boottime.Until(until) {
		time.Sleep(min(d, bootPoll))
	}
}

// bootPoll bounds a sleep until an instant of the boot clock: Go's timers
// stop while the host is suspended, the boot clock does not.
const bootPoll = 100 * time.Millisecond

// startCommand has a guard (the spare one, if any) start the command for
// term t, and records it as running. It returns no child when tenure is
// stopping, or when no guard could be started (and why: for one key,
// tenure's failure, and it ends).
func (s *supervisor) startCommand(t *tenure.Term, env []string, attrs []any) (*child, error) {
	c := s.swapSpare(nil)
	if c == nil || c.exited() {
		var err error
		if c, err = s.startGuard(); err != nil {
			s.log.Error("the guard could not start", append(attrs, "err", err)...)
			s.fail(outcome{byCommand, &exitError{code: ExitSoftware, err: err}})
			return nil, err
		}
	}
	if !s.setRunning(c, true) {
		s.dropGuard(c) // a stopping signal came in while the term began
		return nil, nil
	}
	first := s.leaseMessage(t)
	first.Env = env
	c.send(first)
	return c, nil
}

// notStarted handles a command its guard did not start, and returns why
// (nil when the term was over by then: the term ends, and the key or the
// partition is campaigned for again). A command that cannot be run ends
// tenure, for one key, with 126 or 127.
func (s *supervisor) notStarted(t *tenure.Term, err error, attrs []any) error {
	if errors.Is(err, errTooLate) {
		s.log.Warn("command not started: its term was over", append(attrs, "token", t.Token(), "err", err)...)
		t.StepDown(err)
		return nil
	}
	s.log.Error("command could not start", append(attrs, "command", s.argv[0], "err", err)...)
	s.fail(outcome{byCommand, startError(s.argv[0], err)})
	return err
}

// fail ends tenure with o, for one key; a partition's command that cannot
// start only releases its partition (the group claims it again).
func (s *supervisor) fail(o outcome) {
	if !s.group {
		s.finish(o)
		s.cancel()
	}
}

// exited handles the command's exit on its own (the guard has already
// stopped what was left of its tree). For one key, its code is tenure's
// unless --restart runs it again.
func (s *supervisor) exited(c *child, attrs []any) {
	attrs = append(attrs, "status", c.describe(), "ran", time.Since(c.began).Round(time.Millisecond))
	if s.group {
		s.log.Info("command exited; its partition is released and claimed again", attrs...)
		return
	}
	s.log.Info("command exited", attrs...)
	if !s.f.restart || s.signalled() != 0 {
		s.finish(codeOutcome(c.exitCode()))
		s.cancel() // resign and exit, even if the term ended meanwhile
	}
}

// stopCommand ends the command because its term ended or tenure is
// stopping. For one key, a command stopped because tenure is stopping
// gives tenure its exit code.
func (s *supervisor) stopCommand(ctx context.Context, c *child, t *tenure.Term, attrs []any) {
	sig := syscall.SIGTERM
	if s.signalled() != 0 {
		sig = 0 // the signal tenure got has been forwarded already
	}
	resigning := t.Context().Err() == nil // tenure is stopping, the term is not over
	level, why := slog.LevelInfo, "tenure is stopping"
	if !resigning {
		level, why = slog.LevelWarn, "leadership ended"
		if cause := context.Cause(t.Context()); cause != nil {
			why = cause.Error()
		}
	} else if cause := context.Cause(ctx); s.group && cause != nil && !isCanceled(cause) {
		why = cause.Error() // the partition handed over, say
	}
	s.log.Log(context.Background(), level, "stopping the command", append(attrs, "reason", why,
		"sigkill_in", max(min(s.f.killGrace, t.Remaining()), 0).Round(time.Millisecond))...)
	killed := c.stop(sig)
	s.log.Info("command stopped", append(attrs, "status", c.describe(), "sigkill", killed)...)
	if !s.group && resigning && c.died() == nil {
		s.finish(codeOutcome(c.exitCode())) // tenure is stopping: it exits with the command's code
	}
}

// startGuard starts a guard for the command; it waits for its first lease.
func (s *supervisor) startGuard() (*child, error) {
	return startChild(s.guards, s.path, s.argv, s.env, s.stdin, s.stdout, s.stderr, s.f.killGrace)
}

// swapSpare makes c the spare guard and returns the one there was.
func (s *supervisor) swapSpare(c *child) *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.st.spare
	s.st.spare = c
	return old
}

// prepare starts a spare guard ahead of the next term, so that the command
// starts the moment the term begins (a guard takes a moment to start). A
// guard that cannot start is reported when a term needs it.
func (s *supervisor) prepare() {
	if s.stopping() {
		return
	}
	s.mu.Lock()
	have := s.st.spare != nil
	s.mu.Unlock()
	if have {
		return
	}
	if c, err := s.startGuard(); err == nil {
		if old := s.swapSpare(c); old != nil {
			s.dropGuard(old)
		}
	}
}

// dropSpare ends the spare guard, if any.
func (s *supervisor) dropSpare() {
	if c := s.swapSpare(nil); c != nil {
		s.dropGuard(c)
	}
}

// dropGuard ends a guard that started no command.
func (s *supervisor) dropGuard(c *child) {
	c.close()
	<-c.done
	c.removeLease()
}

// feed sends the guard each new deadline of t until stop is closed or the
// guard is gone: the first at once, then one after each renewal (it
// sleeps in between, waking at neither a tick nor a poll). It says when
// the guard sends SIGTERM because a renewal is overdue (unless ctx has
// ended: the command is being stopped anyway). While tenure is stopped
// nothing is sent, and the guard kills the command at the last deadline
// it heard of.
func (s *supervisor) feed(ctx context.Context, c *child, t *tenure.Term, stop <-chan struct{}) {
	// overdue fires when the guard sends SIGTERM unless a renewal comes
	// first (TermAt). It runs on Go's clock, which stops while the host is
	// suspended: the warning may then come late; the guard's SIGTERM, on
	// the boot clock, does not.
	overdue := time.NewTimer(time.Hour)
	overdue.Stop()
	defer overdue.Stop()
	for {
		renewed := t.Renewed() // before the deadline is read: no renewal is missed
		if t.Context().Err() == nil {
			m := s.leaseMessage(t)
			c.send(m)
			if m.TermAt != 0 {
				overdue.Reset(max(m.TermAt.Sub(boottime.Now()), 0))
			} else {
				overdue.Stop()
			}
		}
		select {
		case <-stop:
			return
		case <-c.done:
			return
		case <-renewed:
			continue
		case <-overdue.C:
		}
		if ctx.Err() == nil {
			s.log.Warn("renewal overdue: the guard sends the command SIGTERM now, SIGKILL just before the local deadline unless a renewal comes first",
				"key", t.Grant().Key, "token", t.Token(), "sigkill_in", max(t.Remaining(), 0).Round(time.Millisecond))
		}
		select { // no news until the next renewal
		case <-stop:
			return
		case <-c.done:
			return
		case <-renewed:
		}
	}
}

// leaseMessage is the guard's news of t's lease: its deadline on the boot
// clock, and when the command gets SIGTERM if no renewal comes by then
// (see stallPlan).
func (s *supervisor) leaseMessage(t *tenure.Term) guard.Message {
	now := boottime.Now()
	// The term's deadline on the boot clock, measured from the send time of
	// the request that produced the grant, as the term's own.
	deadline := boottime.Instant(t.BootDeadline())
	name, instance := display.SplitIdentity(t.Grant().Holder)
	return guard.Message{Op: guard.OpLease, TermAt: s.stall.termAt(now, deadline, t.Grant().TTL), Lease: &guard.Lease{
		Key: t.Grant().Key, Holder: name, Instance: instance, Token: t.Token(),
		Deadline: deadline, TTLMs: t.Grant().TTL.Milliseconds(), Live: true,
	}}
}

// isCanceled reports whether err is a context's cancellation.
func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }
