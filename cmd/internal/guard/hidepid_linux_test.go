package guard_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGuardHidepid: in a mount namespace whose /proc is mounted with
// hidepid=invisible, a guard without CAP_SYS_PTRACE refuses to start the
// command and says why; one with CAP_SYS_PTRACE, or in the mount's gid=
// group, starts it. (Needs root: unshare --mount, mount -t proc.)
func TestGuardHidepid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to mount a proc file system with hidepid in a mount namespace of its own")
	}
	// Root without CAP_SYS_PTRACE, and out of group 0 (which hidepid
	// exempts unless the mount names another gid).
	noPtrace := []string{"setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps", "-sys_ptrace", "--regid", "65534", "--clear-groups"}
	for _, tc := range []struct {
		name, opts string
		caps       []string
		refuses    bool
	}{
		{"no CAP_SYS_PTRACE", "hidepid=invisible", noPtrace, true},
		{"CAP_SYS_PTRACE", "hidepid=invisible", nil, false},
		{"in the gid group", "hidepid=invisible,gid=65534", noPtrace, false},
		{"no hidepid", "hidepid=off", noPtrace, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			wrap := append([]string{"unshare", "--mount", "--propagation", "private",
				"sh", "-c", `mount -t proc -o "$0" proc /proc && exec "$@"`, tc.opts}, tc.caps...)
			g := startGuard(t, time.Second, wrap, nil, "/bin/sh", "sh", "-c", `touch "$0"; sleep 60`, marker)
			if !tc.refuses {
				g.lease(t, time.Minute)
			}
			r, ok := g.report(reportWithin)
			switch {
			case !ok:
				t.Fatalf("no report from the guard within %s", reportWithin)
			case tc.refuses && (r.Pid != 0 || r.Code != 126 || !strings.Contains(r.Err, "hidepid=invisible")):
				t.Errorf("report %+v; want the command refused (code 126) for hidepid=invisible", r)
			case !tc.refuses && r.Pid == 0:
				t.Errorf("report %+v; want the command started", r)
			}
			g.closeControl()
			if _, ok := g.report(reportWithin); !ok && !tc.refuses {
				t.Errorf("no final report within %s of closing the control channel", reportWithin)
			}
			if _, err := os.Stat(marker); tc.refuses && err == nil {
				t.Errorf("the command ran")
			}
		})
	}
}
