package guard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestLeaseFileFifo: a named pipe at the lease file's path (the command
// runs as the same user and can put one there) neither says the lease is
// held nor makes ReadLease (lease check) or EndLease (tenure, after the
// guard's end; tenure keeps the key, renewed, until it returns) wait for a
// writer: both return, and EndLease leaves no pipe at the path.
func TestLeaseFileFifo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// unblock lets a read stuck on the pipe end (opening its write side
	// completes its open; closing it gives it EOF), so that a red run
	// leaves no goroutine behind.
	unblock := func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Errorf("%s of a named pipe at the path still waits after 5s", what)
			for {
				unblock()
				select {
				case err := <-done:
					return err
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	if err := within("ReadLease", func() error { _, err := ReadLease(path); return err }); err == nil {
		t.Error("ReadLease of a named pipe = nil error; want one (not held)")
	}
	if err := within("EndLease", func() error { return EndLease(path, boottime.Now()) }); err != nil {
		t.Errorf("EndLease of a named pipe = %v; want nil", err)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		t.Error("EndLease left the named pipe at the path")
	}
}
