package tenuretest_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/tenuretest"
)

// A backend's conformance test: RunCoordinatorTests calls the factory for
// a new coordinator in each subtest. The etcd backend's factory returns
// etcd.New(client) on a client of its test cluster instead, and it passes
// WithEdits with the edits an operator can make with etcdctl, where memory,
// whose records nobody outside its process can reach, passes WithoutEdits.
func Example() {
	_ = func(t *testing.T) { // func TestConformance(t *testing.T)
		tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
			c := memory.New()
			t.Cleanup(func() { c.Close() })
			return c
		}, tenuretest.WithTTL(2*time.Second),
			tenuretest.WithoutEdits("memory's records live in its process, which only its methods change"))
	}
}
