package bench

import (
	"context"
	"fmt"

	"github.com/tenure-dev/tenure/embedded"
)

// StartEtcd starts a single-member etcd in dir, on free loopback ports: the
// server a benchmark runs against when the user names none. The caller
// closes it.
func StartEtcd(ctx context.Context, dir string) (*embedded.Server, error) {
	cfgs, err := embedded.LocalCluster(dir, 1)
	if err != nil {
		return nil, fmt.Errorf("bench: embedded etcd: %w", err)
	}
	s, err := embedded.Start(ctx, cfgs[0])
	if err != nil {
		return nil, fmt.Errorf("bench: embedded etcd: %w", err)
	}
	return s, nil
}
