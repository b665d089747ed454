package etcd_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/etcdtesting"
	"github.com/tenure-dev/tenure/tenuretest"
)

// The suite's Restart check runs after the others, never concurrently with
// them, so restarting the servers under the shared client is safe.

func TestConformanceEtcdBinary(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	b := etcdbin.New(t)
	cl := newClient(t, []string{b.URL})
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cl)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithEdits(etcdtesting.Edits(cl, newCoordinator(t, cl).EtcdKey)),
		tenuretest.WithRestart(func(t *testing.T) {
			b.Kill() // a crash: no graceful shutdown
			b.Restart(t)
		}),
	)
}
