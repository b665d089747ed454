package guard_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

// TestGuardProcMountedOver: a command (root, in the guard's mount
// namespace) that mounts a file system over /proc after the guard has
// started hides its tree from the guard, whose every later reading of
// /proc finds no process. The guard must not report the tree gone while a
// process of it lives: blind, it waits. (Needs root: unshare --mount,
// mount.)
func TestGuardProcMountedOver(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	wrap := []string{"unshare", "--mount", "--propagation", "private"}
	g := startGuard(t, 300*time.Millisecond, wrap, nil, "/bin/sh", "sh", "-c",
		`sleep 60 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; mount -t tmpfs hide /proc`, out)
	g.lease(t, time.Minute)
	started, ok := g.report(reportWithin)
	if !ok || started.Pid == 0 {
		t.Fatalf("the guard did not start the command: %+v", started)
	}
	sleep := awaitInt(t, out)
	held := pidfds{}
	t.Cleanup(held.kill)
	held.hold(t, []guard.Proc{{Pid: sleep}})
	// The command has exited: a guard that could see would kill the
	// sleep (kill grace 300ms) and report within this.
	r, ok := g.report(3 * time.Second)
	if left := held.alive(); ok && len(left) > 0 {
		t.Errorf("the guard reported %+v while %s of the tree lived", r, describe(left))
	}
	g.cmd.Process.Kill() // blind, it waits for ever
}
