package tenuretest

import (
	"testing"

	"github.com/tenure-dev/tenure"
)

// CheckNames lists the suite's checks, in order.
func CheckNames() []string {
	var names []string
	for _, ck := range allChecks() {
		names = append(names, ck.name)
	}
	return names
}

// RunCheck runs the named check against c, reporting to tb, so that the
// suite's tests can run it against planted bugs and capture the failure.
func RunCheck(tb testing.TB, name string, c tenure.Coordinator, restart func(), opts ...Option) {
	tb.Helper()
	for _, ck := range allChecks() {
		if ck.name == name {
			runCheck(tb, ck, c, newOptions(opts), restart)
			return
		}
	}
	tb.Fatalf("no check named %q", name)
}

// ValidateOptions reports what RunCoordinatorTests would refuse in opts.
func ValidateOptions(opts ...Option) error { return newOptions(opts).validate() }
