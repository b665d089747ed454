// Package proc holds a server process that tests and tenure verify start,
// crash and restart (the Debian etcd, kube-apiserver): the started command
// and a channel closed once it has exited, so that a crash is one call.
package proc

import (
	"os/exec"
	"sync"
	"syscall"
)

// A Slot holds at most one running process. The zero Slot is empty.
type Slot struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts cmd into the slot and returns a channel closed once it has
// exited (its ProcessState is then set).
func (s *Slot) Start(cmd *exec.Cmd) (<-chan struct{}, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return exited, nil
}

// Kill crashes the process in the slot (SIGKILL, continuing it first if it
// was stopped), waits for it to exit and empties the slot. It does nothing
// when the slot is empty.
func (s *Slot) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Kill()
	<-exited
}
