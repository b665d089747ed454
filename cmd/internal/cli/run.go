package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/identity"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

type runFlags struct {
	key         string
	ttl         time.Duration
	margin      time.Duration
	maxDrift    float64
	holder      string
	killGrace   time.Duration
	restart     bool
	exitOnLoss  bool
	waitTimeout time.Duration
	json        bool
	http        string
	httpConfig  string
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

COMMAND runs under a guard: a small program embedded in tenure (or tenure
itself, re-executed, in a build without it: docs/build.md), a separate
process named tenure-guard (in ps and top), a child subreaper (orphans of
COMMAND's descendants become its children), that starts COMMAND in a
process group of its own and learns
each new local deadline (the moment the lease might expire at the
coordinator, less a safety margin, on the clock that counts suspended
time). The guard, not tenure, enforces it:
  - just before the last deadline it heard of (50ms, a fortieth of the
    TTL at most), it SIGKILLs every process of COMMAND's tree (every
    descendant, in any process group or session), even if tenure is
    stopped (kill -STOP) and sends nothing more;
  - when renewals stall, SIGTERM comes first, at --kill-grace before that
    SIGKILL, but not before a renewal is overdue (unanswered a retry
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
tenure then campaigns again and starts COMMAND afresh when it leads again,
however long the coordinator stays unreachable: a lost term never ends
tenure, and a COMMAND ended by that SIGTERM is not "COMMAND exiting on its
own". With --exit-on-loss, tenure exits 75 instead, once the command is
stopped.
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
…: see docs/monitoring.md).

Leadership changes and the command's start and end are logged to stderr,
as text, or as JSON lines (one object per line) with --log-format json
(or --json): every leadership change is a record with "msg":"leadership",
"key", "holder", "token" and "reason" (acquired, released, deadline, lost,
fenced).

Exit codes:
  N    COMMAND's exit code (128+S when signal S ended it)
  2    bad flags or arguments (including no COMMAND)
  3    not leader within --wait-timeout
  75   with --exit-on-loss: leadership was lost (EX_TEMPFAIL)
  ` + exitCodesTenure + `
  126  COMMAND could not be started
  127  COMMAND was not found
  128+S  tenure got signal S while no command ran
tenure's own failures never exit 1, so that "tenure run -- false" (1) and
a failed tenure (69, 70, 75, 77, 78) can be told apart by cron or systemd.

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

  # leave restarts to systemd: exit 75 when leadership is lost
  tenure run --key scheduler --exit-on-loss -- ./scheduler

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
	fs.DurationVar(&f.ttl, "ttl", 10*time.Second, "lease TTL: how long after its last renewal a silent leader keeps the key (etcd rounds up to whole seconds; at least 1s)")
	fs.DurationVar(&f.margin, "margin", time.Second, "safety margin: the command is stopped this long before the lease could expire at the coordinator (at least 50ms, less than --ttl)")
	fs.Float64Var(&f.maxDrift, "max-drift", 0.01, "largest clock-rate difference assumed between this machine and the coordinator, as a fraction in [0, 0.5)")
	fs.StringVar(&f.holder, "holder", "", "this process's display `name` (default: the host name, the process id and a random suffix)")
	fs.DurationVar(&f.killGrace, "kill-grace", 2*time.Second, "after SIGTERM, wait this long for the command to exit before SIGKILL (never past the local deadline; 0: SIGKILL alone, at once)")
	fs.BoolVar(&f.restart, "restart", false, "when the command exits, release the key, campaign again and run it again")
	fs.BoolVar(&f.exitOnLoss, "exit-on-loss", false, "when leadership is lost (the lease expired, was taken or fenced), stop the command and exit 75 instead of campaigning again")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 0, "exit with code 3 if not leader within this long of starting to campaign (0: wait forever); applies to every campaign")
	fs.BoolVar(&f.json, "json", false, "log to stderr as JSON lines instead of text")
	fs.StringVar(&f.http, "http", "", `host:port of the live status page (/) and of /status, /health, /leader and /metrics, plain HTTP unless --http-config (warned about beyond loopback); "" serves nothing`)
	registerHTTPConfig(fs, &f.httpConfig)
	f.partitionFlags.register(fs)
	return cmd
}

// runRun is tenure run: for one key, or for a partition group.
func runRun(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	if cmd.Flags().Changed("partitions") || cmd.Flags().Changed("names") {
		return runGroup(cmd, g, f, args)
	}
	return runKey(cmd, g, f, args)
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
	if err := checkHTTPFlags(cmd, f.http, f.httpConfig); err != nil {
		return cfg, "", err
	}
	if err := tenure.ValidateKey(f.key); err != nil {
		return cfg, "", usageError("%s: %w", flagRef(cmd, "key"), err)
	}
	if f.holder == "" {
		f.holder = identity.DefaultHolder()
	} else if err := tenure.ValidateHolder(f.holder); err != nil {
		return cfg, "", usageError("%s: %w", flagRef(cmd, "holder"), err)
	}
	if f.killGrace < 0 {
		return cfg, "", usageError("--kill-grace (%s) must not be negative", f.killGrace)
	}
	if f.waitTimeout < 0 {
		return cfg, "", usageError("--wait-timeout (%s) must not be negative (0 waits forever)", f.waitTimeout)
	}
	if err := checkTiming(cmd, f.ttl, f.margin, f.maxDrift, guard.MinTTL); err != nil {
		return cfg, "", err
	}
	if f.ttl < guard.MinTTL {
		return cfg, "", usageError("%s %s is too short for the guard: it kills the command a fortieth of the TTL before the local deadline (%s here), and a lead under 25ms can land after the deadline on a loaded host; use --ttl %s or more",
			flagRef(cmd, "ttl"), f.ttl, f.ttl/40, guard.MinTTL)
	}
	cfg.Key, cfg.Holder, cfg.TTL = f.key, f.holder, f.ttl
	cfg.Instance = identity.ProcessInstance() // one identity per process: see TENURE_INSTANCE
	cfg.Margin, cfg.MaxDrift = f.margin, f.maxDrift
	if err := cfg.Validate(); err != nil {
		return cfg, "", &exitError{code: ExitUsage, err: configFlagNames(err)}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return cfg, "", startError(args[0], err)
	}
	return cfg, path, nil
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
