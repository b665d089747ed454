package guard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// leaseCheckPathEnv, set in its environment, makes the test binary's
// TestLeaseCheckInChild do what tenure lease check does with the file it
// names, on the child's own boot clock.
const leaseCheckPathEnv = "TENURE_GUARD_TEST_LEASE_CHECK"

// TestLeaseCheckInChild is the child's half of TestEndLeaseWhateverTheClock.
func TestLeaseCheckInChild(t *testing.T) {
	path := os.Getenv(leaseCheckPathEnv)
	if path == "" {
		return // only as a child
	}
	l, err := ReadLease(path)
	var now boottime.Instant
	if err == nil {
		now, err = l.Now()
	}
	if err == nil {
		err = l.Check(now)
	}
	if err == nil {
		fmt.Println("HELD")
	} else {
		fmt.Println("NOT HELD:", err)
	}
}

// TestEndLeaseWhateverTheClock: after EndLease the lease file says the term
// ended even to a reader whose boot clock reads behind tenure's: a command
// (or a process it left) in a time namespace of its own (unshare --time,
// a container restored with a boot-clock offset), where CLOCK_BOOTTIME is
// offset. A live file whose deadline has passed on tenure's clock is not
// "not held" to that reader: once the key is released, another holder may
// be granted while it reads held.
func TestEndLeaseWhateverTheClock(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "lease.json")
	l := heldLease
	l.Deadline = boottime.Now().Add(-time.Second) // passed, on this clock
	if err := writeLease(path, l); err != nil {
		t.Fatal(err)
	}
	check := func() string { return leaseCheckInTimeNS(t, unshare, "-60", path) }
	before := check()
	if err := EndLease(path, boottime.Now()); err != nil {
		t.Fatalf("EndLease = %v; want nil", err)
	}
	if got, err := ReadLease(path); err != nil || !errors.Is(got.Check(boottime.Now()), ErrEnded) {
		t.Errorf("after EndLease the file reads %+v, %v; want it to say the term ended (live false)", got, err)
	}
	after := check()
	if !strings.Contains(after, "NOT HELD") {
		t.Errorf("after EndLease, lease check with the boot clock 60s behind says:\n%s\nwant not held (before EndLease it said:\n%s)", after, before)
	}
}

// leaseCheckInTimeNS runs TestLeaseCheckInChild on the lease file at path in
// a time namespace whose boot clock is offset by offset seconds ("-60"),
// and returns what it says: HELD or NOT HELD.
func leaseCheckInTimeNS(t *testing.T, unshare, offset, path string) string {
	t.Helper()
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--time", "--boottime", offset, "--fork",
		os.Args[0], "-test.run=^TestLeaseCheckInChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), leaseCheckPathEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
		t.Skipf("no time namespace here: %v\n%s", err, out)
	}
	return string(out)
}

// TestLeaseCheckWhateverTheClock: lease check (Lease.Now, then Check) in a
// time namespace of its own, its boot clock a minute behind or ahead of
// the writer's, tells a live lease whose deadline has passed on the
// writer's clock not held, and one whose deadline lies ahead held. Behind,
// it said held for a minute past the deadline: the lease file of a tree
// whose guard and tenure were both killed says live until its deadline,
// and the key is granted again soon after it
// (TestToldWhateverTheClock in cmd/internal/cli/e2e/term).
func TestLeaseCheckWhateverTheClock(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		offset   string
		deadline time.Duration // from now, on the writer's boot clock
		want     string
	}{
		{"-60", -time.Second, "NOT HELD"},
		{"-60", 30 * time.Second, "HELD"},
		{"60", -time.Second, "NOT HELD"},
		{"60", 30 * time.Second, "HELD"},
	} {
		path := filepath.Join(t.TempDir(), "lease.json")
		l := heldLease
		l.Deadline = boottime.Now().Add(tc.deadline)
		if err := writeLease(path, l); err != nil {
			t.Fatal(err)
		}
		got := leaseCheckInTimeNS(t, unshare, tc.offset, path)
		if first, _, _ := strings.Cut(got, "\n"); first != tc.want && !strings.HasPrefix(first, tc.want+":") {
			t.Errorf("lease check, boot clock offset %ss, of a live lease whose deadline is %s from now: %q; want %s",
				tc.offset, tc.deadline, got, tc.want)
		}
	}
}

// TestLeaseNowWriterOffset: a lease written in a time namespace of its own
// (boot_offset_ns) is read on the writer's clock: a deadline a second past
// on a writer's clock a minute ahead of this one's is not held here, and
// one 30 s ahead on a writer's clock a minute behind is.
func TestLeaseNowWriterOffset(t *testing.T) {
	for _, tc := range []struct {
		offset, deadline time.Duration // the writer's offset; the deadline from now on its clock
		held             bool
	}{
		{time.Minute, -time.Second, false},
		{-time.Minute, 30 * time.Second, true},
	} {
		l := heldLease
		l.BootOffset = tc.offset
		l.Deadline = boottime.Now().Add(tc.offset + tc.deadline)
		now, err := l.Now()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Check(now); (err == nil) != tc.held {
			t.Errorf("lease written %s ahead of this clock, deadline %s from now on its own: Check = %v; want held %t",
				tc.offset, tc.deadline, err, tc.held)
		}
	}
}
