package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// Passwords never appear in messages about a DSN.
func ExampleRedactDSN() {
	fmt.Println(postgres.RedactDSN("postgres://app:hunter2@db.internal:5432/app"))
	fmt.Println(postgres.RedactDSN("host=db.internal user=app password='hunter 2' dbname=app"))
	// Output:
	// postgres://app:xxxxx@db.internal:5432/app
	// host=db.internal user=app password=xxxxx dbname=app
}

// Leading a key on PostgreSQL: acquire, act with the token, release.
func ExampleOpen() {
	ctx := context.Background()
	c, err := postgres.Dial(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	g, err := c.Acquire(ctx, "scheduler", tenure.DefaultConfig().Holder, 10*time.Second)
	var held *tenure.HeldError
	if errors.As(err, &held) {
		fmt.Printf("%s leads with token %d\n", held.Holder, held.Token)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Release(ctx, g)
	fmt.Println("leading with token", g.Token)
}

// The seed's resource-side fencing, inside the caller's transaction: a
// deposed leader's write is rejected as stale and rolled back.
func ExampleFenceGuard() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := postgres.AddFencingColumn(ctx, conn, "shard_assignment"); err != nil {
		log.Fatal(err)
	}
	guard := postgres.FenceGuard{
		Table:           pgx.Identifier{"shard_assignment"},
		IDColumn:        "shard_id",
		UpdatedAtColumn: "updated_at",
	}
	var token uint64 = 42 // from the Term or Grant
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return guard.Update(ctx, tx, 17, token, map[string]any{"assignment": "node-b"})
	})
	if tenure.IsStale(err) {
		fmt.Println("deposed; stepping down:", err)
	}
}

// Every acquisition and release announced to watchers, watched or not, as
// tenure did before NotifyWatched became the default: watchers elsewhere
// (other tools LISTENing on the channel) hear of every change, at the cost
// of serializing those commits on PostgreSQL's notification lock.
func ExampleWithNotify() {
	c, err := postgres.Dial(context.Background(), os.Getenv("DATABASE_URL"),
		postgres.WithNotify(postgres.NotifyAll))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

func ExampleNotify_String() {
	fmt.Println(postgres.NotifyWatched, postgres.NotifyAll)
	// Output: watched all
}
