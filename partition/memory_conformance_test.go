package partition_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestConformanceMemory runs the group suite in real time on one memory
// coordinator shared by every member, as processes share a server.
func TestConformanceMemory(t *testing.T) {
	shared := memory.New()
	t.Cleanup(func() { shared.Close() })
	var none []partitiontest.Option
	for _, check := range []string{"FreedByHand", "MovedMembership", "OtherGroupsOwner", "IgnoredEdit"} {
		none = append(none, partitiontest.WithoutByHand(check, "the memory coordinator's records are in its process's memory, which only its methods change"))
	}
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator { return &handle{Coordinator: shared} }, none...)
}

// handle is one member's connection to the shared coordinator: closing it
// cuts that member off (its group calls fail with tenure.ErrClosed) and
// leaves the server running.
type handle struct {
	*memory.Coordinator
	closed atomic.Bool
}

func (h *handle) Close() error { h.closed.Store(true); return nil }

func (h *handle) check() error {
	if h.closed.Load() {
		return fmt.Errorf("member's handle: %w", tenure.ErrClosed)
	}
	return nil
}

func (h *handle) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	if err := h.check(); err != nil {
		return partition.Member{}, err
	}
	return h.Coordinator.JoinGroup(ctx, group, id, ttl, partitions)
}

func (h *handle) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	if err := h.check(); err != nil {
		return partition.Member{}, err
	}
	return h.Coordinator.RenewMember(ctx, m)
}

func (h *handle) LeaveGroup(ctx context.Context, m partition.Member) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.Coordinator.LeaveGroup(ctx, m)
}

func (h *handle) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.Coordinator.ClaimPartitions(ctx, m, names)
}

func (h *handle) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.Coordinator.ReleasePartitions(ctx, m, gs)
}

func (h *handle) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.Coordinator.CheckPartitions(ctx, m, gs)
}
