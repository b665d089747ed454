package cli

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// groupPoll is how often tenure run --partitions --http reads its group's
// table for the page and /status.
const groupPoll = time.Second

// serveGroupMonitor serves the monitoring endpoints of tenure run
// --partitions --http on addr: the page and /status show the group's
// partition table, /leader answers 200 while this member owns at least one
// partition (grp, once set), and /metrics has the partition metrics and
// the coordinator's failed calls. It sets pc.Metrics, adds the member's
// own transitions to the page's timeline through pc.OnTransition, and
// replaces *coord with one whose failed calls are counted. Call it before
// creating the group; stop ends the serving and waits for it.
func serveGroupMonitor(web webFlags, pc *partition.Config, coord *partition.Coordinator, grp *atomic.Pointer[partition.Group], log *slog.Logger) (stop func(), err error) {
	reg, m, err := runMetrics()
	if err != nil {
		return nil, err
	}
	if pc.Metrics, err = prom.NewPartition(reg); err != nil {
		return nil, err
	}
	c := m.InstrumentGroup(*coord)
	*coord = c
	names := pc.PartitionNames()
	mon, err := monitor.New(monitor.Config{
		Coordinator: c, PartitionsOnly: true, Identity: tenure.Identity(pc.Holder, pc.Instance), Metrics: m, Gatherer: reg,
		Poll: groupPoll, // each poll reads the whole table: P keys
		Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
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
	return listenMonitor(web, mon, log)
}
