package etcd_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformanceEmbedded runs the partition group suite on an
// embedded etcd member, each group member with its own client, as separate
// processes would have.
func TestGroupConformanceEmbedded(t *testing.T) {
	c := startCluster(t, 1)
	partitiontest.Run(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, newClient(t, c.endpoints()))
	}, partitiontest.WithTTL(2*time.Second))
}

// TestGroupConformanceEtcdBinary runs the suite on the Debian etcd binary
// (3.4), whose nested transactions the claims rely on.
func TestGroupConformanceEtcdBinary(t *testing.T) {
	b := etcdbin.New(t)
	partitiontest.Run(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, newClient(t, []string{b.URL}))
	}, partitiontest.WithTTL(2*time.Second))
}
