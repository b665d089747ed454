//go:build linux

package guard

import "golang.org/x/sys/unix"

// socketpair returns a connected pair of close-on-exec Unix-domain stream
// sockets.
func socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}
