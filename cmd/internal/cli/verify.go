package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure/cmd/internal/chaos"
)

type verifyFlags struct {
	duration time.Duration
	ttl      time.Duration
	margin   time.Duration
	maxDrift float64
	nodes    int
	members  int
	seed     uint64
	faults   string
	plant    string
	jsonFile string
	htmlFile string
	parts    int
	// kubeAPIServer is a kube-apiserver binary verify starts for its run.
	kubeAPIServer string
}

// newVerifyCommand builds tenure verify.
func newVerifyCommand(g *globalFlags) *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:     "verify",
		Short:   "Run real nodes under real faults and check that no stale leader gets a write through",
		Long:    verifyLong,
		Example: verifyExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.options(cmd, g)
			if err != nil {
				return err
			}
			return runVerify(cmd, f, o, g)
		},
	}
	f.bind(cmd)
	return cmd
}

// verifyLong is the help text of tenure verify.
var verifyLong = `verify starts --nodes node processes (this binary, re-executed), each a tenure
elector against a real coordinator reached through its own TCP proxy; while
a node leads it writes to a fenced register service as fast as it
reasonably can. Faults strike on a schedule drawn from --seed: partitions,
one-way blackholes, latency, reset connections, SIGSTOP pauses longer than
the TTL, SIGKILL crashes with restarts, slow renewals and writes followed
by a partition (degrade), (with --members 3) the loss of an etcd member,
(with --kube-apiserver) a crash and restart of the API server, and clock
faults: a node's clock runs off its rate by up to --max-drift
and its wall clock jumps forward, then it is cut off until its lease runs
out, and its wall clock jumps back at the heal (clock). Families are drawn in shuffled rounds, the first fitted to
the run: at the default TTL, a run of 35s or more sees every family that
can strike (2.5s more with --kube-apiserver). Every event is stamped with
the machine's monotonic clock.

The coordinator is an embedded etcd (one member, or --members 3) unless
--endpoints names an external etcd cluster (http:// only: the proxies
forward plain TCP), --postgres a PostgreSQL database, or Kubernetes:

  --kubeconfig FILE [--namespace NS]  the Leases of that API server
      (1.35 or newer), in NS or the context's namespace; the nodes read
      FILE and reach the server through their proxies. verify cannot
      restart an API server it did not start: no apiserver faults.
  --kube-apiserver PATH  verify starts that kube-apiserver binary on its
      embedded etcd (--members 1 or 3) and keeps the Leases in its
      namespace "default"; the apiserver family kills it (SIGKILL) and
      starts it again. tools/kube-apiserver/build.sh builds one.

Checkers: stale writes accepted, token order, safe-lease overlap, lease
overrun, linearizability of the register (porcupine; no verdict within the
time limit counts as a violation), and liveness after each fault. The exit
code is 0 when every safety checker reports zero and the run tested
something; 1 on a safety violation; 5 when the run could not be done or
proved nothing: no node was ever elected leader, or the register accepted
fewer than ` + fmt.Sprint(chaos.MinAcceptedWrites) + ` writes (an unreachable coordinator, say).

--plant builds the nodes with a known bug, to watch the checkers catch it.
Without --faults, the run then draws only the fault families that expose
that bug (no-token: pause; reply-deadline and no-margin: degrade;
renew-after-expiry: partition; slow-clock and wall-clock: clock) and aims
every fault at the leader, so that a 20-second run reports the violation.
The clock plants are bugs of the node's clock: slow-clock runs it slower
than any --max-drift allows during a clock fault, wall-clock converts
wall-clock times with a stale offset between the wall and monotonic clocks. docs/verify.md says what each family and
plant checks.

--partitions N makes every node one member of a partition group of N
partitions (what "tenure run --partitions" runs) instead of one elector:
while a node owns a partition it writes to that partition's own fenced
resource with that partition's token. Every checker judges each partition
on its own; the summary adds one line per partition (owned time, terms,
writes, overlaps, violations, longest time from a fault's heal to the
partition's next accepted write), and names any partition not re-owned
after the last fault. The planted bugs apply to the membership that every
partition of a member shares.

What it cannot check: a lease cannot stop a paused process from finishing
a write it had already sent — only the resource's fencing can, and the
stale-write checker shows it did.`

// verifyExample is the example section of tenure verify's help.
const verifyExample = `  tenure verify --duration 60s --json out.json
  tenure verify --duration 2m --html report.html
  tenure verify --members 3 --faults partition,member
  tenure verify --plant reply-deadline --duration 20s
  tenure verify --faults clock --duration 60s
  tenure verify --partitions 16 --duration 30s
  tenure verify --kubeconfig ~/.kube/config --namespace verify --duration 60s
  tenure verify --kube-apiserver tools/kube-apiserver/bin/kube-apiserver --duration 60s`

// bind defines verify's flags on cmd, bound to f.
func (f *verifyFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", 120*time.Second, "length of the run")
	fl.DurationVar(&f.ttl, "ttl", 2*time.Second, "lease TTL (etcd grants whole seconds)")
	fl.DurationVar(&f.margin, "margin", 0, "elector safety margin, at least 50ms (default TTL/10)")
	fl.Float64Var(&f.maxDrift, "max-drift", 0.01, "clock-rate drift the electors assume, in [0, 0.5), and the bound of the clock faults' rates; writes landing after send + TTL·(1−drift)/rate (the rate of the writer's clock; never after send + TTL) are lease overruns")
	fl.IntVar(&f.nodes, "nodes", 3, "number of node processes (2–9)")
	fl.IntVar(&f.members, "members", 1, "embedded etcd members: 1 or 3")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the fault schedule (default: drawn and printed)")
	fl.StringVar(&f.faults, "faults", "all", "fault families, comma-separated: "+strings.Join(chaos.Families(), ",")+", or all (with --plant: the families that expose the bug)")
	fl.StringVar(&f.plant, "plant", "", "plant a known bug in the nodes: "+strings.Join(chaos.Plants(), ", "))
	fl.StringVar(&f.jsonFile, "json", "", "write every figure to this JSON file")
	fl.StringVar(&f.htmlFile, "html", "", "write a self-contained HTML report with a timeline to this file")
	fl.IntVar(&f.parts, "partitions", 0, "run a partition group of this many partitions in every node instead of one elector, and check each partition (0: one key)")
	fl.StringVar(&f.kubeAPIServer, "kube-apiserver", "", "start this kube-apiserver binary on the embedded etcd and verify on its Leases, restarting it as a fault (apiserver)")
}

// options turns the flags into chaos options. Every value given is used
// as given, or refused with the reason; a flag not given takes its
// default: --margin TTL/10 of the --ttl given, --seed one drawn at random.
// With --plant and no --faults, the run draws the fault families that
// expose the planted bug.
func (f *verifyFlags) options(cmd *cobra.Command, g *globalFlags) (chaos.Options, error) {
	var fams []string
	if f.plant == "" || cmd.Flags().Changed("faults") {
		var err error
		if fams, err = chaos.ParseFamilies(f.faults); err != nil {
			return chaos.Options{}, usageError("--faults: %w", err)
		}
	}
	margin := f.effectiveMargin(cmd)
	if err := checkTiming(cmd, f.ttl, margin, f.maxDrift, 0); err != nil {
		return chaos.Options{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return chaos.Options{}, fmt.Errorf("verify: find this binary to run the nodes: %w", err)
	}
	o := chaos.DefaultOptions()
	o.Seed, o.Duration, o.Nodes, o.Members = f.seed, f.duration, f.nodes, f.members
	if !cmd.Flags().Changed("seed") {
		o.Seed = uint64(time.Now().UnixNano()%1_000_000) + 1
	}
	if fl := cmd.Flags().Lookup("endpoints"); fl != nil && fl.Changed {
		o.Endpoints = g.coord.endpoints
	}
	o.Postgres, o.TTL, o.Margin, o.MaxDrift = g.coord.postgres, f.ttl, margin, f.maxDrift
	o.Kubeconfig, o.Namespace, o.KubeAPIServer = g.coord.kubeconfig, g.coord.namespace, f.kubeAPIServer
	o.Families, o.Plant, o.Partitions = fams, f.plant, f.parts
	o.NodeCommand = func(spec string) *exec.Cmd { return exec.Command(exe, "verify-node", "--spec", spec) }
	if err := o.Validate(); err != nil {
		return o, usageError("%w", verifyFlagNames(err))
	}
	return o, nil
}

// effectiveMargin is --margin as given, or TTL/10 of --ttl when it was
// not given.
func (f *verifyFlags) effectiveMargin(cmd *cobra.Command) time.Duration {
	if cmd.Flags().Changed("margin") {
		return f.margin
	}
	return f.ttl / 10
}

// verifyHeader is the line verify prints before it runs: the seed, the
// run's size and timing, and the fault families, each default marked as
// one only when its flag was not given.
func verifyHeader(cmd *cobra.Command, f verifyFlags, o chaos.Options) string {
	fams := o.Families
	if fams == nil {
		fams = chaos.PlantFamilies(o.Plant)
	}
	what := fmt.Sprintf("%d nodes", o.Nodes)
	if o.Partitions > 0 {
		what = fmt.Sprintf("%d nodes sharing %d partitions", o.Nodes, o.Partitions)
	}
	seed := fmt.Sprint(o.Seed)
	if !cmd.Flags().Changed("seed") {
		seed += " (drawn)"
	}
	margin := o.Margin.String()
	if !cmd.Flags().Changed("margin") {
		margin += " (TTL/10, the default)"
	}
	return fmt.Sprintf("verify: seed %s, %s, %s, TTL %s, margin %s, max drift %s, faults %s; coordinator %s%s", seed, o.Duration, what, o.TTL, margin,
		strconv.FormatFloat(o.MaxDrift*100, 'f', -1, 64)+"%", verifyFamilies(fams, o, cmd.Flags().Changed("faults")), verifyCoordinator(o), fromEnv(cmd))
}

// fromEnv says which coordinator flags came from the environment rather
// than the command line, since they change what verify runs against:
// "; from the environment: TENURE_ENDPOINTS (--endpoints)", or "".
func fromEnv(cmd *cobra.Command) string {
	var refs []string
	for _, name := range []string{"endpoints", "postgres", "kubeconfig", "namespace", "kube-apiserver"} {
		if ref := flagRef(cmd, name); ref != "--"+name {
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return ""
	}
	return "; from the environment: " + strings.Join(refs, ", ")
}

// runVerify runs the verification o, writes its reports and returns an
// exit error: ExitError when a safety checker found a violation,
// ExitInconclusive when the run could not be done or proved nothing.
func runVerify(cmd *cobra.Command, f verifyFlags, o chaos.Options, g *globalFlags) error {
	out := cmd.OutOrStdout()
	if o.Kubeconfig != "" && o.Namespace == "" {
		o.Namespace = kubeNamespace(&g.coord) // for the header; checkVerifyKube reports a kubeconfig it cannot read
	}
	fmt.Fprintln(cmd.ErrOrStderr(), verifyHeader(cmd, f, o))
	if o.Kubeconfig != "" {
		if err := checkVerifyKube(cmd.Context(), &g.coord); err != nil {
			if ee := (*exitError)(nil); errors.As(err, &ee) {
				return err
			}
			return &exitError{code: ExitInconclusive, err: fmt.Errorf("verify: could not run: %w", err)}
		}
	}
	if isTerminal(out) {
		o.Progress = out
	}
	h, err := chaos.Run(cmd.Context(), o)
	if h == nil {
		return &exitError{code: ExitInconclusive, err: fmt.Errorf("verify: could not run: %w", err)}
	}
	rep := chaos.Analyze(h)
	rep.WriteSummary(out)
	werr := writeVerifyFiles(out, f, rep)
	switch {
	case !rep.OK():
		if werr != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "tenure:", werr)
		}
		return &exitError{code: ExitError, err: fmt.Errorf("verify: %d safety violation(s); replay with --seed %d", rep.Violations, rep.Seed)}
	case werr != nil:
		return &exitError{code: ExitInconclusive, err: werr}
	case err != nil:
		return &exitError{code: ExitInconclusive, err: fmt.Errorf("verify: the run was cut short, so it proved nothing: %w", err)}
	case !rep.Conclusive():
		return &exitError{code: ExitInconclusive, err: fmt.Errorf("verify: inconclusive, the run proved nothing: %s; coordinator: %s", rep.Inconclusive, verifyCoordinator(o))}
	}
	return nil
}

// verifyFamilies lists the fault families of fams that can strike a run
// of o; when the user asked for families, it says why those left out
// cannot strike, and on an API server verify did not start, it always
// says that the apiserver family cannot.
func verifyFamilies(fams []string, o chaos.Options, asked bool) string {
	apiserver := o.KubeAPIServer != ""
	striking := chaos.StrikingFamilies(fams, max(o.Members, 1), apiserver)
	s := strings.Join(striking, ",")
	if len(striking) == 0 {
		s = "none"
	}
	var why []string
	if asked && slices.Contains(fams, chaos.FamilyMember) && !slices.Contains(striking, chaos.FamilyMember) {
		why = append(why, "member faults need --members 3")
	}
	switch {
	case o.Kubeconfig != "":
		why = append(why, "no apiserver faults: verify restarts only an API server it started, with --kube-apiserver")
	case asked && slices.Contains(fams, chaos.FamilyAPIServer) && !apiserver:
		why = append(why, "apiserver faults need --kube-apiserver")
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// verifyCoordinator names the coordinator of o for a message.
func verifyCoordinator(o chaos.Options) string {
	switch {
	case o.Postgres != "":
		return "PostgreSQL at --postgres"
	case len(o.Endpoints) > 0:
		return "etcd at " + strings.Join(o.Endpoints, ",")
	case o.Kubeconfig != "":
		ns := "the context's namespace"
		if o.Namespace != "" {
			ns = "namespace " + o.Namespace
		}
		return fmt.Sprintf("Kubernetes API server of --kubeconfig %s, %s", o.Kubeconfig, ns)
	case o.KubeAPIServer != "":
		return fmt.Sprintf("%s started by verify on embedded etcd (%d member(s)), namespace default", o.KubeAPIServer, max(o.Members, 1))
	}
	return "embedded etcd"
}

// writeVerifyFiles writes the --json and --html reports asked for and
// prints on out where it wrote them.
func writeVerifyFiles(out io.Writer, f verifyFlags, rep *chaos.Report) error {
	if f.jsonFile != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(f.jsonFile, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("verify: --json: %w", err)
		}
		fmt.Fprintf(out, "JSON report: %s\n", absPath(f.jsonFile))
	}
	if f.htmlFile != "" {
		if err := rep.WriteHTMLFile(f.htmlFile); err != nil {
			return fmt.Errorf("verify: --html: %w", err)
		}
		fmt.Fprintf(out, "HTML report: %s\n", absPath(f.htmlFile))
	}
	return nil
}

// absPath returns name made absolute, or name when it cannot be.
func absPath(name string) string {
	if a, err := filepath.Abs(name); err == nil {
		return a
	}
	return name
}

// newVerifyNodeCommand is the hidden node process of verify.
func newVerifyNodeCommand() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:    "verify-node",
		Short:  "One node of tenure verify (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := chaos.ParseNodeSpec(spec)
			if err != nil {
				return usageError("--spec: %w", err)
			}
			return chaos.RunNode(cmd.Context(), s, os.Stdin, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", "node spec, JSON")
	return cmd
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// verifyFlagNames names verify's flags in an error about chaos.Options or
// the nodes' tenure.Config, whose fields the library names.
func verifyFlagNames(err error) error {
	return configFlagNames(errors.New(strings.NewReplacer(
		"Options.Nodes", "--nodes",
		"Options.Members", "--members",
		"Options.Endpoints", "--endpoints",
		"Options.Postgres", "--postgres",
		"Options.Kubeconfig", "--kubeconfig",
		"Options.Namespace", "--namespace",
		"Options.KubeAPIServer", "--kube-apiserver",
		"Options.Duration", "--duration",
		"Options.Partitions", "--partitions",
	).Replace(err.Error())))
}
