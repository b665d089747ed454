package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

func Example() {
	ctx := context.Background()
	c := memory.New()
	defer c.Close()

	a, _ := c.Acquire(ctx, "scheduler", "node-a", 10*time.Second)
	fmt.Println("node-a leads with token", a.Token)

	_, err := c.Acquire(ctx, "scheduler", "node-b", 10*time.Second)
	var held *tenure.HeldError
	if errors.As(err, &held) {
		fmt.Printf("node-b refused: held by %s (token %d)\n", held.Holder, held.Token)
	}

	_ = c.Release(ctx, a)
	b, _ := c.Acquire(ctx, "scheduler", "node-b", 10*time.Second)
	fmt.Println("node-b leads with token", b.Token)
	// Output:
	// node-a leads with token 1
	// node-b refused: held by node-a (token 1)
	// node-b leads with token 2
}

func ExampleCoordinator_Partition() {
	ctx := context.Background()
	c := memory.New()
	defer c.Close()

	g, _ := c.Acquire(ctx, "scheduler", "node-a", 10*time.Second)
	c.Partition("node-a")
	_, err := c.Renew(ctx, g)
	fmt.Println(errors.Is(err, memory.ErrPartitioned))
	fmt.Println(err)

	c.Heal("node-a")
	_, err = c.Renew(ctx, g)
	fmt.Println("after heal:", err)
	// Output:
	// true
	// memory: renew scheduler@1 by "node-a" (ttl 10s): holder "node-a": memory: partitioned from the coordinator
	// after heal: <nil>
}

func ExampleCoordinator_DropReplies() {
	c := memory.New()
	defer c.Close()

	c.DropReplies("node-a", true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := c.Acquire(ctx, "scheduler", "node-a", 10*time.Second)
	fmt.Println("acquire:", errors.Is(err, context.DeadlineExceeded))

	// The request was applied all the same: node-a leads without knowing it.
	g, ok, _ := c.Leader(context.Background(), "scheduler")
	fmt.Println("leader:", ok, g.Holder, g.Token)
	// Output:
	// acquire: true
	// leader: true node-a 1
}

func ExampleCoordinator_JumpClock() {
	ctx := context.Background()
	c := memory.New()
	defer c.Close()

	g, _ := c.Acquire(ctx, "scheduler", "node-a", 10*time.Second)
	c.JumpClock(10 * time.Second) // the coordinator's clock leaps past the lease

	_, ok, _ := c.Leader(ctx, "scheduler")
	fmt.Println("held:", ok)
	_, err := c.Renew(ctx, g)
	fmt.Println("renew lost:", errors.Is(err, tenure.ErrLost))
	// Output:
	// held: false
	// renew lost: true
}

func ExampleCoordinator_Watch() {
	c := memory.New()
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())

	events, _ := c.Watch(ctx, "scheduler")
	show := func() {
		ev := <-events
		if ev.Held {
			fmt.Printf("%s: held by %s (token %d)\n", ev.Key, ev.Grant.Holder, ev.Grant.Token)
		} else {
			fmt.Printf("%s: free\n", ev.Key)
		}
	}
	show() // the current state comes first

	g, _ := c.Acquire(ctx, "scheduler", "node-a", 10*time.Second)
	show()
	_ = c.Release(ctx, g)
	show()

	cancel()
	for range events {
	}
	fmt.Println("closed")
	// Output:
	// scheduler: free
	// scheduler: held by node-a (token 1)
	// scheduler: free
	// closed
}

func ExampleWithMinTTL() {
	c := memory.New(memory.WithMinTTL(2 * time.Second))
	defer c.Close()

	g, _ := c.Acquire(context.Background(), "scheduler", "node-a", 500*time.Millisecond)
	fmt.Println("granted", g.TTL)
	// Output:
	// granted 2s
}
