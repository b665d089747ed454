package etcd_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/tenuretest"
)

// The suite's Restart check runs after the others, never concurrently with
// them, so restarting the servers under the shared client is safe.

func TestConformanceEmbedded(t *testing.T) { conformanceEmbedded(t, 1) }

func TestConformanceEmbeddedCluster(t *testing.T) { conformanceEmbedded(t, 3) }

// conformanceEmbedded runs the suite on an n-member embedded cluster whose
// members all restart in the Restart check.
func conformanceEmbedded(t *testing.T, n int) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, n)
	cl := newClient(t, c.endpoints())
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cl)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithRestart(func(t *testing.T) {
			c.stopAll()
			c.startAll(t)
		}),
	)
}

func TestConformanceEtcdBinary(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	b := etcdbin.New(t)
	cl := newClient(t, []string{b.URL})
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cl)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithRestart(func(t *testing.T) {
			b.Kill() // a crash: no graceful shutdown
			b.Restart(t)
		}),
	)
}
