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
		got := uptime()
		after := now()
		if got < before || got.Sub(after) > 20*time.Millisecond {
			t.Fatalf("uptime() = %d; want between CLOCK_BOOTTIME %d before it and 20ms past %d after it", got, before, after)
		}
	}
}
