package tenure_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
)

// Run campaigns for a key, calls the function while this node leads, and
// releases the key when the function returns.
func ExampleElector_Run() {
	coord := memory.New() // or etcd.Dial, postgres.Dial
	defer coord.Close()

	cfg := tenure.DefaultConfig()
	cfg.Key = "scheduler"
	cfg.Holder = "node-a" // the display name
	cfg.Instance = "1"    // default: a random id per Elector, so two Electors named node-a are two contenders
	elector, err := tenure.NewElector(coord, cfg)
	if err != nil {
		panic(err)
	}

	resource := fence.NewRegister[string]() // rejects tokens older than the newest seen
	err = elector.Run(context.Background(), func(ctx context.Context, term *tenure.Term) error {
		fmt.Printf("%s leads %q with token %d\n", term.Grant().Holder, term.Grant().Key, term.Token())
		// Check right before acting, and present the token to the resource.
		if err := term.Check(); err != nil {
			return err
		}
		return resource.Write(term.Token(), "nightly report scheduled")
	})
	fmt.Println("run:", err)
	value, token := resource.Read()
	fmt.Printf("resource: %q (token %d)\n", value, token)
	_, held, _ := coord.Leader(context.Background(), "scheduler")
	fmt.Println("still held after Run:", held)
	// Output:
	// node-a#1 leads "scheduler" with token 1
	// run: <nil>
	// resource: "nightly report scheduled" (token 1)
	// still held after Run: false
}

// Validate reports every bad field at once, each naming the field and value.
func ExampleConfig_Validate() {
	cfg := tenure.DefaultConfig()
	cfg.Key = "/jobs"
	cfg.TTL = 2 * time.Second
	cfg.Margin = 3 * time.Second
	err := cfg.Validate()
	fmt.Println(errors.Is(err, tenure.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// tenure: invalid config: Config.Key: tenure: invalid key "/jobs": must not start with '/'
	// tenure: invalid config: Config.Margin (3s) must be less than Config.TTL (2s)
}

// A resource that has seen a newer token tells the old leader to stop; the
// elector then steps down at once ("fenced by resource").
func ExampleTerm_StepDown() {
	coord := memory.New()
	defer coord.Close()
	cfg := tenure.DefaultConfig()
	cfg.Key = "orders/17"
	cfg.Holder = "node-a"
	cfg.OnTransition = func(t tenure.Transition) { fmt.Println("transition:", t.Kind, "token", t.Token) }
	elector, _ := tenure.NewElector(coord, cfg)

	resource := fence.NewRegister[string]()
	_ = resource.Write(99, "written by a newer leader")

	ctx, cancel := context.WithCancel(context.Background())
	terms := 0
	_ = elector.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
		if terms++; terms == 2 {
			cancel() // stop the example after the second term begins
			<-ctx.Done()
			return nil
		}
		err := resource.Write(term.Token(), "stale write")
		fmt.Println("write:", err)
		if tenure.IsStale(err) {
			term.StepDown(err) // the elector steps down at once: "fenced"
		}
		<-ctx.Done() // the term's end cancels fn's context
		return nil
	})
	// Output:
	// transition: acquired token 1
	// write: fence: stale fencing token 1: 99 or newer required
	// transition: fenced token 1
	// transition: acquired token 2
	// transition: released token 2
}

// Logs, metrics and status pages name a transition in one vocabulary.
func ExampleTransitionKind_String() {
	for _, k := range []tenure.TransitionKind{tenure.Elected, tenure.Resigned, tenure.SteppedDown, tenure.Expired, tenure.Lost, tenure.Fenced} {
		fmt.Println(k)
	}
	// Output:
	// acquired
	// released
	// stepped-down
	// deadline
	// lost
	// fenced
}

// An Observer follows who leads a key without campaigning, as client-go's
// LeaderCallbacks.OnNewLeader does for its candidates: its callback gets
// every change of holder and token, and Leader returns the latest one
// without a round trip.
func ExampleObserver() {
	coord := memory.New()
	defer coord.Close()
	observer, err := tenure.NewObserver(coord, "scheduler")
	if err != nil {
		panic(err)
	}
	changes := make(chan tenure.LeaderEvent, 8)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- observer.Run(ctx, func(ev tenure.LeaderEvent) { changes <- ev }) // OnNewLeader
	}()
	show := func(ev tenure.LeaderEvent) {
		if !ev.Held {
			fmt.Println("nobody leads")
			return
		}
		fmt.Printf("%s leads with token %d\n", ev.Grant.Holder, ev.Grant.Token)
	}
	show(<-changes)
	g, _ := coord.Acquire(ctx, "scheduler", tenure.Identity("node-b", "1"), 10*time.Second)
	show(<-changes)
	if ev, ok := observer.Leader(); ok { // cached: no round trip
		show(ev)
	}
	_ = coord.Release(ctx, g)
	show(<-changes)
	stop()
	fmt.Println("run:", <-done)
	// Output:
	// nobody leads
	// node-b#1 leads with token 1
	// node-b#1 leads with token 1
	// nobody leads
	// run: context canceled
}

// A Lease keeps the local deadline of one grant: every term started on it
// ends there unless the lease is renewed (Keep). An Elector does all of
// this for one key; use a Lease directly to ride several terms on one
// grant.
func ExampleLease() {
	ctx := context.Background()
	c := memory.New()
	defer c.Close()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "jobs", "web-1"
	g, err := c.Acquire(ctx, cfg.Key, "web-1#1", cfg.TTL)
	if err != nil {
		panic(err)
	}
	lease, err := tenure.NewLease(cfg, g.TTL, g.Sent)
	if err != nil {
		panic(err)
	}
	defer lease.Stop()
	t := lease.Start(ctx, g)
	fmt.Println("acting:", t.Check() == nil)
	lease.End(t, tenure.ErrNotLeader)
	fmt.Println("after End:", t.Check() == nil)
	// Output:
	// acting: true
	// after End: false
}

// Renewed tells code that hands the deadline on (a watchdog, another
// process) when a renewal has moved it: read BootDeadline again then.
func ExampleTerm_Renewed() {
	coord := memory.New()
	defer coord.Close()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.Instance = "watchdog", "node-a", "1"
	cfg.TTL = 3 * time.Second // renewed about every second
	elector, err := tenure.NewElector(coord, cfg)
	if err != nil {
		panic(err)
	}
	err = elector.Run(context.Background(), func(ctx context.Context, term *tenure.Term) error {
		renewed := term.Renewed() // before reading the deadline, so no renewal falls between
		before := term.BootDeadline()
		select {
		case <-renewed:
			fmt.Println("deadline moved later:", term.BootDeadline() > before)
		case <-time.After(10 * time.Second):
			fmt.Println("no renewal within 10s")
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	fmt.Println("run:", err)
	// Output:
	// deadline moved later: true
	// run: <nil>
}
