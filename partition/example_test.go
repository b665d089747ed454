package partition_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// Run claims this member's share of the group's partitions and runs the
// function once per owned partition, each with its own term and token.
// Here one member owns all four; with N members each owns at most ⌈4/N⌉.
func ExampleGroup_Run() {
	coord := memory.New() // or etcd.Dial, postgres.Dial
	defer coord.Close()

	cfg := partition.DefaultConfig()
	cfg.Key = "jobs" // partition keys are jobs/0 … jobs/3
	cfg.Partitions = 4
	cfg.Holder, cfg.Instance = "node-a", "1"
	g, err := partition.New(coord, cfg)
	if err != nil {
		panic(err)
	}

	// One fenced resource per partition: each rejects tokens older than the
	// newest it has seen, so a stale owner's write is refused.
	shards := make([]*fence.Register[string], cfg.Partitions)
	for i := range shards {
		shards[i] = fence.NewRegister[string]()
	}
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	var lines []string
	err = g.Run(ctx, func(ctx context.Context, p partition.Partition, t *tenure.Term) error {
		if err := t.Check(); err != nil {
			return err
		}
		if err := shards[p.Index].Write(t.Token(), "processed by "+t.Grant().Holder); err != nil {
			return err // a stale token (tenure.IsStale) steps this partition down
		}
		mu.Lock()
		lines = append(lines, fmt.Sprintf("%s (partition %d) led by %s with token %d", p.Key, p.Index, t.Grant().Holder, t.Token()))
		if len(lines) == cfg.Partitions {
			stop() // leave the group: every partition is released at once
		}
		mu.Unlock()
		<-ctx.Done()
		return nil
	})
	fmt.Println("run:", err)
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// run: context canceled
	// jobs/0 (partition 0) led by node-a#1 with token 1
	// jobs/1 (partition 1) led by node-a#1 with token 1
	// jobs/2 (partition 2) led by node-a#1 with token 1
	// jobs/3 (partition 3) led by node-a#1 with token 1
}

// Rebalance with no owners is the rendezvous assignment every member
// computes from the same membership: no member gets more than ⌈P/N⌉
// partitions.
func ExampleRebalance_nobodyOwns() {
	a := partition.Rebalance(partition.Names(7), []string{"node-a#1", "node-b#1", "node-c#1"}, nil)
	load := map[string]int{}
	for _, m := range a {
		load[m]++
	}
	fmt.Println(len(a), "partitions; node-a", load["node-a#1"], "node-b", load["node-b#1"], "node-c", load["node-c#1"])
	// Output:
	// 7 partitions; node-a 3 node-b 2 node-c 2
}

// Rebalance keeps what members own within their quota, so a join moves
// only the newcomer's share and a leave only the leaver's partitions.
func ExampleRebalance() {
	names := partition.Names(100)
	three := []string{"node-a#1", "node-b#1", "node-c#1"}
	before := partition.Rebalance(names, three, nil)
	joined := partition.Rebalance(names, append(three, "node-d#1"), before)
	left := partition.Rebalance(names, []string{"node-b#1", "node-c#1", "node-d#1"}, joined)
	count := func(a, b map[string]string) (n int) {
		for k := range a {
			if a[k] != b[k] {
				n++
			}
		}
		return n
	}
	load := map[string]int{}
	for _, m := range joined {
		load[m]++
	}
	fmt.Println("join moved", count(before, joined), "to node-d, which owns", load["node-d#1"])
	fmt.Println("node-a owned", load["node-a#1"], "and its leave moved", count(joined, left))
	// Output:
	// join moved 25 to node-d, which owns 25
	// node-a owned 25 and its leave moved 25
}

// ReadTable is what `tenure status` shows for a group: each partition's
// owner, token and lease left, the members and the balance.
func ExampleReadTable() {
	coord := memory.New()
	defer coord.Close()
	ctx := context.Background()
	m, _ := coord.JoinGroup(ctx, "jobs", "node-a#1", 10*time.Second, 3)
	_, _ = coord.ClaimPartitions(ctx, m, []string{"0", "1"})

	t, err := partition.ReadTable(ctx, coord, "jobs", partition.Names(3))
	if err != nil {
		panic(err)
	}
	for _, r := range t.Partitions {
		fmt.Printf("%s owner=%q token=%d\n", r.Partition.Key, r.Owner, r.Token)
	}
	fmt.Printf("members=%d cap=%d unowned=%d\n", len(t.Members), t.Cap, t.Stats.Unowned)
	// Output:
	// jobs/0 owner="node-a#1" token=1
	// jobs/1 owner="node-a#1" token=1
	// jobs/2 owner="" token=0
	// members=1 cap=3 unowned=1
}
