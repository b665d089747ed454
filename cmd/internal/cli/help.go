package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// coordinatorFlagNames are the flags registered by coordinatorFlags: they
// say how to reach a coordinator, and only some commands reach one.
var coordinatorFlagNames = []string{"endpoints", "dial-timeout", "user", "password", "tls-ca", "tls-cert", "tls-key", "postgres", "kubeconfig", "namespace"}

// Command annotations read by the help and the flag checks.
const (
	// usesAnnotation lists, comma-separated, the coordinator flags a
	// command uses. A command without it uses them all.
	usesAnnotation = "tenure-uses"
	// exitCodesAnnotation is the "Exit codes:" section of a command's help,
	// for commands whose Long text does not already have one.
	exitCodesAnnotation = "tenure-exit-codes"
)

// uses declares on cmd the coordinator flags it uses (none when names is
// empty): the others are hidden from its help and rejected when given.
func uses(cmd *cobra.Command, names ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[usesAnnotation] = strings.Join(names, ",")
	return cmd
}

// exitCodes sets the "Exit codes:" section of cmd's help.
func exitCodes(cmd *cobra.Command, text string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[exitCodesAnnotation] = text
	return cmd
}

// usesFlag reports whether cmd uses flag name: every flag but the
// coordinator flags it did not declare (see uses).
func usesFlag(cmd *cobra.Command, name string) bool {
	if !slices.Contains(coordinatorFlagNames, name) {
		return true
	}
	list, ok := cmd.Annotations[usesAnnotation]
	if !ok {
		return true
	}
	return slices.Contains(strings.Split(list, ","), name)
}

// checkFlagScope rejects a coordinator flag given on the command line to
// a command that does not use it, naming the flag, the command and the
// commands that do use it. Environment twins are not checked: one
// environment often serves several commands.
func checkFlagScope(cmd *cobra.Command) error {
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !usesFlag(cmd, f.Name) {
			bad = append(bad, f.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	var users []string
	for _, c := range cmd.Root().Commands() {
		builtin := c.Name() == "help" || c.Name() == "completion"
		if !c.Hidden && !builtin && c.IsAvailableCommand() && usesFlag(c, bad[0]) {
			users = append(users, c.Name())
		}
	}
	flags := "--" + strings.Join(bad, ", --")
	return usageError("%s does not use %s (only %s do): remove it (see '%s --help')",
		cmd.CommandPath(), flags, strings.Join(users, ", "), cmd.CommandPath())
}

// helpWithSections wraps the default help: it hides the coordinator flags
// the command does not use, and appends the command's environment
// variables (the twin of each flag it shows) and its exit codes.
func helpWithSections(def func(*cobra.Command, []string)) func(*cobra.Command, []string) {
	return func(cmd *cobra.Command, args []string) {
		var hidden []*pflag.Flag
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !usesFlag(cmd, f.Name) {
				f.Hidden = true
				hidden = append(hidden, f)
			}
		})
		defer func() {
			for _, f := range hidden {
				f.Hidden = false
			}
		}()
		w := cmd.OutOrStdout()
		var buf bytes.Buffer
		cmd.SetOut(&buf)
		def(cmd, args)
		cmd.SetOut(w)
		// pflag writes every boolean flag as --json[=true|false]: the
		// flag alone is what users type.
		io.WriteString(w, strings.ReplaceAll(buf.String(), "[=true|false]", strings.Repeat(" ", len("[=true|false]"))))
		writeEnvSection(w, cmd)
		if text := cmd.Annotations[exitCodesAnnotation]; text != "" && !strings.Contains(cmd.Long, "Exit codes:") {
			fmt.Fprintf(w, "\nExit codes:\n%s\n", strings.TrimRight(text, "\n"))
		}
	}
}

// writeEnvSection lists the environment twin of every flag cmd shows.
func writeEnvSection(w io.Writer, cmd *cobra.Command) {
	if !cmd.Runnable() {
		return
	}
	var rows []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Name == "version" || !usesFlag(cmd, f.Name) {
			return
		}
		rows = append(rows, fmt.Sprintf("  %s\t--%s", envName(f.Name), f.Name))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nEnvironment (each variable sets its flag; a flag on the command line wins):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
}

// Exit code sections shared by several commands.
const (
	exitCodesPlain = `  0    success
  2    bad flags or arguments
  ` + exitCodesTenure
)

// Exit code sections of the commands that have no "Exit codes:" in their
// Long text.
const (
	exitCodesServer = `  0    stopped by SIGINT or SIGTERM
  2    bad flags or arguments
  69   a port to listen on is in use (EX_UNAVAILABLE: try again later)
  70   the member failed, or could not start (data dir in use, …)`
	exitCodesStatus = `  0    success (with --exit-code: the key, or a key under --prefix, is led)
  2    bad flags or arguments
  4    with --exit-code: nobody leads the key (no key under --prefix is led)
  ` + exitCodesTenure
	exitCodesDemo = `  0    the story ran as described
  1    it did not
  2    bad flags or arguments
  70   the coordinator could not start (EX_SOFTWARE)`
	// exitCodesVerify is shown unless verify's own help lists its codes.
	exitCodesVerify = `  0    no safety violation found in a run that tested something
  1    a safety violation
  2    bad flags or arguments
  5    inconclusive: the run could not be done, or proved nothing (no leader
       was ever elected, or too few writes were accepted)`
	exitCodesBench = `  0    success
  1    a safety failure (two leaders at once, a token that did not increase)
  2    bad flags or arguments
  ` + exitCodesTenure
	exitCodesVersion = `  0    success
  2    bad flags or arguments`
)

// usesNoneDeep declares that cmd and its subcommands use no coordinator
// flag.
func usesNoneDeep(cmd *cobra.Command) *cobra.Command {
	uses(cmd)
	for _, c := range cmd.Commands() {
		usesNoneDeep(c)
	}
	return cmd
}

// errorMessage is err's text without the "tenure: " prefixes of the
// library's errors: Main prints one.
func errorMessage(err error) string {
	msg := err.Error()
	for {
		rest, ok := strings.CutPrefix(msg, "tenure: ")
		if !ok {
			break
		}
		msg = rest
	}
	return strings.ReplaceAll(msg, ": tenure: ", ": ")
}
