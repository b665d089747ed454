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
	if err == nil {
		err = l.Check(boottime.Now())
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
	check := func() string {
		t.Helper()
		cmd := exec.Command(unshare, "--user", "--map-root-user", "--time", "--boottime", "-60", "--fork",
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
