//go:build unix && !linux

package guard

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketpair returns a connected pair of close-on-exec Unix-domain stream
// sockets (no SOCK_CLOEXEC here: no fork between the two calls).
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	return fds, err
}
