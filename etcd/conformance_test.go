package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/tenuretest"
)

// The suite's Restart check runs after the others, never concurrently with
// them, so restarting the servers under the shared client is safe.

func TestConformanceEmbedded(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, 1)
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

func TestConformanceEmbeddedCluster(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, 3)
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
	b := startBinary(t)
	cl := newClient(t, b.clients)
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cl)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithRestart(func(t *testing.T) {
			b.kill() // a crash: no graceful shutdown
			b.start(t)
		}),
	)
}

var _ = context.Background
