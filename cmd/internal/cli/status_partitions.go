package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// statusPartitionsDoc is the part of tenure status's help about groups.
const statusPartitionsDoc = `

For a partition group (tenure run --partitions), --partitions P (and
--names, as given to tenure run) prints the partition table: each
partition's holder, instance, fencing token and lease left ("-" when
unowned), then the members, how many partitions each owns and the
partition count each announced, and the balance. A --partitions that no
live member announced is refused, naming the count they announce. Without
--partitions, a --key that nobody leads but that names a group with live
members prints the table of every partition of the count its members
announce, owned or not. With --json it prints one object:

  {"key":"jobs","partitions":[{"partition":0,"name":"0","key":"jobs/0",
    "held":true,"holder":"web-1","instance":"3f9c2a1b","token":42,
    "ttl_left_ms":8000}],"members":[{"holder":"web-1",
    "instance":"3f9c2a1b","owned":1,"ttl_ms":10000,"partitions":1}],
    "cap":1,"unowned":0,"imbalance":1}

A member's ttl_ms is the TTL its lease was granted; its partitions, the
count it announced (absent for an older tenure). When the partitions' names are not known (a group run with
--names, read without them, or members that announce no count) the table
lists the partitions owned now ("partition" is -1 for a name that is no
partition number) and "notes" says what is missing; "notes" also warns
when members disagree on the partition count. A partition whose key is
held by a record no member wrote (a "foreign" or "malformed" record, as
tenure status names one for a key) shows its holder and token with
"record" and "reason", and a note names the command that frees it:
tenure release --force --key KEY. No member takes it over.

With --prefix instead of --key, --partitions P (or --names) prints the
table of every group under the prefix with live members, each read as a
group of those partitions: one table after a "GROUP KEY" line per group,
or with --json one object as above per line. Groups are found from the
partition keys the coordinator lists under the prefix (etcd; PostgreSQL
keeps partitions apart from keys, so use --key there). --exit-code exits
4 when no group is found.`

// statusGroupFlags are tenure status's flags for partition groups.
type statusGroupFlags struct {
	partitions int
	names      []string
}

func (f *statusGroupFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.partitions, "partitions", 0, "show --key as a partition group of this many partitions")
	fs.StringSliceVar(&f.names, "names", nil, "the group's partition names, comma-separated, as given to tenure run --names")
}

// PartitionStatus is tenure status --json for a group.
type PartitionStatus struct {
	Key        string            `json:"key"`
	Partitions []partitionRowOut `json:"partitions"`
	Members    []memberRowOut    `json:"members"`
	Cap        int               `json:"cap"`
	Unowned    int               `json:"unowned"`
	Imbalance  float64           `json:"imbalance"`
	Notes      []string          `json:"notes,omitempty"`
	// ForeignMembers are the membership records of the group that no
	// member wrote as they stand (see tenure.ForeignRecord.Member): they
	// are no members, and nothing is assigned to them.
	ForeignMembers []foreignMemberOut `json:"foreign_members,omitempty"`
	// Coordinator names the coordinator asked: "etcd at URL".
	Coordinator string `json:"coordinator,omitempty"`
}

type partitionRowOut struct {
	Partition int    `json:"partition"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	Held      bool   `json:"held"`
	Holder    string `json:"holder,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	TTLLeftMS *int64 `json:"ttl_left_ms,omitempty"`
	// Record is "foreign" or "malformed" when the partition's key is held
	// by a record that no member of the group wrote (see
	// tenure.ForeignRecord), and Reason says why: the members wait for it
	// until it is removed (tenure release --force --key KEY).
	Record string `json:"record,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// foreignMemberOut is a membership record that no member wrote as it
// stands.
type foreignMemberOut struct {
	Member    string `json:"member"`
	Token     uint64 `json:"token"`
	TTLLeftMS *int64 `json:"ttl_left_ms,omitempty"`
	Record    string `json:"record"`
	Reason    string `json:"reason"`
}

type memberRowOut struct {
	Holder     string `json:"holder"`
	Instance   string `json:"instance"`
	Owned      int    `json:"owned"`
	TTLMS      int64  `json:"ttl_ms"`
	Partitions int    `json:"partitions,omitempty"`
}

// groupNames returns the partition names --partitions and --names give, or
// nil when neither was given.
func (f *statusGroupFlags) groupNames(cmd *cobra.Command) ([]string, error) {
	byP, byNames := cmd.Flags().Changed("partitions"), cmd.Flags().Changed("names")
	switch {
	case !byP && !byNames:
		return nil, nil
	case byNames && !byP:
		f.partitions = len(f.names)
	case f.partitions < 1:
		return nil, usageError("%s (%d) must be at least 1", flagRef(cmd, "partitions"), f.partitions)
	case byNames && len(f.names) != f.partitions:
		return nil, usageError("--names gives %d names for --partitions %d: give one name per partition", len(f.names), f.partitions)
	}
	if byNames {
		return f.names, nil
	}
	return partition.Names(f.partitions), nil
}

// readGroupTable reads group key's table when key can name a group and
// has live members, for the partitions they announce; ok is false
// otherwise.
func readGroupTable(ctx context.Context, c partition.Coordinator, key string) (t partition.Table, ok bool, err error) {
	if inputs.Group(key, 1) != nil {
		return t, false, nil
	}
	t, err = partition.ReadGroupTable(ctx, c, key)
	return t, err == nil && len(t.Members) > 0, err
}

// checkCount refuses a table read for --partitions (or --names) of a
// count that no live member announced while some announced another.
func checkCount(cmd *cobra.Command, t partition.Table) error {
	p := len(t.Partitions)
	if t.Announced == 0 || slices.ContainsFunc(t.Members, func(m partition.MemberRow) bool { return m.Partitions == p }) {
		return nil
	}
	flag := flagRef(cmd, "partitions")
	if !cmd.Flags().Changed("partitions") {
		flag = flagRef(cmd, "names")
	}
	return usageError("%s gives %d partitions, but the live members of group %q announce %d: use --partitions %d, or leave it out to read the count they announce",
		flag, p, t.Group, t.Announced, t.Announced)
}

// printTable prints a group's partition table: one JSON object with
// asJSON, else the partitions, the members and a summary line.
func printTable(w io.Writer, t partition.Table, foreign groupForeign, asJSON bool, coordinator string) error {
	st := groupStatusOf(t, foreign)
	st.Coordinator = coordinator
	if asJSON {
		return json.NewEncoder(w).Encode(st)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tNAME\tHOLDER\tINSTANCE\tTOKEN\tLEASE LEFT")
	for _, r := range st.Partitions {
		index := "?"
		if r.Partition >= 0 {
			index = strconv.Itoa(r.Partition)
		}
		if !r.Held {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", index, r.Name)
			continue
		}
		left := "never ends"
		if r.TTLLeftMS != nil {
			left = roundTTL(time.Duration(*r.TTLLeftMS) * time.Millisecond).String()
		}
		holder := r.Holder
		if r.Record != "" {
			holder = fmt.Sprintf("%s (%s record)", cmp.Or(holder, `""`), r.Record)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", index, r.Name, holder, cmp.Or(r.Instance, "-"), r.Token, left)
	}
	fmt.Fprintln(tw, "\nMEMBER\tINSTANCE\tOWNED\tTTL\tPARTITIONS")
	for _, m := range st.Members {
		announced := "-"
		if m.Partitions > 0 {
			announced = strconv.Itoa(m.Partitions)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", m.Holder, m.Instance, m.Owned, time.Duration(m.TTLMS)*time.Millisecond, announced)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	count := len(st.Partitions)
	if t.Partial && t.Announced > 0 {
		count = t.Announced
	}
	_, err := fmt.Fprintf(w, "\npartitions %d, members %d, at most %d each, imbalance (max/mean) %.3f, unowned %d\n",
		count, len(st.Members), st.Cap, st.Imbalance, st.Unowned)
	for _, n := range st.Notes {
		if err == nil {
			_, err = fmt.Fprintf(w, "%s\n", n)
		}
	}
	return err
}

// notesOf says what a reader of t must know beside the table: that its
// partitions' names are not known, or that the members disagree on the
// partition count.
func notesOf(t partition.Table) []string {
	var out []string
	switch {
	case t.Partial && t.Announced > 0:
		out = append(out, fmt.Sprintf("note: the group's %d partitions have names of their own, and only the %d owned now are shown: give --names as given to tenure run to see every one",
			t.Announced, t.Announced-t.Stats.Unowned))
	case t.Partial:
		out = append(out, "note: the members announce no partition count (an older tenure), so partitions above the highest owned may not be shown: give --partitions P to see every one")
	}
	counts := map[int][]string{}
	for _, m := range t.Members {
		if m.Partitions > 0 {
			counts[m.Partitions] = append(counts[m.Partitions], display.Holder(m.ID))
		}
	}
	if len(counts) > 1 {
		var each []string
		for _, p := range slices.Sorted(maps.Keys(counts)) {
			each = append(each, fmt.Sprintf("%d (%s)", p, strings.Join(counts[p], ", ")))
		}
		out = append(out, "WARNING: the members disagree on the partition count: "+strings.Join(each, "; ")+
			"; partitions may be left unowned: stop the members of one count")
	}
	return out
}

// prefixGroups prints the partition table of every group under --prefix,
// each of --partitions partitions (or --names); it reports whether it
// printed (or failed to), and whether any group was found.
func (f *statusFlags) prefixGroups(ctx context.Context, cmd *cobra.Command, c partition.Coordinator) (printed, found bool, err error) {
	names, err := f.group.groupNames(cmd)
	if err != nil || names == nil {
		return err != nil, false, err
	}
	tables, err := (&groupFinder{names: names}).list(ctx, c, f.prefix)
	if err != nil {
		return true, false, fmt.Errorf("--prefix %q --partitions: %w", f.prefix, err)
	}
	w := cmd.OutOrStdout()
	if len(tables) == 0 && !f.json {
		_, err := fmt.Fprintf(w, "no partition group with live members under prefix %q\n", f.prefix)
		return true, false, err
	}
	for i, t := range tables {
		if !f.json {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "GROUP %s\n", t.Group)
		}
		foreign, err := strangers(ctx, c, t)
		if err != nil {
			return true, true, err
		}
		if err := printTable(w, t, foreign, f.json, f.coordinator); err != nil {
			return true, true, err
		}
	}
	return true, len(tables) > 0, nil
}

// groupStatusOf is the output form of t: display names and instances, *_ms
// durations.
func groupStatusOf(t partition.Table, foreign groupForeign) PartitionStatus {
	st := PartitionStatus{Key: t.Group, Cap: t.Cap, Unowned: t.Stats.Unowned, Imbalance: t.Stats.Imbalance,
		Partitions: []partitionRowOut{}, Members: []memberRowOut{}, Notes: notesOf(t)}
	for _, r := range t.Partitions {
		out := partitionRowOut{Partition: r.Partition.Index, Name: r.Partition.Name, Key: r.Partition.Key, Held: r.Owner != ""}
		if out.Held {
			out.Holder, out.Instance = display.SplitIdentity(r.Owner)
			ms := r.LeaseLeft.Milliseconds()
			out.Token, out.TTLLeftMS = r.Token, &ms
		} else if fr, ok := foreign.partitions[out.Key]; ok {
			out.Held, out.Record, out.Reason, out.Token = true, recordKind(fr), fr.Reason, fr.Token
			out.Holder, out.Instance = display.SplitIdentity(fr.Holder)
			if ms := fr.TTL.Milliseconds(); fr.TTL >= 0 {
				out.TTLLeftMS = &ms
			}
			st.Notes = append(st.Notes, fmt.Sprintf("partition %s is held by a %s; no member takes it over", fr.Key, foreignAdvice(fr)))
		}
		st.Partitions = append(st.Partitions, out)
	}
	for _, m := range t.Members {
		name, instance := display.SplitIdentity(m.ID)
		st.Members = append(st.Members, memberRowOut{Holder: name, Instance: instance, Owned: m.Owned, TTLMS: m.TTL.Milliseconds(), Partitions: m.Partitions})
	}
	for _, r := range foreign.members {
		out := foreignMemberOut{Member: r.Member, Token: r.Token, Record: recordKind(r), Reason: r.Reason}
		if ms := r.TTL.Milliseconds(); r.TTL >= 0 {
			out.TTLLeftMS = &ms
		}
		st.ForeignMembers = append(st.ForeignMembers, out)
		st.Notes = append(st.Notes, fmt.Sprintf("%s: a %s", t.Group, foreignAdvice(r)))
	}
	return st
}

// groupStatus prints --key's partition table when --partitions or --names
// is given, or when nobody leads --key and it names a group with live
// members. It reports whether it printed (or failed to).
func (f *statusFlags) groupStatus(ctx context.Context, cmd *cobra.Command, c partition.Coordinator) (bool, error) {
	names, err := f.group.groupNames(cmd)
	if err != nil {
		return true, err
	}
	if names == nil {
		if _, led, err := leaderOf(ctx, c, f.key); err != nil || led {
			return false, nil
		}
		t, ok, err := readGroupTable(ctx, c, f.key)
		if err != nil || !ok {
			return false, nil
		}
		return true, f.printGroup(ctx, cmd, c, t)
	}
	t, err := partition.ReadTable(ctx, c, f.key, names)
	if err != nil {
		return true, err
	}
	if err := checkCount(cmd, t); err != nil {
		return true, err
	}
	return true, f.printGroup(ctx, cmd, c, t)
}

// printGroup prints t with the records that hold its unowned partitions.
func (f *statusFlags) printGroup(ctx context.Context, cmd *cobra.Command, c tenure.Coordinator, t partition.Table) error {
	foreign, err := strangers(ctx, c, t)
	if err != nil {
		return err
	}
	return printTable(cmd.OutOrStdout(), t, foreign, f.json, f.coordinator)
}

// groupForeign is what holds a group's records beside its members: by
// key, the records that hold partitions no member owns (see strangers),
// and the group's membership records that no member wrote.
type groupForeign struct {
	partitions map[string]tenure.ForeignRecord
	members    []tenure.ForeignRecord
}

// strangers returns, by key, the records that hold partitions of t that no
// member owns: a key tenure did not write as it stands (see
// tenure.ForeignRecord), or a grant that is no member's (a key put on a
// lease that is not a membership's of the group, or taken by tenure run
// --key on the partition's key alone). No member takes such a key over:
// the partition waits until it is removed (tenure release --force). It
// returns too the group's membership records that no member wrote.
func strangers(ctx context.Context, c tenure.Coordinator, t partition.Table) (groupForeign, error) {
	rs, err := foreignUnder(ctx, c, t.Group)
	if err != nil {
		return groupForeign{}, err
	}
	out := groupForeign{partitions: map[string]tenure.ForeignRecord{}, members: foreignMembersOf(rs, t.Group)}
	unowned := map[string]bool{}
	for _, r := range t.Partitions {
		if r.Owner == "" {
			unowned[r.Partition.Key] = true
		}
	}
	if len(unowned) == 0 {
		return out, nil
	}
	gs, err := c.List(ctx, t.Group+"/")
	if err != nil {
		return groupForeign{}, err
	}
	members := map[string]bool{}
	for _, m := range t.Members {
		members[m.ID] = true
	}
	for _, g := range gs {
		if unowned[g.Key] && !members[g.Holder] {
			out.partitions[g.Key] = tenure.ForeignRecord{Key: g.Key, Holder: g.Holder, Token: g.Token, TTL: g.TTL,
				Reason: "a grant that is no member's of the group"}
		}
	}
	for _, r := range rs {
		if unowned[r.Key] && r.Member == "" {
			out.partitions[r.Key] = r
		}
	}
	return out, nil
}
