//go:build unix && !linux

package cli

import "syscall"

// sysProcAttr puts the command in a process group of its own. Outside
// Linux there is no parent-death signal: a command outlives a tenure killed
// by SIGKILL.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
