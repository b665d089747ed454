package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/internal/pgtest"
)

// Floors of the speed guard: far below the goals (docs/speed.md), so that
// only a gross regression, not a loaded machine, crosses one.
const (
	// handoverFloor: tenure's handover p50 at most this times
	// concurrency.Election's (goal 1.5×).
	handoverFloor = 2.0
	// postgresOpsFloor: tenure's acquire/renew/release cycles per second at
	// least this times the seed SQL's, at 1 and at 10 clients (goal 0.8×).
	postgresOpsFloor = 0.3
	// coldStartFloor: a group of guardPartitions partitions over
	// guardMembers members fully owned within this long (the goal,
	// 100,000 partitions within 20 s, is 0.4 s at this size). The whole
	// bench runs, the join, leave and crash included: TTL 5 s lets it
	// finish on a loaded machine.
	coldStartFloor  = 10 * time.Second
	guardPartitions = 2000
	guardMembers    = 4
)

// A guardCheck is one short side-by-side run and its floor: eval returns
// the figure in words and whether it is on the right side of the floor.
type guardCheck struct {
	name    string
	backend string
	args    []string
	eval    func(r run) (figures []string, ok bool)
}

var guardChecks = []guardCheck{
	{
		name: "etcd handover p50, tenure over concurrency.Election", backend: "etcd",
		args: []string{"handover", "--trials", "30"},
		eval: func(r run) ([]string, bool) {
			row, ok := tenureRow(r.Report, "")
			if !ok || row.Latency == nil {
				return []string{"no tenure row"}, false
			}
			peer := peerRow(r, "")
			return []string{fmt.Sprintf("%.2f× (tenure %s ms, %s %s ms; floor: at most %.1f×)",
				row.VsPeer, ms(row.Latency.P50), peer.Impl, ms(peer.Latency.P50), handoverFloor)}, row.VsPeer <= handoverFloor
		},
	},
	{
		name: "PostgreSQL acquire/renew/release per second, tenure over the seed SQL", backend: "postgres",
		args: []string{"throughput", "--clients", "1,10", "--duration", "2s", "--rounds", "4"},
		eval: func(r run) ([]string, bool) {
			var out []string
			all := true
			for _, c := range []string{"clients=1", "clients=10"} {
				row, ok := tenureRow(r.Report, c)
				if !ok {
					return []string{"no tenure row at " + c}, false
				}
				peer := peerRow(r, c)
				out = append(out, fmt.Sprintf("%s: %.2f× (tenure %s/s, %s %s/s; floor: at least %.1f×)",
					c, row.VsPeer, thousands(row.OpsPerSec), peer.Impl, thousands(peer.OpsPerSec), postgresOpsFloor))
				all = all && row.VsPeer >= postgresOpsFloor
			}
			return out, all
		},
	},
	{
		name: fmt.Sprintf("etcd partition group cold start, P = %d, N = %d", guardPartitions, guardMembers), backend: "etcd",
		args: []string{"partitions", "--partitions", fmt.Sprint(guardPartitions), "--members", fmt.Sprint(guardMembers),
			"--ttl", "5s", "--reference", "0", "--steady", "1s"},
		eval: func(r run) ([]string, bool) {
			d := time.Duration(r.Partitions.ColdStartMS) * time.Millisecond
			return []string{fmt.Sprintf("%s (%s claims/s; floor: at most %s)", d, thousands(r.Partitions.ClaimsPerSecond), coldStartFloor)},
				r.Partitions.ColdStartMS > 0 && d <= coldStartFloor
		},
	},
}

// peerRow is the row tenure's row in case c compares with.
func peerRow(r run, c string) (peer bench.Row) {
	row, _ := tenureRow(r.Report, c)
	for _, p := range r.Report.Rows {
		if p.Impl == row.Peer && p.Case == c {
			return p
		}
	}
	return bench.Row{Impl: row.Peer, Latency: &bench.Summary{}}
}

// guard runs every guard check, printing its figures to out; a check
// under its floor runs once more, and fails the guard if it is under its
// floor again.
func guard(ctx context.Context, tenureBin string, out, progress io.Writer) error {
	began := time.Now()
	fmt.Fprintf(out, "speed guard (load average %.2f): floors far below the goals; a figure past one is a gross regression\n", load1())
	srv, err := pgtest.Start(ctx)
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	defer srv.Stop()
	var failed []error
	for i, c := range guardChecks {
		s := spec{Name: fmt.Sprintf("guard-%d", i), Backend: c.backend, Args: c.args}
		for attempt := 1; attempt <= 2; attempt++ {
			r, err := runSpec(ctx, tenureBin, s, srv, progress)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			figures, ok := []string{fmt.Sprintf("%s failed: %v", s.command(), err)}, false
			if err == nil {
				figures, ok = c.eval(r)
			}
			verdict := "ok"
			if !ok {
				verdict = "UNDER THE FLOOR"
			}
			fmt.Fprintf(out, "  %s (%s, run %d): %s\n", c.name, duration(r.ElapsedS), attempt, verdict)
			for _, f := range figures {
				fmt.Fprintf(out, "    %s\n", f)
			}
			if ok {
				break
			}
			if attempt == 2 {
				failed = append(failed, fmt.Errorf("%s: under its floor in two runs of %s", c.name, s.command()))
			}
		}
	}
	fmt.Fprintf(out, "speed guard: %d checks in %s\n", len(guardChecks), time.Since(began).Round(time.Second))
	return errors.Join(failed...)
}
