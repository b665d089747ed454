package boottime

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestNowMovesForward(t *testing.T) {
	a := Now()
	time.Sleep(10 * time.Millisecond)
	b := Now()
	if d := b.Sub(a); d < 10*time.Millisecond {
		t.Fatalf("boot clock advanced %s over a 10ms sleep; want >= 10ms", d)
	}
	if Until(a) >= 0 || Since(a) < 10*time.Millisecond {
		t.Fatalf("Until(past) = %s, Since(past) = %s; want negative, >= 10ms", Until(a), Since(a))
	}
	if got := a.Add(time.Second).Sub(a); got != time.Second {
		t.Fatalf("Add(1s).Sub = %s; want 1s", got)
	}
}

// TestSharedAcrossProcesses checks that the reading is the host's, not the
// process's: /proc/uptime (which counts suspended time, like
// CLOCK_BOOTTIME) agrees with Now to within a second.
func TestSharedAcrossProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CLOCK_BOOTTIME is Linux's")
	}
	out, err := exec.Command("cat", "/proc/uptime").Output()
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(out))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	up := time.Duration(secs * float64(time.Second))
	if d := time.Duration(Now()) - up; d < -time.Second || d > time.Second {
		t.Fatalf("boot clock %s vs /proc/uptime %s: differ by %s; want within 1s", time.Duration(Now()), up, d)
	}
}

// A suspendable clock follows a synctest bubble's time, and a suspend moves
// it alone, as a host suspend moves CLOCK_BOOTTIME but not Go's clock.
func TestSuspendable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := NewSuspendable()
		defer Simulate(c)()
		start, mono := Now(), time.Now()
		time.Sleep(2 * time.Second)
		suspend(30 * time.Second)
		if got, want := Since(start), 32*time.Second; got != want {
			t.Errorf("boot clock moved %s over a 2s sleep and a 30s suspend; want %s", got, want)
		}
		if got := time.Since(mono); got != 2*time.Second {
			t.Errorf("Go's clock moved %s; want 2s (a suspend does not move it)", got)
		}
	})
	if c := simulated.Load(); c != nil {
		t.Error("the simulated clock is still set after restore")
	}
}
