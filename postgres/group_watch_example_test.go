package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tenure-dev/tenure/postgres"
)

// A partition group's members learn at once that a member joined or left
// (JoinGroup and LeaveGroup notify on the coordinator's channel), so that
// partition.Group hands partitions over without polling.
func ExampleCoordinator_WatchMembers() {
	ctx := context.Background()
	c, err := postgres.Dial(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	changes, err := c.WatchMembers(ctx, "jobs")
	if err != nil {
		log.Fatal(err)
	}
	for range changes {
		ms, err := c.GroupMembers(ctx, "jobs")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(ms), "members")
	}
}
