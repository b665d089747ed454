package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

type statusFlags struct {
	key      string
	prefix   string
	json     bool
	exitCode bool
	group    statusGroupFlags

	// coordinator names the coordinator asked, for the output.
	coordinator string
}

func newStatusCommand(g *globalFlags) *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status (--key KEY | --prefix PREFIX) [--json] [--exit-code]",
		Short: "Show who leads a key, or every key under a prefix",
		Long: `status asks the coordinator who leads --key, or every key that starts with
--prefix (--prefix "" lists every key), and prints, for each key led, the
holder, the fencing token of its term and the time left on its lease as
the coordinator counts it (etcd counts whole seconds). Keys nobody leads
are not listed under --prefix; --key prints "no leader" for them.

With --json it prints one JSON object per line, one per key:

  {"key":"jobs","held":true,"holder":"web-1","instance":"3f9c2a1b","token":42,"ttl_left_ms":8000,"coordinator":"etcd at http://127.0.0.1:2379"}
  {"key":"jobs","held":false,"coordinator":"etcd at http://127.0.0.1:2379"}

Text output starts with the coordinator asked ("coordinator: etcd at
http://127.0.0.1:2379"); stderr says what chose it.

"holder" is the display name (--holder of tenure run) and "instance" the
process's instance id: the coordinator sees the holder as holder#instance.

A key held by a record tenure did not write as it stands (an etcd key
without a lease, a PostgreSQL row without holder_id, a Lease held for
longer than a day...) is shown too, as a "foreign" or "malformed" record
with the reason (in --json, "record" and "reason"; no "ttl_left_ms" when it
never expires): tenure run waits for it, possibly for ever, and
"tenure release --force --key KEY" removes it.

A partition group's membership record that no member wrote as it stands
(an etcd membership key without a lease, a Lease held for longer than a
day...) is no member and holds no key: it is listed after the keys, never
as the group key's holder, naming the member (in --json, a line with
"member" and "held":false), and "tenure release --key GROUP --member ID
--force" removes it.

It exits 0 whether or not the key is held; with --exit-code it exits 4
when nobody leads --key (or no key under --prefix is led), for scripts:

  tenure status --key jobs --exit-code >/dev/null || echo "nobody runs jobs"` + statusPartitionsDoc,
		Example: `  tenure status --key jobs
  tenure status --prefix orders/ --json
  tenure status --postgres "$DSN" --prefix ""`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, g) },
	}
	cmd.Flags().StringVar(&f.key, "key", "", "the key to show")
	cmd.Flags().StringVar(&f.prefix, "prefix", "", `show every key led that starts with this ("" for all)`)
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON lines instead of a table")
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 4 when nobody leads (no key under --prefix is led)")
	f.group.register(cmd.Flags())
	return cmd
}

// run prints who leads --key, or every key under --prefix.
func (f *statusFlags) run(cmd *cobra.Command, g *globalFlags) error {
	byKey, err := keyOrPrefix(cmd, f.key, f.prefix)
	if err != nil {
		return err
	}
	// Bad --partitions or --names are reported before connecting:
	// an unreachable coordinator must not hide them.
	if _, err := f.group.groupNames(cmd); err != nil {
		return err
	}
	c, _, err := g.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	f.coordinator = g.coord.chosen
	if !f.json {
		fmt.Fprintf(cmd.OutOrStdout(), "coordinator: %s\n", f.coordinator)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), g.coord.dialTimeout)
	defer cancel()
	if byKey {
		return f.keyStatus(ctx, cmd, c)
	}
	return f.prefixStatus(ctx, cmd, c)
}

// keyStatus prints who leads --key, or the table of the group it names.
func (f *statusFlags) keyStatus(ctx context.Context, cmd *cobra.Command, c partition.Coordinator) error {
	if grouped, err := f.groupStatus(ctx, cmd, c); grouped {
		return err
	}
	g, ok, err := leaderOf(ctx, c, f.key)
	if err != nil {
		return err
	}
	st := KeyStatus{Key: f.key, Held: ok, Coordinator: f.coordinator, grant: g}
	rs, err := foreignUnder(ctx, c, f.key)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Key == f.key && r.Member == "" {
			st, ok = foreignStatus(r, f.coordinator), true
		}
	}
	all := []KeyStatus{st}
	for _, r := range foreignMembersOf(rs, f.key) {
		all = append(all, foreignStatus(r, f.coordinator))
	}
	if err := printStatus(cmd.OutOrStdout(), f.json, all, ""); err != nil {
		return err
	}
	if !ok {
		f.suggestKeys(ctx, cmd, c)
	}
	return f.noLeader(ok)
}

// suggestKeys tells, on stderr, which keys that start with --key are led
// (at most three), when --key itself is not: "job" for "jobs".
func (f *statusFlags) suggestKeys(ctx context.Context, cmd *cobra.Command, c tenure.Coordinator) {
	gs, err := c.List(ctx, f.key)
	if err != nil {
		return
	}
	var keys []string
	for _, g := range gs {
		if g.Key != f.key && len(keys) < 3 {
			keys = append(keys, g.Key)
		}
	}
	if len(keys) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "tenure: %s is not led; led keys that start with it: %s\n", f.key, strings.Join(keys, ", "))
	}
}

// prefixStatus prints every key led under --prefix, and the tables of the
// groups there.
func (f *statusFlags) prefixStatus(ctx context.Context, cmd *cobra.Command, c partition.Coordinator) error {
	if printed, found, err := f.prefixGroups(ctx, cmd, c); printed {
		if err != nil {
			return err
		}
		return f.noLeader(found)
	}
	gs, err := c.List(ctx, f.prefix)
	if err != nil {
		return err
	}
	rs, err := foreignUnder(ctx, c, f.prefix)
	if err != nil {
		return err
	}
	st := withForeign(gs, rs, f.coordinator)
	if err := printStatus(cmd.OutOrStdout(), f.json, st, f.prefix); err != nil {
		return err
	}
	return f.noLeader(slices.ContainsFunc(st, func(s KeyStatus) bool { return s.Held }))
}

// noLeader is the exit error of --exit-code when nobody leads.
func (f *statusFlags) noLeader(led bool) error {
	if f.exitCode && !led {
		return &exitError{code: ExitNoLeader}
	}
	return nil
}

// leaderOf returns the live grant on key with the time left on its lease
// when the coordinator can say (a tenure.Coordinator), else as Leader reports it.
func leaderOf(ctx context.Context, c tenure.Coordinator, key string) (tenure.Grant, bool, error) {
	gs, err := c.List(ctx, key)
	if err != nil {
		return tenure.Grant{}, false, err
	}
	for _, g := range gs {
		if g.Key == key {
			return g, true, nil
		}
	}
	return tenure.Grant{}, false, nil
}

// KeyStatus is one line of status output (tenure status --json).
type KeyStatus struct {
	Key       string `json:"key"`
	Held      bool   `json:"held"`
	Holder    string `json:"holder,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	TTLLeftMS *int64 `json:"ttl_left_ms,omitempty"`
	// Coordinator names the coordinator asked: "etcd at URL".
	Coordinator string `json:"coordinator,omitempty"`
	// Record is "foreign" or "malformed" when the key is held by a record
	// tenure did not write (see tenure.ForeignRecord), and Reason says why.
	Record string `json:"record,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Member is set on a line that is no key's status but a membership
	// record of group Key that no member wrote (a "foreign" or "malformed"
	// record, see tenure.ForeignRecord): it names the member, and the line
	// is not "held", for the record holds no key.
	Member string `json:"member,omitempty"`

	grant   tenure.Grant
	foreign *tenure.ForeignRecord
}

// printStatus prints st: key statuses, then membership records (as
// withForeign orders them).
func printStatus(w io.Writer, asJSON bool, st []KeyStatus, prefix string) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, s := range st {
			if s.Held || s.Member != "" {
				if s.Member == "" {
					s.Holder, s.Instance = display.SplitIdentity(s.grant.Holder)
				}
				s.Token = s.grant.Token
				if ms := s.grant.TTL.Milliseconds(); s.grant.TTL >= 0 {
					s.TTLLeftMS = &ms
				}
			}
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	keys := slices.DeleteFunc(slices.Clone(st), func(s KeyStatus) bool { return s.Member != "" })
	if err := printKeys(w, keys, prefix); err != nil {
		return err
	}
	for _, s := range st {
		if s.Member != "" {
			if _, err := fmt.Fprintf(w, "%s: %s\n", s.Key, foreignAdvice(*s.foreign)); err != nil {
				return err
			}
		}
	}
	return nil
}

// printKeys prints the key statuses st as text.
func printKeys(w io.Writer, st []KeyStatus, prefix string) error {
	if len(st) == 1 && !st[0].Held {
		_, err := fmt.Fprintf(w, "%s: no leader\n", st[0].Key)
		return err
	}
	if len(st) == 0 {
		_, err := fmt.Fprintf(w, "no key under prefix %q is led\n", prefix)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tHOLDER\tINSTANCE\tTOKEN\tTTL LEFT")
	var notes []string
	for _, s := range st {
		name, instance := display.SplitIdentity(s.grant.Holder)
		left := roundTTL(s.grant.TTL).String()
		if s.foreign != nil {
			notes = append(notes, fmt.Sprintf("%s: %s", s.Key, foreignAdvice(*s.foreign)))
			name = strconv.Quote(name)
			if s.grant.TTL < 0 {
				left = "never ends"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Key, name, instance, s.grant.Token, left)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// roundTTL shortens a TTL for display: 7.25s, 850ms.
func roundTTL(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// keyOrPrefix checks that cmd got exactly one of --key and --prefix, and
// a valid one, and reports which.
func keyOrPrefix(cmd *cobra.Command, key, prefix string) (byKey bool, err error) {
	byKey, byPrefix := cmd.Flags().Changed("key"), cmd.Flags().Changed("prefix")
	switch {
	case byKey == byPrefix:
		return false, usageError("give exactly one of --key and --prefix (see '%s --help')", cmd.CommandPath())
	case byKey:
		if err := tenure.ValidateKey(key); err != nil {
			return false, usageError("%s: %w", flagRef(cmd, "key"), err)
		}
	default:
		if err := inputs.Prefix(prefix); err != nil {
			return false, usageError("%s: %w", flagRef(cmd, "prefix"), err)
		}
	}
	return byKey, nil
}
