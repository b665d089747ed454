package partition_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// TestGroupStaleTokenStepsDownOnePartition: a resource that has seen a newer
// token rejects one partition's writes; that partition alone steps down
// (fenced) and runs again later with a new token, while the others keep
// their terms.
func TestGroupStaleTokenStepsDownOnePartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord := memory.New()
		defer coord.Close()
		shard := fence.NewRegister[string]()
		_ = shard.Write(1000, "written by a newer owner") // partition 2's tokens are stale

		var mu sync.Mutex
		var kinds []string
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, "a", "1"
		cfg.OnTransition = func(tr tenure.Transition) {
			mu.Lock()
			kinds = append(kinds, fmt.Sprintf("%s %s %d", tr.Kind, tr.Key, tr.Token))
			mu.Unlock()
		}
		g, err := partition.New(coord, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- g.Run(ctx, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
				if p.Index == 2 {
					return shard.Write(term.Token(), "stale write") // rejected: token < 1000
				}
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(5 * time.Second)
		snap := g.Snapshot()
		cancel()
		<-done

		mu.Lock()
		defer mu.Unlock()
		count := map[string]int{}
		for _, k := range kinds {
			var kind, key string
			var tok uint64
			fmt.Sscanf(k, "%s %s %d", &kind, &key, &tok)
			count[kind+" "+key]++
		}
		if count["fenced jobs/2"] < 2 {
			t.Errorf("partition 2 fenced %d times; want ≥ 2 (stepped down, claimed again with a new token, fenced again): %v", count["fenced jobs/2"], kinds)
		}
		for _, key := range []string{"jobs/0", "jobs/1", "jobs/3"} {
			if count["acquired "+key] != 1 || count["fenced "+key] != 0 {
				t.Errorf("%s: %d terms, %d fenced; want 1 term, never fenced (only partition 2 steps down)", key, count["acquired "+key], count["fenced "+key])
			}
		}
		if len(snap.Owned) < 3 {
			t.Errorf("Snapshot().Owned = %v; want partitions 0, 1 and 3 at least", snap.Owned)
		}
		if _, tok := shard.Read(); tok != 1000 {
			t.Errorf("shard token = %d; want 1000 (no stale write accepted)", tok)
		}
	})
}
