package guard

import (
	"os"
	"testing"

	"github.com/tenure-dev/tenure/internal/leakcheck"
	"github.com/tenure-dev/tenure/internal/raceexit"
)

// AsGuardEnv, set to 1 in its environment, makes the test binary a guard
// (Main, with the arguments after the binary's name), for tests that run
// one as a process of its own.
const AsGuardEnv = "TENURE_GUARD_TEST_AS_GUARD"

func TestMain(m *testing.M) {
	if os.Getenv(AsGuardEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stderr))
	}
	raceexit.Quick() // this binary, run again as the guard, exits at once
	leakcheck.VerifyTestMain(m)
}
