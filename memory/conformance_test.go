package memory_test

import (
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/tenuretest"
)

func TestConformance(t *testing.T) {
	var coords sync.Map // *testing.T → *memory.Coordinator
	newCoordinator := func(t *testing.T) tenure.Coordinator {
		c := memory.New()
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
		})
		coords.Store(t, c)
		return c
	}
	restart := func(t *testing.T) {
		c, ok := coords.Load(t)
		if !ok {
			t.Fatalf("restart hook called with a test that made no coordinator")
		}
		c.(*memory.Coordinator).Restart()
	}
	tenuretest.RunCoordinatorTests(t, newCoordinator,
		tenuretest.WithTTL(500*time.Millisecond),
		tenuretest.WithGrace(time.Second),
		tenuretest.WithRestart(restart), noEdits)
}

// The suite also passes with a minimum TTL that raises what it asks for, as
// etcd's does.
func TestConformanceMinTTL(t *testing.T) {
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		c := memory.New(memory.WithMinTTL(500 * time.Millisecond))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}, tenuretest.WithTTL(100*time.Millisecond), tenuretest.WithGrace(time.Second), noEdits)
}

// noEdits: the memory coordinator's leases live in its own memory, which
// only its methods change; there is no record for an operator to edit.
var noEdits = tenuretest.WithoutEdits("the memory coordinator's records are in its process's memory, which only its methods change")
