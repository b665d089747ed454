//go:build linux

package boottime

import (
	"testing"
	"time"
)

// TestUptimeNeverBehind: the reading where CLOCK_BOOTTIME is refused (a
// seccomp filter) is the host's boot clock, as /proc/uptime gives it, never
// behind it and at most a hundredth and a little ahead: another process
// (the guard, lease check) compares its readings with this one's. It was
// the time since this process started, which put every deadline hours
// ahead to a reader so refused, and so told it a lease was held long
// after its deadline (TestToldWhateverTheClock in cmd/internal/cli/e2e/term).
func TestUptimeNeverBehind(t *testing.T) {
	for range 50 {
		before := now()
		got, err := uptime()
		after := now()
		if err != nil {
			t.Fatalf("uptime() = %v; want the boot clock", err)
		}
		if got < before || got.Sub(after) > 20*time.Millisecond {
			t.Fatalf("uptime() = %d; want between CLOCK_BOOTTIME %d before it and 20ms past %d after it", got, before, after)
		}
	}
}

// TestStartedOnTheBootClock: this process's start on the boot clock, which
// a reading of /proc/uptime must not be behind, is behind the clock, by
// less than the time since the process began (a tick and a little more).
func TestStartedOnTheBootClock(t *testing.T) {
	began, err := started()
	if err != nil {
		t.Fatal(err)
	}
	if n := now(); began > n || n.Sub(began) > time.Since(start)+time.Second {
		t.Fatalf("started() = %s; want at most CLOCK_BOOTTIME %s, by at most this process's age %s and a second",
			time.Duration(began), time.Duration(n), time.Since(start))
	}
}
