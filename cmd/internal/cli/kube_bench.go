package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
)

// kubeBenchmarks are the bench subcommands that run on Kubernetes.
var kubeBenchmarks = []string{"handover", "failover", "kube"}

// kubeBenchTarget is the Kubernetes target the flags name, for the
// benchmarks that run there.
func kubeBenchTarget(cmd *cobra.Command, g *globalFlags) (bench.Target, func(), error) {
	if !slices.Contains(kubeBenchmarks, cmd.Name()) {
		return bench.Target{}, nil, usageError("bench %s runs on etcd or PostgreSQL, not Kubernetes: remove --kubeconfig/--namespace (on Kubernetes: bench %v)", cmd.Name(), kubeBenchmarks)
	}
	if g.coord.kubeconfig == "" {
		return bench.Target{}, nil, usageError("bench on Kubernetes needs --kubeconfig (it starts contender processes of its own)")
	}
	quietKlog()
	fmt.Fprintf(cmd.ErrOrStderr(), "bench: using Kubernetes through %s (chosen by %s)\n", g.coord.kubeconfig, g.coord.chosenBy)
	return bench.Target{Kubeconfig: g.coord.kubeconfig, Namespace: g.coord.namespace, Progress: cmd.ErrOrStderr()}, func() {}, nil
}

// quietKlog silences client-go's own log (klog, a process-wide logger): its
// leaderelection logs every attempt to stderr, over the progress lines.
func quietKlog() {
	klog.SetLogger(logr.Discard())
}

// contenderCommand runs this binary as a failover contender process.
func contenderCommand(cmd *cobra.Command) (func(spec string) *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this binary to run the contenders: %w", err)
	}
	return func(spec string) *exec.Cmd {
		c := exec.Command(exe, "bench", "child", "--spec", spec)
		c.Stderr = cmd.ErrOrStderr()
		return c
	}, nil
}

func newBenchKubeCommand(g *globalFlags, f *benchFlags) *cobra.Command {
	var o bench.KubeOptions
	cmd := &cobra.Command{
		Use:   "kube --kubeconfig FILE",
		Short: "tenure beside client-go's leaderelection on one Kubernetes API server",
		Long: `kube runs tenure and client-go's LeaderElector (a LeaseLock) on the API
server --kubeconfig names, at one lease duration (--ttl, client-go's
LeaseDuration; its RenewDeadline and RetryPeriod are its defaults scaled to
it: 10s and 2s at 15s), in one run, and prints one table:

  handover         the leader lets go (client-go: ReleaseOnCancel); time
                   until the successor acts
  failover         the leading process is SIGKILLed; time until the
                   successor (another process) acts
  fresh candidate  a Lease whose holder is gone; time until a candidate
                   that never saw it leads
  idle follower    API requests a second of a follower behind a live
                   leader (and of the leader)

It creates Leases named bench-* in the namespace (the context's, or
--namespace) and leaves the ones that end released or expired. With the
defaults it takes about eight minutes.`,
		Example: `  tenure bench kube --kubeconfig ~/.kube/config --namespace bench
  tenure bench kube --kubeconfig kc --ttl 5s --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := contenderCommand(cmd)
			if err != nil {
				return err
			}
			o.Command = run
			return runBench(cmd, g, f, func(ctx context.Context, t bench.Target) (*bench.Report, error) {
				o.Target = t
				return bench.Kube(ctx, o)
			})
		},
	}
	cmd.Flags().DurationVar(&o.TTL, "ttl", 0, "tenure's TTL and client-go's LeaseDuration, whole seconds (default 15s)")
	cmd.Flags().IntVar(&o.HandoverTrials, "handover-trials", 0, "handovers per implementation (default 20)")
	cmd.Flags().IntVar(&o.FailoverTrials, "failover-trials", 0, "leaders killed per implementation (default 10)")
	cmd.Flags().IntVar(&o.Fresh, "fresh", 0, "fresh candidates per implementation (default 3)")
	cmd.Flags().IntVar(&o.Idle, "idle", 0, "idle followers per implementation (default 3)")
	cmd.Flags().DurationVar(&o.Window, "window", 0, "how long the idle followers' requests are counted (default 30s)")
	return cmd
}
