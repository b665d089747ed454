package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/guard"
)

type runFlags struct {
	key         string
	ttl         time.Duration
	margin      time.Duration
	maxDrift    float64
	holder      string
	killGrace   time.Duration
	restart     bool
	waitTimeout time.Duration
	json        bool
	http        string
	partitionFlags
}

// runLong is the help of tenure run.
var runLong = `run campaigns for --key and, while it leads, runs COMMAND. However many
"tenure run" processes share a key, on however many machines, at most one
runs its command at a time.

COMMAND gets the environment of tenure, without tenure's own variables
(the twin of every flag: TENURE_ENDPOINTS, TENURE_POSTGRES, TENURE_USER,
TENURE_PASSWORD, TENURE_TLS_*, …), plus:

  TENURE_KEY            the key led
  TENURE_HOLDER         this process's display name (--holder)
  TENURE_INSTANCE       this process's instance id (the coordinator sees
                        the holder as TENURE_HOLDER#TENURE_INSTANCE)
  TENURE_FENCING_TOKEN  the term's fencing token: a number greater than every
                        token given out before for this key; present it to
                        every resource you write to, so that a resource can
                        refuse a deposed leader's late writes
  TENURE_LEASE_TTL      the lease granted, as a Go duration ("10s")
  TENURE_LEASE_FILE     the lease file: "tenure lease check" exits 0 and
                        prints the token only while the lease is safely
                        held, as in: tenure lease check && do_write

Inside COMMAND, TENURE_KEY and TENURE_HOLDER describe this term: a nested
"tenure run" does not take them as its --key and --holder.

` + leaseDoc + `

COMMAND runs under a guard: the tenure binary re-executed as a separate
process named tenure-guard (in ps and top), a child subreaper (orphans of
COMMAND's descendants become its children), that starts COMMAND in a
process group of its own and learns
each new local deadline (the moment the lease might expire at the
coordinator, less a safety margin, on the clock that counts suspended
time). The guard, not tenure, enforces it:
  - at the last deadline it heard of, it SIGKILLs every process of
    COMMAND's tree (every descendant, in any process group or session),
    even if tenure is stopped (kill -STOP) and sends nothing more;
  - when renewals stall, SIGTERM comes first, at --kill-grace before the
    deadline, but not before a renewal is overdue (unanswered a retry
    period, TTL/10, after it was due; tenure logs "renewal overdue" then);
    a --kill-grace that cannot fit is warned about at start, with the
    arithmetic;
  - if tenure dies, even by SIGKILL, it kills the whole tree at once;
  - it never starts COMMAND once the term's deadline has passed (tenure
    was stopped or slow between the grant and the start): tenure logs it
    and campaigns again;
  - it signals what is left of the tree again and again until nothing is
    left, and names the survivors in the log (a process it may not
    signal, say, of another user);
  - Ctrl-Z (SIGTSTP) stops COMMAND's tree, then tenure; on SIGCONT the tree
    continues if the deadline has not passed, and is killed without ever
    being continued if it has.
When a term ends (the lease is lost or cannot be renewed), the tree gets
SIGTERM, then SIGKILL after --kill-grace, no later than the deadline.
tenure then campaigns again and starts COMMAND afresh when it leads again.
Out of reach: someone stopping or killing the guard itself; a descendant
that makes itself a subreaper and outlives its own children; a process
group id reused in the instant between reading /proc and signalling.

SIGINT, SIGTERM and SIGHUP sent to tenure are forwarded to COMMAND's tree.
COMMAND does not read the terminal: when tenure's stdin is a terminal,
COMMAND's is /dev/null.

When COMMAND exits on its own, tenure releases the key at once (another
process takes over in one round trip, not a TTL) and exits with COMMAND's
exit code, 128+N if signal N ended it. With --restart it campaigns again
instead, and runs COMMAND again when it leads.

When tenure gets SIGINT or SIGTERM, it forwards the signal, waits for
COMMAND to exit (at most --kill-grace, and never past the local deadline,
then SIGKILL), releases the key and exits with COMMAND's exit code; if no
command runs it exits with 128+N. SIGHUP while no command runs ends tenure
too.

With --http, this node serves a live status page at / and /status (JSON),
/health (200 while tenure runs, whatever its role), /leader (200 only
while it leads, 503 otherwise) and /metrics (tenure_is_leader,
tenure_fencing_token, tenure_transitions_total, tenure_lease_remaining_seconds,
…: see the README's Monitoring section).

Leadership changes and the command's start and end are logged to stderr,
as text, or as JSON lines (one object per line) with --log-format json
(or --json): every leadership change is a record with "msg":"leadership",
"key", "holder", "token" and "reason" (acquired, released, deadline, lost,
fenced).

Exit codes:
  N    COMMAND's exit code (128+S when signal S ended it)
  2    bad flags or arguments (including no COMMAND)
  3    not leader within --wait-timeout
  ` + exitCodesTenure + `
  126  COMMAND could not be started
  127  COMMAND was not found
  128+S  tenure got signal S while no command ran
tenure's own failures never exit 1, so that "tenure run -- false" (1) and
a failed tenure (69, 70) can be told apart by cron or systemd.

` + runPartitionsDoc

// runExample is the examples of tenure run.
const runExample = `  # against "tenure server" on this machine: at most one worker at a time
  tenure run --key jobs -- ./worker.sh

  # PostgreSQL as the coordinator, a 5s lease, and a name in the logs
  tenure run --postgres "$DSN" --key jobs --ttl 5s --holder "$(hostname)" -- ./worker.sh

  # a cron job that runs on one machine only: give up after 30s of waiting
  tenure run --key nightly-report --wait-timeout 30s -- ./report.sh

  # a service that must always run somewhere; restart it when it exits
  tenure run --key scheduler --restart -- ./scheduler --config prod.yaml

  # one worker per partition of 64, spread over every process running this
  tenure run --key jobs --partitions 64 -- ./worker.sh

  # check the lease right before each write, from inside the command
  tenure run --key jobs -- sh -c 'while tenure lease check >/dev/null; do ./step.sh; done'

  # export Prometheus metrics of the election
  tenure run --key jobs --http 127.0.0.1:9480 -- ./worker.sh`

func newRunCommand(g *globalFlags) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:     "run --key KEY [flags] [--] COMMAND [ARG...]",
		Short:   "Run a command only while this process leads a key",
		Long:    runLong,
		Example: runExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("run needs a command to run after the flags, as in: tenure run --key jobs -- ./worker.sh (see 'tenure run --help')")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, g, &f, args)
		},
	}
	// Everything after the first argument belongs to COMMAND, "--" or not.
	cmd.Flags().SetInterspersed(false)
	fs := cmd.Flags()
	fs.StringVar(&f.key, "key", "", "the key to lead (required): 1–200 bytes of A-Z a-z 0-9 . _ / -")
	fs.DurationVar(&f.ttl, "ttl", 10*time.Second, "lease TTL: how long after its last renewal a silent leader keeps the key (etcd rounds up to whole seconds)")
	fs.DurationVar(&f.margin, "margin", time.Second, "safety margin: the command is stopped this long before the lease could expire at the coordinator (less than --ttl)")
	fs.Float64Var(&f.maxDrift, "max-drift", 0.01, "largest clock-rate difference assumed between this machine and the coordinator, as a fraction in [0, 0.5)")
	fs.StringVar(&f.holder, "holder", "", "this process's display `name` (default: the host name, the process id and a random suffix)")
	fs.DurationVar(&f.killGrace, "kill-grace", 2*time.Second, "after SIGTERM, wait this long for the command to exit before SIGKILL (never past the local deadline)")
	fs.BoolVar(&f.restart, "restart", false, "when the command exits, release the key, campaign again and run it again")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 0, "exit with code 3 if not leader within this long of starting to campaign (0: wait forever); applies to every campaign")
	fs.BoolVar(&f.json, "json", false, "log to stderr as JSON lines instead of text")
	fs.StringVar(&f.http, "http", "", `host:port of the live status page (/) and of /status, /health, /leader and /metrics; "" serves nothing`)
	f.partitionFlags.register(fs)
	return cmd
}

// parentGrace is how long tenure run waits, when its context ends, for the
// signal that ended it to arrive through its own handler.
const parentGrace = 100 * time.Millisecond

// restartBackoff is the least time between two starts of the command
// under --restart.
const restartBackoff = time.Second

// runner is one tenure run invocation.
type runner struct {
	f     *runFlags
	log   *slog.Logger
	argv  []string
	path  string
	env   []string
	stdin io.Reader

	stdout, stderr io.Writer

	cancel context.CancelFunc // ends the campaign: tenure exits
	wait   *waitLimit

	mu        sync.Mutex
	current   *child // the running command, nil when none
	forwarded *child // the command a stopping signal was forwarded to
	signal    syscall.Signal
	exitCode  int // the command's code to exit with; -1: none
	startErr  error
	ran       time.Duration // how long the last command ran
	spare     *child        // a guard started ahead of the next term

	stall stallPlan // when the guard sends SIGTERM if renewals stall
}

func (r *runner) lastRan() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran
}

func runRun(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	if cmd.Flags().Changed("partitions") || cmd.Flags().Changed("names") {
		return runPartitions(cmd, g, f, args)
	}
	cfg, path, err := checkRunFlags(cmd, g, f, args)
	if err != nil {
		return err
	}
	log, err := g.logger(cmd.ErrOrStderr(), f.json)
	if err != nil {
		return err
	}
	// tenure run handles SIGINT and SIGTERM itself (forward, then stop):
	// the command's context, which the same signals cancel, must not end
	// the campaign before the handler has seen them. When it ends without
	// a signal (an embedding program stopping), it stops tenure as SIGTERM
	// would.
	parent := cmd.Context()
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	r := &runner{
		f: f, log: log, argv: args, path: path, env: commandEnv(cmd.Root(), os.Environ()),
		stdin: childStdin(cmd.InOrStdin()), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(),
		cancel: cancel, exitCode: -1, stall: stallPlan{cfg: cfg, grace: f.killGrace},
	}
	// Signals are caught before dialling: from here on tenure decides what
	// a signal means.
	defer r.catchSignals(ctx, parent)()

	coord, err := openCoordinator(ctx, &g.coord, log)
	if err != nil {
		if sig := r.caught(); sig != 0 {
			return &exitError{code: exitSignalBase + int(sig)}
		}
		return unavailable(err)
	}
	defer coord.Close()
	el, stop, err := r.newElector(ctx, cmd, g, coord, cfg)
	if err != nil {
		return err
	}
	defer stop()
	if w := r.stall.warning(); w != "" {
		log.Warn(w)
	}
	log.Info("campaigning", "key", f.key, "holder", f.holder, "ttl", f.ttl, "backend", g.coord.backend())
	lctx, lcancel := context.WithTimeout(ctx, g.coord.dialTimeout)
	if lg, ok, err := coord.Leader(lctx, f.key); err == nil && ok {
		log.Info("key held; waiting for it", "key", f.key, "leader", lg.Holder, "token", lg.Token)
	}
	lcancel()
	return r.result(ctx, coord, r.campaign(ctx, el))
}

// checkRunFlags checks the flags and arguments of tenure run and returns
// the elector's config and the command's path.
func checkRunFlags(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) (tenure.Config, string, error) {
	cfg := tenure.DefaultConfig()
	if err := g.coord.check(cmd.Flags()); err != nil {
		return cfg, "", err
	}
	if f.key == "" {
		return cfg, "", usageError("--key is required: the key to lead (see 'tenure run --help')")
	}
	if err := checkListenAddr(f.http); err != nil {
		return cfg, "", usageError("%s: %w", flagRef(cmd, "http"), err)
	}
	if err := tenure.ValidateKey(f.key); err != nil {
		return cfg, "", usageError("%s: %w", flagRef(cmd, "key"), err)
	}
	if f.holder == "" {
		f.holder = tenure.DefaultHolder()
	} else if err := tenure.ValidateHolder(f.holder); err != nil {
		return cfg, "", usageError("%s: %w", flagRef(cmd, "holder"), err)
	}
	if f.killGrace < 0 {
		return cfg, "", usageError("--kill-grace (%s) must not be negative", f.killGrace)
	}
	if f.waitTimeout < 0 {
		return cfg, "", usageError("--wait-timeout (%s) must not be negative (0 waits forever)", f.waitTimeout)
	}
	if err := checkTiming(cmd, f.ttl, f.margin, f.maxDrift); err != nil {
		return cfg, "", err
	}
	cfg.Key, cfg.Holder, cfg.TTL = f.key, f.holder, f.ttl
	cfg.Instance = tenure.ProcessInstance() // one identity per process: see TENURE_INSTANCE
	cfg.Margin, cfg.MaxDrift = f.margin, f.maxDrift
	if err := cfg.Validate(); err != nil {
		return cfg, "", &exitError{code: ExitUsage, err: configFlagNames(err)}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		code := ExitCannotRun // a directory, no execute permission, …: as shells do
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = ExitNotFound
		}
		return cfg, "", &exitError{code: code, err: fmt.Errorf("command %q: %w", args[0], err)}
	}
	return cfg, path, nil
}

// catchSignals handles SIGINT, SIGTERM, SIGHUP, SIGTSTP and SIGCONT (see
// onSignal) until the returned stop is called, and stops tenure as SIGTERM
// would when parent ends without one of them.
func (r *runner) catchSignals(ctx, parent context.Context) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	sigDone := make(chan struct{})
	stopSigs := make(chan struct{})
	go func() {
		defer close(sigDone)
		for {
			select {
			case <-stopSigs:
				return
			case s := <-sigs:
				r.onSignal(s.(syscall.Signal))
			}
		}
	}()
	stopParent := context.AfterFunc(parent, func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(parentGrace):
		}
		if r.caught() == 0 {
			r.onSignal(syscall.SIGTERM)
		}
	})
	return func() {
		stopParent()
		signal.Stop(sigs)
		close(stopSigs)
		<-sigDone
	}
}

// newElector makes the elector of tenure run, with --http's metrics server
// (stopped by the returned stop) and --wait-timeout.
func (r *runner) newElector(ctx context.Context, cmd *cobra.Command, g *globalFlags, coord tenure.Coordinator, cfg tenure.Config) (*tenure.Elector, func(), error) {
	var err error
	// The elector's own records repeat what the transitions say; show its
	// warnings (failed renewals) unless debugging.
	cfg.Logger = r.log
	if !r.log.Enabled(ctx, slog.LevelDebug) {
		if cfg.Logger, err = g.loggerAtLeast(cmd.ErrOrStderr(), r.f.json, slog.LevelWarn); err != nil {
			return nil, nil, err
		}
	}
	stop := func() {}
	if r.f.http != "" {
		if stop, err = serveRunMonitor(r.f.http, &cfg, &coord, r.log); err != nil {
			return nil, nil, err
		}
	}
	r.wait = newWaitLimit(r.f.waitTimeout, func() {
		r.log.Warn("not leader within --wait-timeout; giving up", "key", r.f.key, "wait_timeout", r.f.waitTimeout)
		r.cancel()
	})
	cfg.OnTransition = r.onTransition
	el, err := tenure.NewElector(coord, cfg)
	if err != nil {
		stop()
		return nil, nil, &exitError{code: ExitUsage, err: configFlagNames(err)}
	}
	return el, stop, nil
}

// campaign leads until the command has run (or, with --restart, until
// tenure stops) and returns the elector's error.
func (r *runner) campaign(ctx context.Context, el *tenure.Elector) error {
	defer r.dropSpare()
	for {
		r.wait.campaigning()
		r.prepare()
		runErr := el.Run(ctx, r.lead)
		r.wait.stop()
		if !r.f.restart || ctx.Err() != nil || r.done() || runErr != nil {
			return runErr
		}
		// A command that fails at once must not turn tenure into a loop
		// of grants and releases.
		wait := time.Duration(0)
		if ran := r.lastRan(); ran < restartBackoff {
			wait = restartBackoff - ran
		}
		r.log.Info("command exited; campaigning again (--restart)", "key", r.f.key, "after", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// result is how tenure run ends, by precedence: the command's exit code,
// a command that could not start, --wait-timeout, a signal, an error.
func (r *runner) result(ctx context.Context, coord tenure.Coordinator, runErr error) error {
	r.mu.Lock()
	code, startErr, sig := r.exitCode, r.startErr, r.signal
	r.mu.Unlock()
	switch {
	case startErr != nil:
		var ee *exitError
		if errors.As(startErr, &ee) {
			return startErr // the guard could not start: tenure's failure
		}
		c := ExitCannotRun
		if errors.Is(startErr, exec.ErrNotFound) || errors.Is(startErr, fs.ErrNotExist) {
			c = ExitNotFound
		}
		return &exitError{code: c, err: fmt.Errorf("start %q: %w", r.argv[0], startErr)}
	case code >= 0:
		if code == 0 {
			return nil
		}
		return &exitError{code: code}
	case r.wait.fired():
		msg := fmt.Sprintf("not leader of %q within --wait-timeout (%s)", r.f.key, r.f.waitTimeout)
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if g, ok, err := coord.Leader(lctx, r.f.key); err == nil && ok {
			msg += fmt.Sprintf(": held by %s (token %d)", tenure.DescribeHolder(g.Holder), g.Token)
		}
		return &exitError{code: ExitNotReady, err: errors.New(msg)}
	case sig != 0:
		return &exitError{code: exitSignalBase + int(sig)}
	case runErr != nil && !errors.Is(runErr, context.Canceled):
		return runErr
	case ctx.Err() != nil:
		return &exitError{code: ExitSoftware, err: context.Cause(ctx)}
	}
	return nil
}

// done reports whether the command has ended in a way that ends tenure.
func (r *runner) done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitCode >= 0 || r.startErr != nil || r.signal != 0
}

func (r *runner) caught() syscall.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signal
}

// onSignal handles a signal tenure got. SIGTSTP stops the command's tree
// (through the guard), then tenure itself; SIGCONT continues the tree if
// its deadline has not passed (the guard kills it otherwise). Other
// signals are forwarded to the command's tree; SIGINT and SIGTERM also end
// tenure (after the command, if any, has exited); so does SIGHUP when no
// command runs.
func (r *runner) onSignal(sig syscall.Signal) {
	r.mu.Lock()
	c := r.current
	r.mu.Unlock()
	switch sig {
	case syscall.SIGTSTP:
		if c != nil {
			c.send(guard.Message{Op: guard.OpStop})
		}
		r.log.Info("suspending (SIGTSTP): the command is stopped; it is killed if its deadline passes before SIGCONT")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		return
	case syscall.SIGCONT:
		if c != nil {
			r.log.Info("continued (SIGCONT): the command continues if its deadline has not passed")
			c.send(guard.Message{Op: guard.OpCont})
		}
		return
	}
	r.mu.Lock()
	stopping := sig != syscall.SIGHUP || c == nil
	if stopping {
		r.signal = sig
		if c != nil {
			r.forwarded = c
		}
	}
	r.mu.Unlock()
	if c != nil {
		r.log.Info("forwarding signal to the command", "signal", sig.String())
		c.signal(sig)
	} else {
		r.log.Info("signal received; stopping", "signal", sig.String())
	}
	if stopping {
		r.cancel()
	}
}

func (r *runner) onTransition(t tenure.Transition) {
	if t.Kind == tenure.Elected {
		r.wait.elected()
	} else if t.Kind != tenure.Resigned {
		r.wait.campaigning() // the elector campaigns again
	}
	logTransition(r.log, t)
}

// lead runs the command for term t; it is the elector's leader function.
func (r *runner) lead(ctx context.Context, t *tenure.Term) error {
	if ctx.Err() != nil || r.done() {
		return nil // stopping already: do not start
	}
	c, err := r.start(t)
	if c == nil {
		return err
	}
	// Feed the guard from the start: the command waits for the guard to
	// start it, and a renewal may come meanwhile.
	fed := make(chan struct{})
	stopFeed := make(chan struct{})
	go func() {
		defer close(fed)
		r.feed(c, t, stopFeed)
	}()
	defer func() { close(stopFeed); <-fed }()
	if err := c.awaitStart(); errors.Is(err, errTooLate) {
		r.mu.Lock()
		r.current = nil
		r.mu.Unlock()
		r.log.Warn("command not started: its term was over", "token", t.Token(), "err", err)
		t.StepDown(err)
		return nil
	} else if err != nil {
		r.mu.Lock()
		r.startErr = err
		r.current = nil
		r.mu.Unlock()
		r.log.Error("command could not start", "command", r.argv[0], "err", err)
		r.cancel()
		return err
	}
	defer func() {
		r.mu.Lock()
		r.current = nil
		r.mu.Unlock()
		r.prepare() // for the next term, unless tenure is ending
	}()
	r.log.Info("command started", "pid", c.pid, "token", t.Token(), "command", r.argv[0])
	select {
	case <-c.done:
		if c.expired() {
			// The guard killed it on its own, at the deadline it last
			// heard of (tenure was stopped, or slow): the term is over.
			r.log.Warn("the guard killed the command at the local deadline", "pid", c.pid, "token", t.Token())
			t.StepDown(errKilledAtDeadline)
			return nil
		}
		r.exited(c)
	case <-ctx.Done():
		r.stopCommand(c, t)
	}
	return nil
}

// errKilledAtDeadline ends a term whose command the guard killed at the
// deadline it had.
var errKilledAtDeadline = errors.New("the guard killed the command at the local deadline")

// start has a guard start the command for term t. It returns no child
// when a stopping signal came in first, or when no guard could be started
// (and why).
func (r *runner) start(t *tenure.Term) (*child, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.signal != 0 { // a stopping signal came in while the term began
		return nil, nil
	}
	c := r.spare
	r.spare = nil
	if c == nil || c.exited() {
		var err error
		if c, err = r.startGuard(); err != nil {
			r.startErr = &exitError{code: ExitSoftware, err: err}
			r.log.Error("command could not start", "command", r.argv[0], "err", err)
			r.cancel()
			return nil, err
		}
	}
	first := r.leaseMessage(t)
	first.Env = termEnv(t)
	c.send(first)
	r.current = c
	return c, nil
}

// startGuard starts a guard for the command; it waits for its first lease.
func (r *runner) startGuard() (*child, error) {
	return startChild(r.path, r.argv, r.env, r.stdin, r.stdout, r.stderr, r.f.killGrace)
}

// prepare starts a spare guard ahead of the next term, so that the command
// starts the moment the term begins (a guard takes a moment to start). A
// guard that cannot start is reported when a term needs it.
func (r *runner) prepare() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spare != nil || r.signal != 0 || r.exitCode >= 0 || r.startErr != nil {
		return
	}
	if c, err := r.startGuard(); err == nil {
		r.spare = c
	}
}

// dropSpare ends the spare guard, if any.
func (r *runner) dropSpare() {
	r.mu.Lock()
	c := r.spare
	r.spare = nil
	r.mu.Unlock()
	if c != nil {
		c.close()
		<-c.done
	}
}

// feedInterval is how often tenure looks for a new deadline to send to
// the guard.
const feedInterval = 20 * time.Millisecond

// feed sends the guard each new deadline of t until stop is closed or the
// guard is gone. While tenure is stopped nothing is sent, and the guard
// kills the command at the last deadline it heard of.
func (r *runner) feed(c *child, t *tenure.Term, stop <-chan struct{}) {
	tick := time.NewTicker(feedInterval)
	defer tick.Stop()
	var last time.Time // the first tick sends the lease again: cheap, and sure
	var termAt boottime.Instant
	for {
		select {
		case <-stop:
			return
		case <-c.done:
			return
		case <-tick.C:
		}
		if d := t.Deadline(); !d.Equal(last) && t.Context().Err() == nil {
			last = d
			m := r.leaseMessage(t)
			termAt = m.TermAt
			c.send(m)
		} else if termAt != 0 && boottime.Now() >= termAt {
			termAt = 0
			r.log.Warn("renewal overdue: the guard sends the command SIGTERM now, SIGKILL at the local deadline unless a renewal comes first",
				"key", t.Key(), "token", t.Token(), "sigkill_in", max(t.Remaining(), 0).Round(time.Millisecond))
		}
	}
}

// leaseMessage is the guard's news of t's lease: its deadline on the boot
// clock, and when the command gets SIGTERM if no renewal comes by then
// (see stallPlan).
func (r *runner) leaseMessage(t *tenure.Term) guard.Message {
	now := boottime.Now()
	// The term's deadline on the boot clock, measured from the send time of
	// the request that produced the grant, as the term's own.
	deadline := boottime.Instant(t.BootDeadline())
	name, instance := tenure.SplitIdentity(t.Holder())
	return guard.Message{Op: guard.OpLease, TermAt: r.stall.termAt(now, deadline, t.Grant().TTL), Lease: &guard.Lease{
		Key: t.Key(), Holder: name, Instance: instance, Token: t.Token(),
		Deadline: deadline, TTLMs: t.Grant().TTL.Milliseconds(), Live: true,
	}}
}

// exited handles the command's exit on its own (the guard has already
// stopped what was left of its tree).
func (r *runner) exited(c *child) {
	ran := time.Since(c.began)
	r.mu.Lock()
	r.ran = ran
	forwarded := r.forwarded == c
	r.mu.Unlock()
	r.log.Info("command exited", "pid", c.pid, "status", c.describe(), "ran", ran.Round(time.Millisecond))
	if !r.f.restart || forwarded {
		r.mu.Lock()
		r.exitCode = c.exitCode()
		r.mu.Unlock()
		r.cancel() // resign and exit, even if the term ended meanwhile
	}
}

// stopCommand ends the command because the term ended or tenure is
// stopping: SIGTERM (unless a signal was forwarded already), SIGKILL after
// --kill-grace but no later than the deadline.
func (r *runner) stopCommand(c *child, t *tenure.Term) {
	resigning := t.Context().Err() == nil
	r.mu.Lock()
	forwarded := r.forwarded == c
	r.mu.Unlock()
	sig := syscall.SIGTERM
	if forwarded {
		sig = 0 // the signal tenure got has been forwarded already
	}
	level, why := slog.LevelInfo, "tenure is stopping"
	if !resigning {
		level, why = slog.LevelWarn, "leadership ended"
		if cause := context.Cause(t.Context()); cause != nil {
			why = cause.Error()
		}
	}
	r.log.Log(context.Background(), level, "stopping the command", "pid", c.pid, "reason", why,
		"sigkill_in", max(min(r.f.killGrace, t.Remaining()), 0).Round(time.Millisecond))
	killed := c.stop(sig)
	r.log.Info("command stopped", "pid", c.pid, "status", c.describe(), "sigkill", killed)
	if resigning {
		// tenure is stopping: it exits with the command's code.
		r.mu.Lock()
		r.exitCode = c.exitCode()
		r.mu.Unlock()
	}
}

// childStdin is the command's stdin: tenure's, unless it is a terminal,
// which a command in another process group cannot read without being
// stopped (SIGTTIN).
func childStdin(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		return nil // /dev/null
	}
	return f
}

// configFlagNames rewrites tenure.Config field names in err as the flags
// that set them.
func configFlagNames(err error) error {
	return errors.New(strings.NewReplacer(
		"Config.Key", "--key",
		"Config.Holder", "--holder",
		"Config.TTL", "--ttl",
		"Config.Margin", "--margin",
		"Config.MaxDrift", "--max-drift",
		"Config.RenewInterval", "the renew interval (TTL/3)",
		"Config.RetryPeriod", "the retry period (TTL/10)",
	).Replace(err.Error()))
}

// waitLimit ends a campaign that has not led within d (0: never).
type waitLimit struct {
	d      time.Duration
	onFire func()

	mu       sync.Mutex
	timer    *time.Timer
	leading  bool
	hasFired bool
}

func newWaitLimit(d time.Duration, onFire func()) *waitLimit {
	return &waitLimit{d: d, onFire: onFire}
}

// campaigning starts the clock, unless it is already running.
func (w *waitLimit) campaigning() {
	if w.d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leading = false
	if w.timer != nil || w.hasFired {
		return
	}
	w.timer = time.AfterFunc(w.d, func() {
		w.mu.Lock()
		if w.leading || w.timer == nil {
			w.mu.Unlock()
			return
		}
		w.hasFired = true
		w.timer = nil
		w.mu.Unlock()
		w.onFire()
	})
}

// elected stops the clock.
func (w *waitLimit) elected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leading = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// stop stops the clock for good.
func (w *waitLimit) stop() { w.elected() }

func (w *waitLimit) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hasFired
}

// checkListenAddr checks that addr ("" for none) is a host:port to listen
// on, before anything is dialled; whether it can be bound is found when it
// is.
func checkListenAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q: port %q is neither a number from 0 to 65535 nor a service name", addr, port)
	}
	return nil
}
