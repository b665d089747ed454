package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/monitor"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// serveGroupMonitor serves the monitoring endpoints of tenure run
// --partitions --http on addr: the page and /status show the group's
// partition table, /leader answers 200 while this member owns at least one
// partition (grp, once set), and /metrics has the partition metrics and
// the coordinator's failed calls. It sets pc.Metrics, adds the member's
// own transitions to the page's timeline through pc.OnTransition, and
// replaces *coord with one whose failed calls are counted. Call it before
// creating the group; stop ends the serving and waits for it.
func serveGroupMonitor(addr string, pc *partition.Config, coord *tenure.Coordinator, grp *atomic.Pointer[partition.Group], log *slog.Logger) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prom.New(reg)
	if err != nil {
		return nil, err
	}
	if pc.Metrics, err = prom.NewPartition(reg); err != nil {
		return nil, err
	}
	c := m.Instrument(*coord)
	*coord = c
	names := pc.PartitionNames()
	mon, err := monitor.New(monitor.Config{
		Coordinator: c, PartitionsOnly: true, Identity: pc.Identity(), Metrics: m, Gatherer: reg,
		Partitions: func(ctx context.Context) ([]partition.Table, error) {
			t, err := partition.ReadTable(ctx, c, pc.Key, names)
			return []partition.Table{t}, err
		},
		Leading: func() bool {
			g := grp.Load()
			return g != nil && len(g.Snapshot().Owned) > 0
		},
	})
	if err != nil {
		return nil, err
	}
	onTransition := pc.OnTransition
	pc.OnTransition = func(t tenure.Transition) {
		if onTransition != nil {
			onTransition(t)
		}
		mon.Record(t)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	log.Info("serving status and metrics", "http", ln.Addr().String())
	stop, _ = serveMonitor(ln, mon, mon.Handler())
	return stop, nil
}
