package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/guard"
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
partition's command always runs somewhere. SIGINT or SIGTERM stops every
command, releases every partition at once (the others take over without
waiting for the TTL) and exits 128+N. --restart is implied; --wait-timeout
is not supported with --partitions.

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

// partRunner runs the command once per owned partition of a group.
type partRunner struct {
	f        *runFlags
	log      *slog.Logger
	argv     []string
	path     string
	env      []string
	named    bool
	feeder   *runner // for leaseMessage and feed
	out, err io.Writer

	mu       sync.Mutex
	children map[*child]bool
	signal   syscall.Signal
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

// runPartitions is tenure run --partitions.
func runPartitions(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	cfg, path, err := checkRunFlags(cmd, g, f, args)
	if err != nil {
		return err
	}
	pc, err := checkPartitionFlags(cmd, f, cfg)
	if err != nil {
		return err
	}
	log, err := g.logger(cmd.ErrOrStderr(), f.json)
	if err != nil {
		return err
	}
	r := &partRunner{
		f: f, log: log, argv: args, path: path, env: commandEnv(cmd.Root(), os.Environ()),
		named: f.names != nil, out: cmd.OutOrStdout(), err: cmd.ErrOrStderr(),
		// A member renews at least three times per safe lease (partition's runner).
		feeder:   &runner{f: f, log: log, stall: stallPlan{cfg: cfg, grace: f.killGrace, group: true}},
		children: map[*child]bool{},
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(cmd.Context()))
	defer cancel()
	defer r.catchSignals(ctx, cmd.Context(), cancel)()
	coord, err := openCoordinator(ctx, &g.coord, log)
	if err != nil {
		return r.result(unavailable(err))
	}
	defer coord.Close()
	if _, ok := coord.(tenure.GroupCoordinator); !ok {
		return usageError("--partitions: the %s coordinator cannot run partition groups", g.coord.backend())
	}
	if pc.Logger, err = g.loggerAtLeast(cmd.ErrOrStderr(), f.json, slog.LevelWarn); err != nil {
		return err
	}
	pc.OnTransition = r.onTransition
	var member atomic.Pointer[partition.Group]
	if f.http != "" {
		stop, err := serveGroupMonitor(f.http, &pc, &coord, &member, log)
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
	if w := r.feeder.stall.warning(); w != "" {
		log.Warn(w)
	}
	log.Info("joining the group", "key", f.key, "partitions", f.partitions, "holder", f.holder,
		"ttl", f.ttl, "backend", g.coord.backend())
	return r.result(grp.Run(ctx, r.lead))
}

// result is how tenure run --partitions ends: 128+N after signal N, or the
// group's error.
func (r *partRunner) result(err error) error {
	r.mu.Lock()
	sig := r.signal
	r.mu.Unlock()
	switch {
	case sig != 0:
		return &exitError{code: exitSignalBase + int(sig)}
	case err != nil && !errors.Is(err, context.Canceled):
		return err
	}
	return nil
}

// catchSignals stops the group on SIGINT and SIGTERM (and when parent
// ends), forwards SIGHUP to every command, and suspends and continues every
// command's tree on SIGTSTP and SIGCONT, until the returned stop is called.
func (r *partRunner) catchSignals(ctx, parent context.Context, cancel context.CancelFunc) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				r.onSignal(s.(syscall.Signal), cancel)
			}
		}
	}()
	// main's context ends on SIGINT or SIGTERM too, and may win the race
	// with the channel above: count it as SIGTERM unless a signal is
	// already recorded (the channel's, when it comes, replaces it), so the
	// exit code is 128+N either way.
	stopParent := context.AfterFunc(parent, func() {
		r.mu.Lock()
		if r.signal == 0 {
			r.signal = syscall.SIGTERM
		}
		r.mu.Unlock()
		cancel()
	})
	return func() {
		stopParent()
		signal.Stop(sigs)
		cancel()
		<-done
	}
}

// onSignal handles one signal tenure got.
func (r *partRunner) onSignal(sig syscall.Signal, cancel context.CancelFunc) {
	switch sig {
	case syscall.SIGTSTP:
		r.each(guard.Message{Op: guard.OpStop})
		r.log.Info("suspending (SIGTSTP): the commands are stopped; each is killed if its deadline passes before SIGCONT")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	case syscall.SIGCONT:
		r.each(guard.Message{Op: guard.OpCont})
	case syscall.SIGHUP:
		r.each(guard.Message{Op: guard.OpSignal, Signal: sig})
	default:
		r.mu.Lock()
		r.signal = sig
		r.mu.Unlock()
		r.log.Info("signal received; stopping every command and leaving the group", "signal", sig.String())
		cancel()
	}
}

// each sends m to the guard of every running command.
func (r *partRunner) each(m guard.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.children {
		c.send(m)
	}
}

func (r *partRunner) onTransition(t tenure.Transition) { logTransition(r.log, t) }

// logTransition logs a leadership change: a record "leadership" with key,
// holder, token and reason (and err when leadership was lost).
func logTransition(log *slog.Logger, t tenure.Transition) {
	attrs := []any{"key", t.Key, "holder", t.Holder, "token", t.Token, "reason", t.Kind.Reason()}
	switch t.Kind {
	case tenure.Elected, tenure.Resigned:
		log.Info("leadership", attrs...)
	default:
		log.Warn("leadership", append(attrs, "err", t.Err)...)
	}
}

// partitionEnv is what the command of partition p learns of its term t.
func (r *partRunner) partitionEnv(p partition.Partition, t *tenure.Term) []string {
	env := append(termEnv(t), "TENURE_PARTITION="+strconv.Itoa(p.Index))
	if r.named {
		env = append(env, "TENURE_PARTITION_NAME="+p.Name)
	}
	return env
}

// lead runs the command for partition p under its own guard for term t;
// it is the group's function. It returns when the command exits (the
// partition is then released and claimed again) or when ctx ends (the
// command is stopped first).
func (r *partRunner) lead(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	c, err := startChild(r.path, r.argv, r.env, nil, r.out, r.err, r.f.killGrace)
	if err != nil {
		r.log.Error("command could not start", "partition", p.Index, "command", r.argv[0], "err", err)
		return err
	}
	first := r.feeder.leaseMessage(t)
	first.Env = r.partitionEnv(p, t)
	c.send(first)
	fed, stopFeed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fed)
		r.feeder.feed(c, t, stopFeed)
	}()
	defer func() { close(stopFeed); <-fed }()
	if err := c.awaitStart(); errors.Is(err, errTooLate) {
		r.log.Warn("command not started: its term was over", "partition", p.Index, "token", t.Token(), "err", err)
		t.StepDown(err)
		return nil
	} else if err != nil {
		r.log.Error("command could not start", "partition", p.Index, "command", r.argv[0], "err", err)
		return err
	}
	r.mu.Lock()
	r.children[c] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.children, c)
		r.mu.Unlock()
	}()
	r.log.Info("command started", "partition", p.Index, "key", p.Key, "pid", c.pid, "token", t.Token())
	select {
	case <-c.done:
		if c.expired() {
			r.log.Warn("the guard killed the command at the local deadline", "partition", p.Index, "pid", c.pid, "token", t.Token())
			t.StepDown(errKilledAtDeadline)
			return nil
		}
		r.log.Info("command exited; its partition is released and claimed again", "partition", p.Index,
			"pid", c.pid, "status", c.describe(), "ran", time.Since(c.began).Round(time.Millisecond))
		return nil
	case <-ctx.Done():
	}
	why := "tenure is stopping"
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		why = cause.Error()
	}
	r.log.Info("stopping the command", "partition", p.Index, "pid", c.pid, "reason", why,
		"sigkill_in", max(min(r.f.killGrace, t.Remaining()), 0).Round(time.Millisecond))
	killed := c.stop(syscall.SIGTERM)
	r.log.Info("command stopped", "partition", p.Index, "pid", c.pid, "status", c.describe(), "sigkill", killed)
	return nil
}

// register adds --partitions and --names to fs.
func (f *partitionFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.partitions, "partitions", 0, "run one COMMAND per owned partition of a group of this many partitions under --key (see below)")
	fs.StringSliceVar(&f.names, "names", nil, "the partitions' names, comma-separated, one per partition (default 0 to P-1)")
}
