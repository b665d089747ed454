package prom_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/prom"
)

// printMetric writes the metric family called name from reg in the text
// exposition format, as a scrape would show it.
func printMetric(reg prometheus.Gatherer, name string) {
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println("gather:", err)
		return
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			_, _ = expfmt.MetricFamilyToText(os.Stdout, mf)
		}
	}
}

func Example() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg, prom.WithConstLabels(prometheus.Labels{"holder": "node-1"}))
	if err != nil {
		fmt.Println(err)
		return
	}

	// An Elector calls these; set m as tenure.Config.Metrics.
	m.SetLeader("scheduler", true)
	m.SetToken("scheduler", 42)

	printMetric(reg, "tenure_leader")
	// Output:
	// # HELP tenure_leader Whether this node leads the key: 1 while it holds a live term, 0 otherwise.
	// # TYPE tenure_leader gauge
	// tenure_leader{holder="node-1",key="scheduler"} 1
}

// An Elector reporting to Prometheus: it is elected, runs its function and
// resigns when the function returns.
func Example_elector() {
	c := memory.New()
	defer c.Close()

	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}

	cfg := tenure.DefaultConfig()
	cfg.Key = "scheduler"
	cfg.Metrics = m
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	errDone := errors.New("done")
	err = e.Run(context.Background(), func(ctx context.Context, t *tenure.Term) error {
		return errDone // work done: resign
	})
	fmt.Println("Run:", err)

	printMetric(reg, "tenure_transitions_total")
	// Output:
	// Run: done
	// # HELP tenure_transitions_total Leadership transitions of this node on the key, by kind: elected, resigned (released on purpose), lost (the coordinator expired or superseded the grant), expired (the local deadline passed before a renewal succeeded), fenced (a resource rejected the token), stepped-down (user code ended the term).
	// # TYPE tenure_transitions_total counter
	// tenure_transitions_total{key="scheduler",kind="elected"} 1
	// tenure_transitions_total{key="scheduler",kind="resigned"} 1
}

// Keys this node will not lead again can be forgotten, so that their series
// do not linger.
func ExampleMetrics_Forget() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	m.SetLeader("orders/17", false)
	m.SetToken("orders/17", 9)
	fmt.Println("series deleted:", m.Forget("orders/17"))
	// Output:
	// series deleted: 2
}
