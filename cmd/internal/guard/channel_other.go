//go:build unix && !linux

package guard

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Channel returns one of the two channels between tenure run and a guard
// (see the Linux version; the guard itself needs Linux).
func Channel() (ours, theirs *os.File, err error) {
	syscall.ForkLock.RLock() // no fork between the socketpair and the close-on-exec
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fds[0]), "guard channel"), os.NewFile(uintptr(fds[1]), "guard channel"), nil
}
