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
// its own, and reads [Message]s from tenure on its control channel, a
// Unix-domain socket (file descriptor 3, see [Channel]):
// each new local deadline as a CLOCK_BOOTTIME instant, forwarded signals,
// the end of the term, and Ctrl-Z (stop and continue). It kills the whole
// process tree — every process whose parent chain leads to the guard — at
// the last deadline it heard of, or at once when the channel reaches end of
// file (tenure died, even by SIGKILL). A process is alive, and part of the
// tree, while any of its threads is, whatever its state: one whose main
// thread ended with pthread_exit shows as a zombie in /proc while its other
// threads run on, and is killed like any other (see [Proc.Alive]).
//
// The tree is gone once the kernel says the guard has no child left, exited
// or not (wait4 answers ECHILD). That answer is exact whatever /proc shows:
// every process of the tree descends from a child of the guard, since an
// orphan is handed to the guard before its parent turns zombie. A chain of
// processes each of which forks its successor and exits at once, which no
// reading of /proc sees whole, keeps the tree from being gone for as long
// as it runs. The guard then reports the command's exit status on file
// descriptor 4, its report channel.
//
// To kill the tree, the guard sends SIGKILL to every process of it that
// /proc shows (through pidfds, checked to still be in the tree first), to
// every process group one of them leads, and to the process group of every
// child of the guard, exited or not: a child's pid, and so its group's id,
// cannot be reused before the guard reaps it, and a signal to a group
// reaches a fork under way. A process with SIGKILL pending cannot fork. The
// guard repeats that until the tree is gone, however long it takes, and
// names what survives every 10 s. Ctrl-Z, the freeze before the deadline
// and SIGTERM reach the same processes and groups.
//
// The guard finds the tree by following, down from itself, the children
// lists the kernel keeps for each thread (/proc/PID/task/TID/children),
// reading only the tree's processes. A list read while a process leaves it
// (it exits, or is reparented) may skip another; so the freeze and the
// kill then also read the stat line of every process of the host, and
// other signals go by that reading alone. Without the lists
// (CONFIG_PROC_CHILDREN unset) the guard reads every process each time.
//
// The freeze (SIGSTOP) comes 100 ms before the deadline (a twentieth of the
// TTL at most), so that nothing of the tree runs at it, and the kill
// (SIGKILL) 50 ms before it (a fortieth of the TTL at most), so that it
// lands before the deadline even in a process that undoes the freeze with
// SIGCONT of its own (a timer of its own, say). A guard starved of
// CPU on a loaded host can take longer than that to read /proc; so, on
// each renewal, the guard scouts the tree and holds a pidfd for each of its
// processes, and the freeze and the kill signal those at
// once, before they read /proc for processes started since. A process
// started after the last renewal is stopped only once the guard has read
// /proc; a guard that gets no CPU between the freeze and the deadline
// freezes nothing in time, and kills the tree when it next runs.
//
// The guard finds the tree's processes in /proc, so it refuses to start
// the command when /proc may hide processes from it: mounted with hidepid,
// the guard having neither CAP_SYS_PTRACE nor the mount's gid= group.
// Should /proc stop showing the guard itself later (a file system mounted
// over it), the guard cannot find what is left of the tree to signal it,
// and waits until the tree is gone.
//
// The guard also keeps the lease file the command finds in
// TENURE_LEASE_FILE (see [Lease]), so that `tenure lease check` stays
// truthful while tenure is stopped.
//
// Out of reach: someone stopping or killing the guard itself (the command
// then gets SIGKILL from the kernel when the guard dies, by the parent-death
// signal, but its descendants do not), the command's own tree included: a
// process of it may signal the guard (same user), and, running as root,
// ptrace it or tenure, or take an end of the guard's channels from either
// (pidfd_getfd) and write on it (the guard and tenure run are not
// dumpable, see [Undumpable], which keeps all of these from a process of
// the same user that is not root, but for the instant between the guard's
// execve and its call of Undumpable, in which such a process may ptrace
// the guard or take its channels where the kernel lets a user trace its
// own processes: no Yama, or Yama's ptrace_scope 0; nobody can open a
// channel, a socket, through /proc/PID/fd. Against that instant, the guard
// refuses to go on while traced, and once not dumpable hands tenure a
// report channel made then, which tenure takes only from the guard's pid
// and untraced, see [AcceptReport]; what remains is a tracer that detached
// before that check, and a process reading the guard's end of the control
// channel, which takes messages meant for the guard); a process that undoes
// the freeze with SIGCONT of its own when the kill cannot land within its
// lead: the freeze and the kill signal the process group each scouted
// process is in first, everything but the kill (a forwarded signal,
// Ctrl-Z, the freeze, a scout) stops signalling and reading /proc once the
// kill falls due, so that the kill goes then, and a tree whose scout took long is
// frozen earlier (twice the scout's time before the kill, a tenth of the
// TTL at most), but in a tree of thousands of processes the process can
// write until the kill lands, past the deadline, as can one the freeze
// does not reach first: forked after the last renewal (found by reading
// /proc only), or moved into a group already signalled. The kernel took
// 1.5 s to deliver SIGKILL to a group of 3,000 processes on two cores
// (measured with 3,000 processes: 0.9-1.4 s late for a writer forked after
// the renewal, at TTL 2 s and 10 s; 0.15-0.73 s for one that changed group;
// 0.23-0.35 s for the last forked undoing the freeze, in 2 of 9 runs made
// two at a time; under a TTL below MinTTL, which tenure run refuses,
// 1-5 ms); a process group that empties and
// whose id is reused in the instant between the guard reading that a process
// of the tree leads it (or that a live child of the guard is in it) and
// signalling it; processes that multiply faster than the guard kills them
// where no signal to a group reaches them (a fork chain or a fork bomb in
// the guard's own process group, which the guard never signals whole, or one
// whose every process starts a process group of its own): the guard never
// reports such a tree gone, and kills each process it finds, but ends it
// only once a kill lands before a fork completes; nor do Ctrl-Z and the
// freeze before the deadline (SIGSTOP) stop it for sure; a process
// outside the tree in a process group with a process of the tree (the
// command runs in the session of the guard's caller, where each may join
// the other's group): the guard's signals to that group reach it.
package guard
