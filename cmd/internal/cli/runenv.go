package cli

import (
	"strconv"
	"strings"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure"
)

// commandVars are the variables tenure run gives its command (the guard
// adds TENURE_LEASE_FILE). Inside a command (TENURE_LEASE_FILE set) they
// describe the parent's term and are not flag twins.
var commandVars = []string{
	"TENURE_KEY", "TENURE_HOLDER", "TENURE_INSTANCE", "TENURE_FENCING_TOKEN",
	"TENURE_LEASE_TTL", "TENURE_LEASE_FILE", "TENURE_PARTITION", "TENURE_PARTITION_NAME",
}

// insideCommand reports whether getenv is the environment of a command
// that tenure run started.
func insideCommand(getenv func(string) string) bool {
	return getenv("TENURE_LEASE_FILE") != ""
}

// isCommandVar reports whether name is one of commandVars.
func isCommandVar(name string) bool {
	for _, v := range commandVars {
		if v == name {
			return true
		}
	}
	return false
}

// commandEnv is environ without the environment twin of any flag of any
// tenure command (TENURE_PASSWORD, TENURE_POSTGRES, TENURE_ENDPOINTS,
// TENURE_TLS_KEY, …) and without commandVars, which the term sets afresh.
func commandEnv(root *cobra.Command, environ []string) []string {
	drop := map[string]bool{}
	for _, v := range commandVars {
		drop[v] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) { drop[envName(f.Name)] = true }
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return env
}

// termEnv is what the command learns of term t (the guard adds
// TENURE_LEASE_FILE).
func termEnv(t *tenure.Term) []string {
	name, instance := display.SplitIdentity(t.Grant().Holder)
	return []string{
		"TENURE_KEY=" + t.Grant().Key,
		"TENURE_HOLDER=" + name,
		"TENURE_INSTANCE=" + instance,
		"TENURE_FENCING_TOKEN=" + strconv.FormatUint(t.Token(), 10),
		"TENURE_LEASE_TTL=" + t.Grant().TTL.String(),
	}
}
