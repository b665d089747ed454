package monitor_test

import (
	"testing"

	"github.com/tenure-dev/tenure/internal/leakcheck"
)

// The tests run Monitors, Electors and an etcd member in-process; none of
// their goroutines may outlive the tests.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
