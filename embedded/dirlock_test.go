package embedded_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
)

// TestDataDirInUse: a second member on a data dir in use fails at once
// with a *DirInUseError naming the process that holds it, and the dir is
// free again after Close.
func TestDataDirInUse(t *testing.T) {
	cfg := localConfig(t)
	first := start(t, cfg)
	second := localConfig(t)
	second.Dir = cfg.Dir
	began := time.Now()
	_, err := embedded.Start(ctx(t), second)
	var inUse *embedded.DirInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, embedded.ErrDirInUse) || inUse.PID != os.Getpid() || inUse.Dir != cfg.Dir {
		t.Fatalf("Start() on a dir in use = %v; want a DirInUseError naming %s and pid %d", err, cfg.Dir, os.Getpid())
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Start() on a dir in use took %s; want it not to wait for the lock", took)
	}
	first.Close()
	start(t, second).Close()
}

// TestDataDirDatabaseLocked: a database locked by a process that does not
// use tenure's lock file (another etcd) is found too, with its pid.
func TestDataDirDatabaseLocked(t *testing.T) {
	cfg := localConfig(t)
	start(t, cfg).Close()
	db := filepath.Join(cfg.Dir, "member", "snap", "db")
	if err := os.Remove(filepath.Join(cfg.Dir, embedded.LockFile)); err != nil {
		t.Fatal(err)
	}
	// flock(1) from util-linux holds the database's lock in another
	// process, as etcd's bbolt does.
	holder := exec.Command("flock", "--exclusive", db, "sleep", "30")
	if err := holder.Start(); err != nil {
		t.Fatalf("start flock(1): %v", err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		f.Close()
		if err != nil {
			break // flock(1) holds it
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) did not take the database's lock within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := embedded.Start(ctx(t), cfg)
	var inUse *embedded.DirInUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), "is in use by process") || inUse.PID == 0 {
		t.Fatalf("Start() on a locked database = %v; want a DirInUseError with the holder's pid", err)
	}
}
