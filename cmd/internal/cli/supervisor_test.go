package cli

import (
	"errors"
	"io"
	"log/slog"
	"syscall"
	"testing"
)

// TestOutcomeRanks: however the outcomes arrive, tenure run exits with the
// command's own end over a lost leadership (--exit-on-loss) over
// --wait-timeout over a signal over an error.
func TestOutcomeRanks(t *testing.T) {
	failed := errors.New("coordinator closed")
	for _, tc := range []struct {
		name string
		in   []outcome
		want int // exit code; -1: the error itself
	}{
		{"command after signal", []outcome{{bySignal, &exitError{code: 143}}, codeOutcome(5)}, 5},
		{"signal after command", []outcome{codeOutcome(0), {bySignal, &exitError{code: 143}}}, 0},
		{"wait over signal", []outcome{{bySignal, &exitError{code: 143}}, {byWait, &exitError{code: ExitNotReady}}}, ExitNotReady},
		{"loss over signal", []outcome{{bySignal, &exitError{code: 143}}, {byLoss, &exitError{code: ExitLost}}}, ExitLost},
		{"command over loss", []outcome{{byLoss, &exitError{code: ExitLost}}, codeOutcome(5)}, 5},
		{"signal over error", []outcome{{byError, failed}, {bySignal, &exitError{code: 130}}}, 130},
		{"error alone", []outcome{{byError, failed}}, -1},
		{"nothing", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &supervisor{}
			for _, o := range tc.in {
				s.finish(o)
			}
			err := s.result(nil)
			var ee *exitError
			switch {
			case tc.want == -1 && err != failed:
				t.Errorf("result = %v; want %v", err, failed)
			case tc.want == 0 && err != nil:
				t.Errorf("result = %v; want nil (exit 0)", err)
			case tc.want > 0 && (!errors.As(err, &ee) || ee.code != tc.want):
				t.Errorf("result = %v; want exit code %d", err, tc.want)
			}
		})
	}
}

// TestSignalStops: SIGINT and SIGTERM stop tenure run (128+N) for one key
// and for a group; SIGHUP stops one key with no command running, and never
// a group member.
func TestSignalStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group bool
		sig   syscall.Signal
		stops bool
	}{
		{"key SIGTERM", false, syscall.SIGTERM, true},
		{"key SIGINT", false, syscall.SIGINT, true},
		{"key SIGHUP, no command", false, syscall.SIGHUP, true},
		{"group SIGTERM", true, syscall.SIGTERM, true},
		{"group SIGHUP", true, syscall.SIGHUP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cancelled := false
			s := &supervisor{group: tc.group, log: slog.New(slog.NewTextHandler(io.Discard, nil)), cancel: func() { cancelled = true }}
			s.onSignal(tc.sig)
			err := s.result(nil)
			var ee *exitError
			stopped := errors.As(err, &ee) && ee.code == exitSignalBase+int(tc.sig)
			if stopped != tc.stops || cancelled != tc.stops || s.stopping() != tc.stops {
				t.Errorf("after %s: exit %v, cancelled %v, stopping %v; want stopped %v", tc.sig, err, cancelled, s.stopping(), tc.stops)
			}
		})
	}
}
