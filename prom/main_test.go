package prom_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The integration tests run Electors and memory coordinators, which start
// goroutines; none may outlive its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
