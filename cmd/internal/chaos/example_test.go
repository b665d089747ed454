package chaos_test

import (
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/chaos"
	"github.com/tenure-dev/tenure/internal/history"
)

// With one etcd member, the member family cannot strike, nor the
// apiserver family on an API server the run did not start: a run leaves
// them out, and so does its header.
func ExampleStrikingFamilies() {
	fmt.Println(chaos.StrikingFamilies(chaos.Families(), 1, false))
	fmt.Println(chaos.StrikingFamilies([]string{chaos.FamilyMember, chaos.FamilyPause}, 3, false))
	fmt.Println(chaos.StrikingFamilies([]string{chaos.FamilyMember, chaos.FamilyAPIServer}, 1, true))
	// Output:
	// [partition blackhole latency reset pause crash degrade clock]
	// [member pause]
	// [apiserver]
}

// A run in which no node was ever elected proved nothing: no violation,
// and no pass either.
func ExampleReport_Verdict() {
	h := &chaos.History{Options: chaos.Options{Nodes: 3, TTL: 2 * time.Second}, History: history.History{Finish: int64(10 * time.Second)}}
	rep := chaos.Analyze(h)
	fmt.Println(rep.OK(), rep.Conclusive())
	fmt.Println(rep.Verdict())
	// Output:
	// true false
	// inconclusive: no node was ever elected leader, so nothing was tested (could the nodes reach the coordinator?)
}
