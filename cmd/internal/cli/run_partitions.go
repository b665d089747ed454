package cli

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termctl"
	"github.com/tenure-dev/tenure/partition"
)

// runPartitionsDoc is the part of tenure run's help about --partitions.
const runPartitionsDoc = `With --partitions P, --key names a group of P partitions (keys KEY/0 to
KEY/P-1, or KEY/NAME with --names), shared by every "tenure run
--partitions" process on the same key: each process is a member of the
group, owns at most ceil(P/N) partitions of the N live members (rendezvous
hashing), and runs one COMMAND per partition it owns, each under its own
guard, with its own term and fencing token, and every guarantee above per
command. Every command also gets:

  TENURE_PARTITION       the partition's index, 0 to P-1
  TENURE_PARTITION_NAME  its name (only with --names)

and TENURE_KEY is the partition's key, TENURE_FENCING_TOKEN its token.
When a partition's term ends (lease lost, hand-over to a joining member,
tenure stopping) its command's tree gets SIGTERM, then SIGKILL after
--kill-grace, never past the deadline. A command that exits on its own, with
any code, releases its partition; the same member claims it again, with a
new token, after the retry period (TTL/10) and runs the command again: a
partition's command always runs somewhere. SIGINT or SIGTERM is forwarded
to every command (SIGKILL follows after --kill-grace, never past a
deadline); tenure then releases every partition at once (the others take
over without waiting for the TTL) and exits 128+N whatever the commands'
codes. SIGHUP is forwarded to every command and never stops the member.
--restart is implied; --wait-timeout is not supported with --partitions.
With --exit-on-loss, the member exits 75 when any of its partitions is lost
(its lease expired, was taken or fenced; a hand-over is not a loss), after
stopping every command and releasing every partition.

With --http, the member serves the live status page and /status with the
group's partition table (each partition's owner, token and lease left, and
the members and balance), /health (200 while tenure runs), /leader (200
while this member owns at least one partition, 503 otherwise) and /metrics
with the partition metrics (tenure_partitions_owned,
tenure_partitions_unowned, tenure_partition_oldest_unowned_seconds,
tenure_partition_moves_total, tenure_partition_imbalance_ratio,
tenure_partition_members) and tenure_coordinator_errors_total.`

// partitionFlags are tenure run's flags for partition groups.
type partitionFlags struct {
	partitions int
	names      []string
}

// checkPartitionFlags validates --partitions and --names and returns the
// group's config built on cfg.
func checkPartitionFlags(cmd *cobra.Command, f *runFlags, cfg tenure.Config) (partition.Config, error) {
	pc := partition.DefaultConfig()
	pc.Config = cfg
	if f.partitions < 1 {
		return pc, usageError("--partitions (%d) must be at least 1", f.partitions)
	}
	if f.names != nil && len(f.names) != f.partitions {
		return pc, usageError("--names gives %d names for --partitions %d: give one name per partition", len(f.names), f.partitions)
	}
	if cmd.Flags().Changed("wait-timeout") {
		return pc, usageError("--wait-timeout is not supported with --partitions")
	}
	pc.Partitions, pc.Names = f.partitions, f.names
	if err := pc.Validate(); err != nil {
		err = errors.New(strings.NewReplacer("Config.Partitions", "--partitions", "Config.Names", "--names").
			Replace(configFlagNames(err).Error()))
		return pc, &exitError{code: ExitUsage, err: err}
	}
	return pc, nil
}

// groupRun is tenure run --partitions: a member of a partition group, the
// supervisor running one command per partition the member owns.
type groupRun struct {
	s     *supervisor
	named bool // --names: the commands get TENURE_PARTITION_NAME
}

// runGroup is tenure run --partitions.
func runGroup(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	cfg, path, err := checkRunFlags(cmd, g, f, args)
	if err != nil {
		return err
	}
	pc, err := checkPartitionFlags(cmd, f, cfg)
	if err != nil {
		return err
	}
	ctx, cancel, s, err := newSupervisor(cmd, g, f, args, path, stallPlan{cfg: cfg, grace: f.killGrace, group: true})
	if err != nil {
		return err
	}
	defer cancel()
	coord, stop, err := s.connect(ctx, cmd, g)
	if err != nil {
		return err
	}
	defer stop()
	warnGroupTTLDisagreement(ctx, s.log, coord, f.key, f.ttl, g.coord.dialTimeout)
	if pc.Logger, err = s.libraryLogger(ctx, cmd, g); err != nil {
		return err
	}
	r := &groupRun{s: s, named: f.names != nil}
	pc.OnTransition = func(t tenure.Transition) { logTransition(s.log, t); s.termEnded(t) }
	var member atomic.Pointer[partition.Group]
	if f.http != "" {
		stop, err := serveGroupMonitor(f.web(), &pc, &coord, &member, s.log)
		if err != nil {
			return err
		}
		defer stop()
	}
	grp, err := partition.New(coord, pc)
	if err != nil {
		return &exitError{code: ExitUsage, err: configFlagNames(err)}
	}
	member.Store(grp)
	s.log.Info("joining the group", "key", f.key, "partitions", f.partitions, "holder", f.holder,
		"ttl", f.ttl, "backend", g.coord.backend())
	return s.result(s.stopOnRefusal(grp.Run(ctx, r.lead)))
}

// lead runs the command for partition p under its own guard for term t;
// it is the group's function. It returns when the command exits (the
// partition is then released and claimed again) or when ctx ends (the
// command is stopped first).
func (r *groupRun) lead(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	env := append(termEnv(t), "TENURE_PARTITION="+strconv.Itoa(p.Index))
	if r.named {
		env = append(env, "TENURE_PARTITION_NAME="+p.Name)
	}
	return r.s.runCommand(ctx, t, env, "partition", p.Index, "key", p.Key).err
}

// logTransition logs a leadership change: a record "leadership" with key,
// holder, token and reason (and err when leadership was lost).
func logTransition(log *slog.Logger, t tenure.Transition) {
	attrs := []any{"key", t.Key, "holder", t.Holder, "token", t.Token, "reason", termctl.Reason(t.Kind)}
	switch t.Kind {
	case tenure.Elected, tenure.Resigned:
		log.Info("leadership", attrs...)
	default:
		log.Warn("leadership", append(attrs, "err", t.Err)...)
	}
}

// register adds --partitions and --names to fs.
func (f *partitionFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.partitions, "partitions", 0, "run one COMMAND per owned partition of a group of this many partitions under --key (see below)")
	fs.StringSliceVar(&f.names, "names", nil, "the partitions' names, comma-separated, one per partition (default 0 to P-1)")
}
