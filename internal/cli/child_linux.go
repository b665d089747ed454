package cli

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the command in a process group of its own, so that
// tenure can signal it and everything it starts together, and asks the
// kernel to SIGKILL it when the thread that started it exits: if tenure
// dies, even by SIGKILL, its command dies with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupHasLive reports whether a process of group pgid that is not a
// zombie exists, from /proc. If /proc cannot be read it assumes so.
func groupHasLive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
