package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
)

type releaseFlags struct {
	key    string
	member string
	token  uint64
	force  bool
	json   bool
}

// errReleaseRefused is a release that was not done: no --token or
// --force, or a --token that is not the live grant's.
var errReleaseRefused = errors.New("release refused")

// releaseLong is tenure release's help.
const releaseLong = `release ends the live grant on --key at the coordinator, for a key whose
holder is stuck or gone and whose lease you do not want to wait out.

It refuses unless you name the grant: --token N must be the fencing token
of the live grant (see "tenure status --key KEY"), or --force releases
whatever grant is live. Without either, it prints the live grant and the
command that would release it. It prints who was released (holder,
instance and token) and logs it.

Releasing the grant of a holder that is still running lets another holder
take over at once, while the released holder learns that it lost the key
only at its next renewal (up to a third of the TTL later) and only then
stops its command: until then both may act, and only fencing tokens keep
your resources safe. A holder that still runs then campaigns again, and
may take the key straight back: release warns about it. Stop the holder
instead when you can.

A key nobody leads is not an error: nothing is released.

A key held by a record tenure did not write as it stands (a "foreign" or
"malformed" record in tenure status: an etcd key without a lease, say) is
released the same way: --force (or --token with the record's token)
removes it if it is still as it was read, and the output adds "record" and
"reason".

A membership record of a partition group that no member wrote as it
stands (tenure status --key GROUP lists it as a "foreign" or "malformed"
membership record of a member ID: an etcd membership key without a lease,
say) is no member and holds no key; --member ID removes the records of
that member ID in group --key, with --force (or --token with the record's
token), and the output adds "member". --member never ends a live member:
leave the group by stopping it.

With --json it prints one object:

  {"key":"jobs","released":true,"holder":"web-1","instance":"3f9c2a1b","token":42,"ttl_left_ms":8000}
  {"key":"jobs","released":false}`

func newReleaseCommand(g *globalFlags) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release --key KEY [--member ID] (--token N | --force) [--json]",
		Short: "End the live grant on a key now, so that another holder can take over",
		Long:  releaseLong,
		Example: `  tenure status --key jobs
  tenure release --key jobs --token 42
  tenure release --key jobs --force --json
  tenure release --key jobs --member 'mallory#00000000' --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRelease(cmd, g, &f)
		},
	}
	cmd.Flags().StringVar(&f.key, "key", "", "the key to release (required)")
	cmd.Flags().Uint64Var(&f.token, "token", 0, "release only if this is the live grant's fencing token")
	cmd.Flags().BoolVar(&f.force, "force", false, "release whatever grant is live")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object")
	cmd.Flags().StringVar(&f.member, "member", "", "remove group --key's membership records of this member ID that no member wrote, not a grant")
	return exitCodes(cmd, `  0    released, or nobody led the key
  1    refused (no --token or --force, or --token is not the live grant's)
  2    bad flags or arguments
  `+exitCodesTenure)
}

// ReleaseResult is the --json output of tenure release.
type ReleaseResult struct {
	Key       string `json:"key"`
	Released  bool   `json:"released"`
	Holder    string `json:"holder,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	TTLLeftMS *int64 `json:"ttl_left_ms,omitempty"`
	// Record and Reason are as in status: the key was held by a record
	// tenure did not write.
	Record string `json:"record,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Member is set when the record removed was a membership record of
	// group Key that no member wrote (release --member).
	Member string `json:"member,omitempty"`
}

// checkReleaseFlags checks release's flags before it connects.
func checkReleaseFlags(cmd *cobra.Command, f *releaseFlags) error {
	if f.key == "" {
		return usageError("--key is required (see 'tenure release --help')")
	}
	if err := tenure.ValidateKey(f.key); err != nil {
		return usageError("%s: %w", flagRef(cmd, "key"), err)
	}
	tokenSet := cmd.Flags().Changed("token")
	if tokenSet && f.token == 0 {
		return usageError("%s 0: fencing tokens start at 1", flagRef(cmd, "token"))
	}
	if tokenSet && f.force {
		return usageError("give one of --token and --force, not both")
	}
	if cmd.Flags().Changed("member") && f.member == "" {
		return usageError("%s: give the member ID that tenure status names", flagRef(cmd, "member"))
	}
	return nil
}

func runRelease(cmd *cobra.Command, g *globalFlags, f *releaseFlags) error {
	if err := checkReleaseFlags(cmd, f); err != nil {
		return err
	}
	tokenSet := cmd.Flags().Changed("token")
	c, log, err := g.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), g.coord.dialTimeout)
	defer cancel()
	if cmd.Flags().Changed("member") {
		return releaseMember(ctx, cmd, c, log, f, tokenSet)
	}
	if r, foreign, err := foreignOf(ctx, c, f.key); err != nil || foreign {
		if err != nil {
			return err
		}
		return releaseForeign(ctx, cmd, c.(foreignLister), log, f, tokenSet, r)
	}
	live, held, err := leaderOf(ctx, c, f.key)
	if err != nil {
		return err
	}
	res := ReleaseResult{Key: f.key}
	if held {
		res.Holder, res.Instance = display.SplitIdentity(live.Holder)
		res.Token = live.Token
		if err := refuseRelease(f, tokenSet, live, res); err != nil {
			return err
		}
		if err := c.Release(ctx, live); err != nil {
			return fmt.Errorf("release %s: %w", res.describe(), err)
		}
		res.Released = true
		ms := live.TTL.Milliseconds()
		res.TTLLeftMS = &ms
		// One warning, on stderr; the result goes to stdout once.
		log.Warn("released a live lease: if its holder still runs, it finds out at its next renewal (within a third of the TTL), stops its command and campaigns again, and may take the key back; stop the holder to move leadership for good",
			"key", f.key, "holder", res.Holder, "instance", res.Instance, "token", res.Token, "forced", f.force)
	}
	out := cmd.OutOrStdout()
	if f.json {
		return json.NewEncoder(out).Encode(res)
	}
	if !held {
		hintMembers(ctx, cmd, c, f.key)
		_, err = fmt.Fprintf(out, "%s: no leader, nothing released\n", f.key)
		return err
	}
	_, err = fmt.Fprintf(out, "released %s\n", res.describe())
	return err
}

// hintMembers says, on stderr, how to remove group key's membership
// records that no member wrote, when it has some: release without
// --member leaves them.
func hintMembers(ctx context.Context, cmd *cobra.Command, c tenure.Coordinator, key string) {
	if rs, err := foreignUnder(ctx, c, key); err == nil && len(foreignMembersOf(rs, key)) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "tenure: group %s has membership records that no member wrote: tenure status --key %s names them, and tenure release --key %s --member ID --force removes them\n",
			key, key, key)
	}
}

// refuseRelease returns why the live grant must not be released with the
// flags f, or nil.
func refuseRelease(f *releaseFlags, tokenSet bool, live tenure.Grant, res ReleaseResult) error {
	switch {
	case f.force:
		return nil
	case !tokenSet:
		return &exitError{code: ExitError, err: fmt.Errorf("%w: %s; to release it, run: tenure release --key %s --token %d (or --force)",
			errReleaseRefused, res.describe(), f.key, live.Token)}
	case f.token != live.Token:
		return &exitError{code: ExitError, err: fmt.Errorf("%w: --token %d is not the live grant: %s; nothing released",
			errReleaseRefused, f.token, res.describe())}
	}
	return nil
}

// describe says which grant: "jobs held by web-1 (instance 3f9c2a1b) with
// token 42".
func (r ReleaseResult) describe() string {
	return fmt.Sprintf("%s held by %s with token %d", r.Key, holderText(r.Holder, r.Instance), r.Token)
}

// holderText shows a holder for people: "web-1 (instance 3f9c2a1b)".
func holderText(name, instance string) string {
	if instance == "" {
		return name
	}
	return fmt.Sprintf("%s (instance %s)", name, instance)
}

// releaseForeign removes r, the foreign record that holds --key, with
// --force or a --token that is r's, compared on the record as it was read.
func releaseForeign(ctx context.Context, cmd *cobra.Command, c foreignLister, log *slog.Logger, f *releaseFlags, tokenSet bool, r tenure.ForeignRecord) error {
	res := ReleaseResult{Key: f.key, Token: r.Token, Record: recordKind(r), Reason: r.Reason, Member: r.Member}
	what, again := fmt.Sprintf("%s, a %s record (%s)", res.describe(), res.Record, r.Reason), ""
	if r.Member != "" {
		what = fmt.Sprintf("the %s membership record of member %q in group %s with token %d (%s)", res.Record, r.Member, f.key, r.Token, r.Reason)
		again = " --member=" + shellQuote(r.Member)
	} else {
		res.Holder, res.Instance = display.SplitIdentity(r.Holder)
	}
	switch {
	case !f.force && !tokenSet:
		return &exitError{code: ExitError, err: fmt.Errorf("%w: %s; tenure did not write it and it may never expire: to remove it, run: tenure release --key %s%s --force",
			errReleaseRefused, what, f.key, again)}
	case tokenSet && f.token != r.Token:
		return &exitError{code: ExitError, err: fmt.Errorf("%w: --token %d is not the record's: %s; nothing released", errReleaseRefused, f.token, what)}
	}
	removed, err := c.RemoveForeign(ctx, r)
	if err != nil {
		return fmt.Errorf("release %s: %w", what, err)
	}
	if !removed {
		return &exitError{code: ExitError, err: fmt.Errorf("%w: %s changed while it was being removed; nothing released: look again with tenure status --key %s", errReleaseRefused, what, f.key)}
	}
	res.Released = true
	if r.TTL >= 0 {
		ms := r.TTL.Milliseconds()
		res.TTLLeftMS = &ms
	}
	log.Warn("removed a record tenure did not write", "key", f.key, "member", r.Member, "holder", r.Holder, "token", r.Token, "record", res.Record, "reason", r.Reason)
	if f.json {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "released %s\n", what)
	return err
}

// releaseMember removes the membership records of member --member in
// group --key that no member wrote (see tenure.ForeignRecord.Member): with
// --force every one, with --token the one of that token.
func releaseMember(ctx context.Context, cmd *cobra.Command, c tenure.Coordinator, log *slog.Logger, f *releaseFlags, tokenSet bool) error {
	rs, err := foreignUnder(ctx, c, f.key)
	if err != nil {
		return err
	}
	var mine []tenure.ForeignRecord
	for _, r := range foreignMembersOf(rs, f.key) {
		if r.Member == f.member {
			mine = append(mine, r)
		}
	}
	if i := slices.IndexFunc(mine, func(r tenure.ForeignRecord) bool { return r.Token == f.token }); tokenSet && i >= 0 {
		mine = mine[i : i+1]
	}
	if !f.force && len(mine) > 1 {
		mine = mine[:1] // refused, or the one of --token: one at a time
	}
	if len(mine) == 0 {
		if f.json {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(ReleaseResult{Key: f.key, Member: f.member})
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s: no membership record of member %q that no member wrote, nothing released\n", f.key, f.member)
		return err
	}
	for _, r := range mine {
		if err := releaseForeign(ctx, cmd, c.(foreignLister), log, f, tokenSet, r); err != nil {
			return err
		}
	}
	return nil
}
