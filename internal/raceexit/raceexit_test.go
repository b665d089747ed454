package raceexit

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// childEnv, set, makes the test binary exit at once: the race-built
// process whose exit the test times.
const childEnv = "TENURE_RACEEXIT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQuick: Quick adds atexit_sleep_ms=0 to the options GORACE has, and
// leaves an atexit_sleep_ms already set as it is.
func TestQuick(t *testing.T) {
	for _, tc := range []struct{ was, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=250", "atexit_sleep_ms=250"},
	} {
		t.Setenv(Env, tc.was)
		Quick()
		if got := os.Getenv(Env); got != tc.want {
			t.Errorf("GORACE %q after Quick; want %q", got, tc.want)
		}
	}
}

// TestQuickExit: this test binary, run again to exit at once, takes a
// second or more to do so when race-built, and well under half of one
// with Quick's option.
func TestQuickExit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	took := func(gorace string) time.Duration {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), childEnv+"=1", Env+"="+gorace)
		began := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return time.Since(began)
	}
	t.Setenv(Env, "")
	Quick()
	quick := took(os.Getenv(Env))
	if quick >= 500*time.Millisecond {
		t.Errorf("the child took %s to exit with GORACE=%q; want under 500ms", quick, os.Getenv(Env))
	}
	if raceBuilt {
		if slow := took(""); slow < time.Second {
			t.Errorf("the race-built child took %s to exit without GORACE; want 1s or more (the detector's default wait): the check above proves nothing", slow)
		}
	}
}
