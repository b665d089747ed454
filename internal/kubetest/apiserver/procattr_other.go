//go:build !linux

package apiserver

import "syscall"

// procAttr is empty off Linux, which has no parent-death signal: there,
// a kube-apiserver outlives a test process that is killed. (The package is
// linked into tenure, which is built for macOS too.)
func procAttr() *syscall.SysProcAttr {
	return nil
}
