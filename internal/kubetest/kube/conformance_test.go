package kube_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/tenuretest"
)

// TestConformance runs the suite against a real kube-apiserver on the
// embedded etcd; its Restart check crashes and restarts the API server.
func TestConformance(t *testing.T) { conformance(t) }

// TestConformanceEtcdBinary runs it on Debian's etcd binary.
func TestConformanceEtcdBinary(t *testing.T) { conformance(t, kubetest.WithEtcdBinary()) }

func conformance(t *testing.T, opts ...kubetest.Option) {
	t.Parallel() // it mostly waits for leases to expire
	s, cs := server(t, opts...)
	ns := newNamespace(t, cs)
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cs, ns)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithRestart(func(t *testing.T) {
			s.Kill()
			s.Restart(t)
		}),
	)
}
