package embedded_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tenure-dev/tenure/etcd"
)

// A partition group's members learn at once that another member joined or
// left: partition.Group uses this to hand partitions over without polling.
func Example_etcdWatchMembers() {
	endpoints, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord, err := etcd.Dial(ctx, etcd.Config{Endpoints: endpoints})
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()

	changes, err := coord.WatchMembers(ctx, "jobs")
	if err != nil {
		log.Fatal(err)
	}
	<-changes // the first value: read the membership now
	m, err := coord.JoinGroup(ctx, "jobs", "node-b#1", 10*time.Second, 4)
	if err != nil {
		log.Fatal(err)
	}
	<-changes
	ms, _ := coord.GroupMembers(ctx, "jobs")
	fmt.Println("after the join:", len(ms), "member")
	if err := coord.LeaveGroup(ctx, m); err != nil {
		log.Fatal(err)
	}
	<-changes
	ms, _ = coord.GroupMembers(ctx, "jobs")
	fmt.Println("after the leave:", len(ms), "members")
	// Output:
	// after the join: 1 member
	// after the leave: 0 members
}
