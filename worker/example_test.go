package worker_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/worker"
)

func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	coord := memory.New()
	defer coord.Close()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "invoices", "node-a"
	elector, err := tenure.NewElector(coord, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The pending work, and a fenced resource the work writes to.
	var mu sync.Mutex
	pending := []string{"invoice-1", "invoice-2", "invoice-3"}
	ledger := fence.NewRegister[string]()

	source := worker.SourceFunc[string](func(ctx context.Context, max int) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(pending) == 0 {
			cancel() // all done: shut the example down
		}
		return pending[:min(max, len(pending))], nil
	})
	process := func(ctx context.Context, token uint64, item string) error {
		if err := ledger.Write(token, item); err != nil {
			return err // a stale token makes the worker step down
		}
		fmt.Printf("%s done with token %d\n", item, token)
		mu.Lock()
		defer mu.Unlock()
		pending = pending[1:]
		return nil
	}
	w, err := worker.New(source, process, worker.WithBatchSize(2))
	if err != nil {
		fmt.Println(err)
		return
	}

	err = elector.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
		return w.Run(ctx, term)
	})
	fmt.Println("elector:", err)
	fmt.Printf("worker: %+v\n", w.Stats())
	// Output:
	// invoice-1 done with token 1
	// invoice-2 done with token 1
	// invoice-3 done with token 1
	// elector: context canceled
	// worker: {Fetches:3 Processed:3 Failed:0}
}
