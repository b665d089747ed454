package cli

import "syscall"

// sysProcAttr puts the command in a process group of its own, so that
// tenure can signal it and everything it starts together, and asks the
// kernel to SIGKILL it when the thread that started it exits: if tenure
// dies, even by SIGKILL, its command dies with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
