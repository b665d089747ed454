//go:build unix

package guard

import (
	"os"

	"golang.org/x/sys/unix"
)

// Channel returns one of the two channels between tenure run and a guard,
// a connected pair of Unix-domain stream sockets: tenure keeps ours, and
// the guard gets theirs as ControlFD (tenure writes Messages on ours) or
// ReportFD (tenure reads Reports from ours). Both are close-on-exec: pass
// theirs in exec.Cmd.ExtraFiles, and close it once the guard has started.
//
// Sockets, not pipes: a socket cannot be opened through /proc/PID/fd
// (ENXIO), so a process of the guard's user that reads /proc in the
// instant between the guard's execve and its Undumpable cannot take hold
// of a channel that way. As with a pipe, an end reads end of file once
// every copy of the other end is closed: the guard learns that tenure
// died, and tenure that the guard did; and a write to an end whose other
// end is closed fails with EPIPE, whose SIGPIPE the Go runtime ignores on
// file descriptors other than 1 and 2.
func Channel() (ours, theirs *os.File, err error) {
	fds, err := socketpair()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	// Ours goes through the runtime's poller, as an os.Pipe does: a Close
	// ends a read or write under way. Theirs stays blocking, as the guard
	// got a pipe.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fds[0]), "guard channel"), os.NewFile(uintptr(fds[1]), "guard channel"), nil
}
