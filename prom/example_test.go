package prom_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
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
	m, err := prom.New(reg, prom.WithConstLabels(prometheus.Labels{"zone": "eu-1"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	// An Elector calls these; set m as tenure.Config.Metrics.
	m.SetLeader("scheduler", true)
	m.SetToken("scheduler", 42)
	printMetric(reg, "tenure_is_leader")
	// Output:
	// # HELP tenure_is_leader 1 while this instance leads the key (holds a live term whose local deadline has not passed), 0 otherwise.
	// # TYPE tenure_is_leader gauge
	// tenure_is_leader{key="scheduler",zone="eu-1"} 1
}

// An Elector reporting to Prometheus, through a coordinator whose failed
// calls are counted: it is elected, runs its function and resigns when the
// function returns.
func Example_elector() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := m.Instrument(memory.New())
	defer c.Close()
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
	// # HELP tenure_transitions_total Leadership transitions of this instance on the key, by reason: acquired, released (given up on purpose), deadline (the local deadline passed before a renewal succeeded), lost (the coordinator expired or superseded the grant), fenced (a resource rejected the token).
	// # TYPE tenure_transitions_total counter
	// tenure_transitions_total{key="scheduler",reason="acquired"} 1
	// tenure_transitions_total{key="scheduler",reason="released"} 1
}

// A fenced register counts the stale writes it rejects.
func ExampleMetrics_FenceObserver() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := fence.NewRegister[string](fence.WithObserver(m.FenceObserver("orders")))
	_ = r.Write(7, "from term 7")
	fmt.Println(r.Write(6, "from a stale leader"))
	printMetric(reg, "tenure_stale_rejections_total")
	// Output:
	// fence: stale fencing token 6: 7 or newer required
	// # HELP tenure_stale_rejections_total Writes a fence guard rejected because their fencing token was older than one it had accepted, by resource.
	// # TYPE tenure_stale_rejections_total counter
	// tenure_stale_rejections_total{resource="orders"} 1
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

// A status poller or a watch tells Metrics who holds a key; the time the
// key spent without a holder goes to tenure_leaderless_seconds.
func ExampleMetrics_ObserveLeader() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	m.ObserveLeader("scheduler", tenure.Grant{Key: "scheduler", Holder: tenure.Identity("node-2", "4f1c"), Token: 7}, true)
	printMetric(reg, "tenure_leader_info")
	// Output:
	// # HELP tenure_leader_info 1 for the key's current holder (display name) as this instance last saw it; no series while the key is free.
	// # TYPE tenure_leader_info gauge
	// tenure_leader_info{holder="node-2",key="scheduler"} 1
}

// A partition group on an instrumented coordinator: the group's failed
// calls are counted with the rest, and PartitionMetrics reports what the
// member owns.
func ExampleMetrics_InstrumentGroup() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	pm, err := prom.NewPartition(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := m.InstrumentGroup(memory.New())
	defer c.Close()
	cfg := partition.DefaultConfig()
	cfg.Key, cfg.Partitions, cfg.Metrics = "jobs", 2, pm
	g, err := partition.New(c, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int, 2)
	go func() {
		<-started
		<-started
		cancel() // both partitions run: leave the group
	}()
	err = g.Run(ctx, func(ctx context.Context, p partition.Partition, t *tenure.Term) error {
		started <- p.Index
		<-ctx.Done()
		return nil
	})
	fmt.Println("Run:", err)
	printMetric(reg, "tenure_partition_moves_total")
	// Output:
	// Run: context canceled
	// # HELP tenure_partition_moves_total Partitions of the group this member took or gave up, by reason: claimed, rebalanced, left, lost, fenced, returned.
	// # TYPE tenure_partition_moves_total counter
	// tenure_partition_moves_total{group="jobs",reason="claimed"} 2
	// tenure_partition_moves_total{group="jobs",reason="left"} 2
}
