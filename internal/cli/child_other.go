//go:build unix && !linux

package cli

import "syscall"

// sysProcAttr puts the command in a process group of its own. Outside
// Linux there is no parent-death signal: a command outlives a tenure killed
// by SIGKILL.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupHasLive reports whether a process of group pgid may be alive: a
// member exists, zombies included.
func groupHasLive(pgid int) bool { return true }
