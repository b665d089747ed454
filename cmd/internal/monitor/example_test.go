package monitor_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/prom"
)

// An Elector reports through a Monitor, whose Handler serves the status
// page, /status, /health, /leader and /metrics (run it with
// http.ListenAndServe, and mon.Run in a goroutine to follow other holders).
func Example() {
	c := memory.New()
	defer c.Close()
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.Instance = "jobs", "node-1", "a1"
	mon, err := monitor.New(monitor.Config{Coordinator: c, Keys: []string{cfg.Key}, Identity: tenure.Identity(cfg.Holder, cfg.Instance), Metrics: m, Gatherer: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Metrics = mon
	el, err := tenure.NewElector(c, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	errDone := errors.New("done")
	_ = el.Run(context.Background(), func(ctx context.Context, t *tenure.Term) error {
		k := mon.Status().Keys[0]
		fmt.Println("leading:", mon.Leading(), "holder:", k.Holder, "token:", k.Token, "mine:", k.Mine)
		return errDone
	})
	for _, e := range mon.Status().Transitions {
		fmt.Println(e.Reason, e.Holder, e.Token, e.Source)
	}
	// Output:
	// leading: true holder: node-1 token: 1 mine: true
	// released node-1 1 self
	// acquired node-1 1 self
}
