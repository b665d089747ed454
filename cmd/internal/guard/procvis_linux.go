//go:build linux

package guard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// checkProcVisible returns an error when /proc may hide processes of the
// command's tree from the guard, which would then neither signal them nor
// wait for them: /proc mounted with hidepid, unless the guard may see
// every process anyway (CAP_SYS_PTRACE, or, for hidepid=1 and 2, the
// mount's gid= group).
func checkProcVisible() error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("cannot tell whether /proc shows every process: %w", err)
	}
	opts, ok := procOptions(b)
	if !ok {
		return errors.New("no proc file system is mounted at /proc: the guard finds the command's processes there")
	}
	return procHides(opts, mayPtrace(), inGroup)
}

// procOptions returns the file system options of the proc file system
// mounted at /proc (the last mount there, which hides those below), from
// the text of /proc/self/mountinfo.
func procOptions(mountinfo []byte) (opts string, ok bool) {
	for _, line := range bytes.Split(mountinfo, []byte("\n")) {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
		f := strings.Fields(string(line))
		if len(f) < 6 || f[4] != "/proc" {
			continue
		}
		sep := slices.Index(f[6:], "-") + 6
		if sep < 6 || sep+1 >= len(f) {
			continue
		}
		opts, ok = "", f[sep+1] == "proc" // anything else mounted over /proc hides it
		if ok && sep+3 < len(f) {
			opts = f[sep+3]
		}
	}
	return opts, ok
}

// procHides returns an error when a proc file system mounted with opts may
// hide processes of another user from a guard that may ptrace any
// process (ptrace) or not, and is in the groups inGroup says.
func procHides(opts string, ptrace bool, inGroup func(gid int) bool) error {
	hide, gid := "", "0" // /proc's options leave out gid=0, the default
	for _, o := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "hidepid":
			hide = v
		case "gid":
			gid = v
		}
	}
	switch {
	case hide == "" || hide == "0" || hide == "off" || ptrace:
		return nil
	case hide != "4" && hide != "ptraceable":
		if g, err := strconv.Atoi(gid); err == nil && inGroup(g) {
			return nil
		}
	}
	return fmt.Errorf("/proc is mounted with hidepid=%s: it may hide processes of the command's tree (another user's) from the guard, "+
		"which could then not kill them; refusing to run the command. Mount /proc without hidepid, or with gid= a group tenure runs in, "+
		"or give tenure CAP_SYS_PTRACE", hide)
}

// mayPtrace reports whether the guard has CAP_SYS_PTRACE in effect, which
// shows it every process whatever hidepid says.
func mayPtrace() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_PTRACE/32].Effective&(1<<(unix.CAP_SYS_PTRACE%32)) != 0
}

// inGroup reports whether the guard is in group gid (its effective group
// or a supplementary one).
func inGroup(gid int) bool {
	if os.Getegid() == gid {
		return true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if g == gid {
			return true
		}
	}
	return false
}
