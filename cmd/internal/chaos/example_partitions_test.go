package chaos

import (
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// A partitioned run's history is judged partition by partition: Analyze
// splits it with partitionHistory, where each term's lease is its owner's
// membership (the join and renewals of the epoch it was claimed under).
func Example_partitions() {
	s := func(ms int64) int64 { return ms * int64(time.Millisecond) }
	h := &History{
		Options: Options{Partitions: 2, TTL: 2 * time.Second, MaxDrift: 0.01},
		History: history.History{Finish: s(3000), Events: []history.Event{
			{Holder: "n0.1", Kind: history.KindJoin, Sent: s(0), At: s(10), OK: true, Epoch: 7, TTL: 2 * time.Second},
			{Holder: "n0.1", Kind: history.KindClaim, Sent: s(20), At: s(25), OK: true, Epoch: 7, Partition: "1", Token: 4},
			{Holder: "n0.1", Kind: history.KindElected, At: s(30), Partition: "1", Token: 4},
			{Holder: "n0.1", Kind: history.KindEnd, At: s(1500), Partition: "1", Token: 4},
			// A second owner of partition 1 while n0.1's term is live.
			{Holder: "n1.1", Kind: history.KindElected, At: s(1000), Partition: "1", Token: 5},
			{Holder: "n1.1", Kind: history.KindEnd, At: s(2000), Partition: "1", Token: 5},
		}},
	}
	ph := partitionHistory(h, "1")
	for _, ev := range ph.Events {
		if ev.Kind == history.KindRenew {
			fmt.Printf("term %d of %s leased from %dms\n", ev.Token, ev.Holder, ev.Sent/1e6)
		}
	}
	rep := Analyze(h)
	fmt.Println(rep.Overlap.Count, "overlap:", rep.Overlap.Details[0])
	// Output:
	// term 4 of n0.1 leased from 0ms
	// 1 overlap: partition 1: n0.1 (token 4) led 0.030s–1.500s and n1.1 (token 5) led 1.000s–2.000s: 500ms overlap
}
