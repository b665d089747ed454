package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// BootOffset is how far this process's boot clock reads ahead of the
// host's: the boottime offset of its time namespace (time_namespaces(7);
// unshare --time, a container restored with a boot-clock offset), 0 in the
// host's, as /proc/self/timens_offsets says. It fails when it cannot tell:
// /proc unreadable, or this process unshared its time namespace without
// entering it (the file then shows its children's).
func BootOffset() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/ns"); serr == nil {
			if _, terr := os.Lstat("/proc/self/ns/time"); errors.Is(terr, fs.ErrNotExist) {
				return 0, nil // a kernel without time namespaces: every clock is the host's
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("the boot clock's offset from the host's: %w", err)
	}
	own, err := os.Readlink("/proc/self/ns/time")
	children, cerr := os.Readlink("/proc/self/ns/time_for_children")
	if err = errors.Join(err, cerr); err != nil || own != children {
		return 0, fmt.Errorf("the boot clock's offset from the host's: this process's time namespace (%s) is not its children's (%s): %v", own, children, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "boottime" {
			s, serr := strconv.ParseInt(f[1], 10, 64)
			ns, nerr := strconv.ParseInt(f[2], 10, 64)
			if serr == nil && nerr == nil {
				return time.Duration(s)*time.Second + time.Duration(ns), nil
			}
		}
	}
	return 0, fmt.Errorf("the boot clock's offset from the host's: no boottime line in /proc/self/timens_offsets: %q", b)
}
