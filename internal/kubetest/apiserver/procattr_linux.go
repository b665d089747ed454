package apiserver

import "syscall"

// procAttr has kube-apiserver killed when the process that started it
// dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
