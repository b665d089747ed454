package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
)

func newBenchFootprintCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.FootprintOptions
	cmd := &cobra.Command{
		Use:   "footprint",
		Short: "What tenure run costs beside each replica, next to etcdctl lock: memory, start-up, idle CPU",
		Long: `footprint measures "tenure run" (of this binary, or of --tenure) beside etcd's own
"etcdctl lock" (the etcdctl of --etcdctl, Debian's etcd-client), on the
same etcd, and prints each figure with the ratio between them:

  resident while leading  both lead a key of their own, side by side, their
                          command asleep: resident memory (VmRSS) at the end
                          of --idle; tenure's is its process and its guard's
                          summed, and each is shown
  idle CPU while leading  CPU time of the same processes over --idle, per
                          minute
  run -- true             "tenure run -- true" and "etcdctl lock -- true" run
                          --runs times each as whole processes, in pairs:
                          wall time, and CPU time (the process and every
                          process it waited for), median

It ends with a goal line for each goal of issue #24 (tenure at most 1.5x
etcdctl lock in memory while leading and in the wall time of run -- true),
met or not. A goal not met does not fail the command.

The figures depend on how this binary was built: a release build
(scripts/build.sh) runs the guard's own small program, a plain go build
re-executes tenure as the guard (docs/build.md); the report says which.
docs/footprint.md has the figures of one run and how to reproduce them.`,
		Example: `  tenure bench footprint
  tenure bench footprint --runs 50 --idle 2m --json
  tenure bench footprint --endpoints http://127.0.0.1:2379 --etcdctl /usr/bin/etcdctl
  tenure bench footprint --tenure ./tenure-built-otherwise`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Tenure == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("bench footprint: find this tenure binary: %w", err)
				}
				o.Tenure = exe
			}
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.Footprint(ctx, o)
			})
		},
	}
	cmd.Flags().StringVar(&o.Tenure, "tenure", "", "the tenure binary measured (default: this one), to compare builds")
	cmd.Flags().StringVar(&o.Etcdctl, "etcdctl", "etcdctl", "etcd's etcdctl (Debian: apt-get install etcd-client), a path or a name in PATH")
	cmd.Flags().IntVar(&o.Runs, "runs", 20, `runs of "-- true" per implementation`)
	cmd.Flags().DurationVar(&o.Idle, "idle", 0, "how long both lead, idle, while their CPU is counted (default 1m)")
	cmd.Flags().DurationVar(&o.TTL, "ttl", 0, "lease of both, whole seconds (default 10s, the default of both)")
	return cmd
}
