package guard

import (
	"syscall"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// Command is the hidden subcommand that makes the tenure binary a guard:
//
//	tenure __guard [--kill-grace D] -- PATH ARGV0 [ARG...]
//
// It starts the program at PATH (named ARGV0) with the guard's own
// environment plus the first OpLease's Env, its standard files and a lease
// file, once that first OpLease has arrived on file descriptor 3: tenure
// run starts a guard ahead of each term, so that the command starts as
// soon as the term begins.
const Command = "__guard"

// Name is how a guard shows in ps and top: tenure run starts it with Name
// as its argv[0], and the guard names its process Name (the kernel's
// process name, at most 15 bytes).
const Name = "tenure-guard"

// Files the guard finds open: messages in, reports out, and, when tenure
// runs the guard's own program from memory (package guardbin), that
// program, which the command must not inherit.
const (
	ControlFD = 3
	ReportFD  = 4
	ExeFD     = 5
)

// An Op is what a Message asks of the guard.
type Op string

// The messages tenure sends, one JSON object per line.
const (
	// OpLease: the term's lease as it stands (the first starts the command).
	// SIGTERM at TermAt (when set), SIGKILL at KillAt(Lease), just before
	// Lease.Deadline.
	OpLease Op = "lease"
	// OpSignal: send Signal to every process of the tree.
	OpSignal Op = "signal"
	// OpEnd: the term is over. Signal now (unless 0, or SIGTERM sent at
	// TermAt already with no OpLease since), SIGKILL after the kill grace
	// but no later than KillAt(Lease).
	OpEnd Op = "end"
	// OpStop: SIGSTOP the tree (tenure got SIGTSTP and stops itself).
	OpStop Op = "stop"
	// OpCont: SIGCONT the tree if its kill is not due (KillAt); kill it
	// otherwise, without ever continuing it.
	OpCont Op = "cont"
)

// A Message is one instruction from tenure run to its guard.
type Message struct {
	Op     Op               `json:"op"`
	Lease  *Lease           `json:"lease,omitempty"`
	TermAt boottime.Instant `json:"term_at_boot_ns,omitempty"`
	Signal syscall.Signal   `json:"signal,omitempty"`
	// Env, with the first OpLease, is added to the command's environment
	// (the term's variables: a guard may be started before its term).
	Env []string `json:"env,omitempty"`
}

// A Report is what the guard tells tenure, one JSON object per line: first
// that the command started (Pid) or could not (Err, Code), then, once the
// command and every process of its tree are gone, how it ended.
type Report struct {
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"` // the command could not start
	Exited bool   `json:"exited,omitempty"`
	Code   int    `json:"code"`             // exit code, 128+N for signal N; 126/127 with Err
	Status string `json:"status,omitempty"` // "exit status 3", "signal: killed"
	Killed bool   `json:"killed,omitempty"` // the guard sent SIGKILL
	// Expired: the guard killed the tree on its own, because the deadline
	// it last heard of passed (or tenure went away). With Err and no Pid:
	// the command was never started, because the term's deadline had
	// passed (or its term had ended) when the guard got to start it.
	Expired bool `json:"expired,omitempty"`
	// Overdue: the tree ended because of the SIGTERM the guard sent at
	// TermAt, a renewal being overdue: no renewal came since, or the tree
	// ended within the kill grace of that SIGTERM (even if a renewal came
	// meanwhile). A tree that survived it, was renewed and ended later is
	// not Overdue.
	Overdue bool `json:"overdue,omitempty"`
}
