// Package guard is the process that keeps the command of `tenure run` from
// outliving its lease, even when tenure itself is stopped, suspended or
// killed.
//
// The guard is a program of its own, cmd/tenure-guard, which the tenure
// binary embeds and tenure run executes from memory (package guardbin), as
// [Name]; a tenure binary built without it (a plain go build) re-executes
// itself with the hidden subcommand [Command] instead. The guard makes itself a child subreaper (PR_SET_CHILD_SUBREAPER:
// orphans of the command's descendants, double-forked or setsid'd, become
// its children instead of init's), starts the command in a process group of
// its own, and reads [Message]s from tenure on a pipe (file descriptor 3):
// each new local deadline as a CLOCK_BOOTTIME instant, forwarded signals,
// the end of the term, and Ctrl-Z (stop and continue). It kills the whole
// process tree — every process whose parent chain leads to the guard — at
// the last deadline it heard of, or at once when the pipe reaches end of
// file (tenure died, even by SIGKILL). A process is alive, and part of the
// tree, while any of its threads is, whatever its state: one whose main
// thread ended with pthread_exit shows as a zombie in /proc while its other
// threads run on, and is killed like any other (see [Proc.Alive]). The tree
// is empty once no process of it is alive; the guard then reports the
// command's exit status on file descriptor 4.
//
// The guard finds the tree in /proc, so it refuses to start the command
// when /proc may hide processes from it: mounted with hidepid, the guard
// having neither CAP_SYS_PTRACE nor the mount's gid= group. Should /proc
// stop showing the guard itself later (a file system mounted over it), the
// guard cannot tell what is left of the tree and never reports it empty.
//
// The guard also keeps the lease file the command finds in
// TENURE_LEASE_FILE (see [Lease]), so that `tenure lease check` stays
// truthful while tenure is stopped.
//
// Out of reach: someone stopping or killing the guard itself (the command
// then gets SIGKILL from the kernel when the guard dies, by the parent-death
// signal, but its descendants do not); a chain of processes each of which
// forks its successor and exits at once, in a process group whose leader
// has gone, which no reading of /proc sees alive; a process group that
// empties and whose id is reused in the instant between reading /proc and
// signalling the group (single processes are signalled through pidfds,
// checked to still be in the tree first).
package guard
