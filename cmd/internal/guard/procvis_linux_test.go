package guard

import (
	"strings"
	"testing"
)

// TestProcOptions: the options of the proc file system at /proc are those
// of the last mount there; something else mounted over it is none.
func TestProcOptions(t *testing.T) {
	const (
		root   = "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		proc   = "23 22 0:20 / /proc rw,nosuid shared:12 - proc proc rw\n"
		hidden = "65 23 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible,gid=27\n"
		tmpfs  = "66 65 0:40 / /proc rw - tmpfs none rw\n"
	)
	for _, tc := range []struct {
		mountinfo, opts string
		ok              bool
	}{
		{root + proc, "rw", true},
		{root + proc + hidden, "rw,hidepid=invisible,gid=27", true},
		{root + hidden + "24 22 0:22 / /proc/sys ro - proc proc rw\n", "rw,hidepid=invisible,gid=27", true},
		{root + proc + tmpfs, "", false},
		{root, "", false},
	} {
		if opts, ok := procOptions([]byte(tc.mountinfo)); opts != tc.opts || ok != tc.ok {
			t.Errorf("procOptions(%q) = %q, %v; want %q, %v", tc.mountinfo, opts, ok, tc.opts, tc.ok)
		}
	}
}

// TestProcHides: hidepid refuses unless the guard may see every process:
// CAP_SYS_PTRACE, or (hidepid 1 and 2 only) the mount's gid= group, 0
// when it names none.
func TestProcHides(t *testing.T) {
	in27 := func(gid int) bool { return gid == 27 }
	in0 := func(gid int) bool { return gid == 0 }
	for _, tc := range []struct {
		opts    string
		ptrace  bool
		inGroup func(int) bool
		hides   bool
	}{
		{"rw", false, in27, false},
		{"rw,hidepid=0", false, in27, false},
		{"rw,hidepid=off,subset=pid", false, in27, false},
		{"rw,hidepid=2", false, in27, true},
		{"rw,hidepid=invisible", false, in27, true},
		{"rw,hidepid=noaccess", false, in27, true},
		{"rw,hidepid=1,gid=26", false, in27, true},
		{"rw,hidepid=invisible", true, in27, false},
		{"rw,hidepid=invisible,gid=27", false, in27, false},
		{"rw,hidepid=noaccess,gid=27", false, in27, false},
		{"rw,hidepid=ptraceable,gid=27", false, in27, true},
		{"rw,hidepid=4", true, in27, false},
		{"rw,hidepid=2", false, in0, false}, // gid=0, the default, is not shown
		{"rw,hidepid=ptraceable", false, in0, true},
	} {
		err := procHides(tc.opts, tc.ptrace, tc.inGroup)
		if (err != nil) != tc.hides {
			t.Errorf("procHides(%q, ptrace %v) = %v; want refusal %v", tc.opts, tc.ptrace, err, tc.hides)
		}
		if err != nil && !strings.Contains(err.Error(), "hidepid") {
			t.Errorf("procHides(%q): %v; want it to name hidepid", tc.opts, err)
		}
	}
}
