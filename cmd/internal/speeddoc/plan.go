package main

import (
	"fmt"
	"slices"
)

// A spec is one benchmark of the plan: tenure bench Args, on Backend.
type spec struct {
	// Name identifies the run in docs/speed.json.
	Name string
	// Backend is etcd (an etcd member each benchmark starts itself) or
	// postgres (a database of its own on the server measure starts).
	Backend string
	// Args follow "tenure bench"; --json and, on PostgreSQL, --postgres
	// are added.
	Args []string
}

// Partition groups are measured at P = 100,000 over N = 20 members, TTL
// 10 s: the size their targets are set for.
const (
	groupPartitions = 100000
	groupMembers    = 20
	groupTTLSeconds = 10
)

var partitionArgs = []string{"partitions", "--partitions", fmt.Sprint(groupPartitions),
	"--members", fmt.Sprint(groupMembers), "--ttl", fmt.Sprintf("%ds", groupTTLSeconds)}

// plan is every benchmark docs/speed.md cites, in the order measure runs
// them. PostgreSQL's throughput runs before its partition groups: group
// tables change what an acquisition checks.
var plan = []spec{
	{Name: "etcd-handover", Backend: "etcd", Args: []string{"handover", "--trials", "100"}},
	{Name: "etcd-failover", Backend: "etcd", Args: []string{"failover", "--trials", "30"}},
	{Name: "etcd-throughput", Backend: "etcd", Args: []string{"throughput", "--clients", "1,10,50"}},
	{Name: "postgres-handover", Backend: "postgres", Args: []string{"handover", "--trials", "100"}},
	{Name: "postgres-failover", Backend: "postgres", Args: []string{"failover", "--trials", "30"}},
	{Name: "postgres-throughput", Backend: "postgres", Args: []string{"throughput", "--clients", "1,10,50"}},
	{Name: "etcd-partitions", Backend: "etcd", Args: partitionArgs},
	{Name: "postgres-partitions", Backend: "postgres", Args: partitionArgs},
}

// command is the command line of s as a reader runs it.
func (s spec) command() string {
	line := "tenure bench"
	for _, a := range s.Args {
		line += " " + a
	}
	if s.Backend == "postgres" {
		line += ` --postgres "$DSN"`
	}
	return line
}

// sameSpec reports whether a run recorded under s's name ran s.
func sameSpec(r run, s spec) bool {
	return r.Name == s.Name && r.Backend == s.Backend && slices.Equal(r.Args, s.Args)
}
