//go:build linux

package guard

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nameSelf names the guard process Name, as ps and top show it (a
// re-executed /proc/self/exe would show as "exe"): the name of the process
// (its main thread, /proc/self/comm) and of the calling thread, which the
// threads it starts inherit.
func nameSelf() {
	_ = os.WriteFile("/proc/self/comm", []byte(Name), 0)
	if b, err := unix.BytePtrFromString(Name); err == nil {
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(b)), 0, 0, 0)
	}
}
