package partitiontest

import (
	"context"
	"sync"
	"testing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// RunMember runs a member of the group cfg configures on c, each of whose
// partitions runs until its term ends, until stop is called or the test
// ends. It fails the test when partition.New refuses cfg.
func RunMember(t testing.TB, c partition.Coordinator, cfg partition.Config) (g *partition.Group, stop func()) {
	t.Helper()
	g, err := partition.New(c, cfg)
	if err != nil {
		t.Fatalf("partition.New() error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- g.Run(ctx, func(ctx context.Context, _ partition.Partition, _ *tenure.Term) error {
			<-ctx.Done()
			return nil
		})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return g, stop
}
