package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/tenure-dev/tenure"
)

// foreignLister is a coordinator that can hold records tenure did not
// write as they stand, which Acquire refuses (an etcd key without a lease,
// a PostgreSQL row without holder_id, a Lease held for longer than a day):
// status and watch show them, and release --force removes them.
type foreignLister interface {
	ListForeign(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error)
	RemoveForeign(ctx context.Context, r tenure.ForeignRecord) (bool, error)
}

// foreignUnder returns the foreign records of keys under prefix; none when
// c cannot hold any.
func foreignUnder(ctx context.Context, c tenure.Coordinator, prefix string) ([]tenure.ForeignRecord, error) {
	fl, ok := c.(foreignLister)
	if !ok {
		return nil, nil
	}
	return fl.ListForeign(ctx, prefix)
}

// foreignOf returns the foreign record that holds key, if one does: a
// membership record of group key holds no key.
func foreignOf(ctx context.Context, c tenure.Coordinator, key string) (tenure.ForeignRecord, bool, error) {
	rs, err := foreignUnder(ctx, c, key)
	if err != nil {
		return tenure.ForeignRecord{}, false, err
	}
	for _, r := range rs {
		if r.Key == key && r.Member == "" {
			return r, true, nil
		}
	}
	return tenure.ForeignRecord{}, false, nil
}

// foreignMembersOf returns the membership records of group among rs (see
// tenure.ForeignRecord.Member).
func foreignMembersOf(rs []tenure.ForeignRecord, group string) []tenure.ForeignRecord {
	var out []tenure.ForeignRecord
	for _, r := range rs {
		if r.Member != "" && r.Key == group {
			out = append(out, r)
		}
	}
	return out
}

// recordKind names what r is in output: "foreign" or "malformed".
func recordKind(r tenure.ForeignRecord) string {
	if r.Malformed {
		return "malformed"
	}
	return "foreign"
}

// foreignAdvice says what r is and how to free its key, for people.
func foreignAdvice(r tenure.ForeignRecord) string {
	if r.Member != "" {
		return fmt.Sprintf("%s membership record of member %q (%s): tenure did not write it as it stands, and it is no member (no partition is assigned to it): remove it with tenure release --force --key %s --member=%s",
			recordKind(r), r.Member, r.Reason, r.Key, shellQuote(r.Member))
	}
	return fmt.Sprintf("%s record (%s): tenure did not write it, it may never expire, and it holds the key until it is removed: tenure release --force --key %s",
		recordKind(r), r.Reason, r.Key)
}

// withForeign merges the grants gs and the foreign records rs, by key: a
// key's foreign record stands for it (a backend may list it as a grant
// too). The statuses are sorted by key; the membership records of rs
// (which hold no key) follow, in their order.
func withForeign(gs []tenure.Grant, rs []tenure.ForeignRecord, coordinator string) []KeyStatus {
	byKey := map[string]KeyStatus{}
	for _, g := range gs {
		byKey[g.Key] = KeyStatus{Key: g.Key, Held: true, Coordinator: coordinator, grant: g}
	}
	var members []KeyStatus
	for _, r := range rs {
		if r.Member != "" {
			members = append(members, foreignStatus(r, coordinator))
		} else {
			byKey[r.Key] = foreignStatus(r, coordinator)
		}
	}
	out := make([]KeyStatus, 0, len(byKey)+len(members))
	for _, s := range byKey {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return append(out, members...)
}

// foreignStatus is the status line of key held by foreign record r, or of
// membership record r of group key, which holds no key.
func foreignStatus(r tenure.ForeignRecord, coordinator string) KeyStatus {
	rec := r
	return KeyStatus{Key: r.Key, Held: r.Member == "", Member: r.Member, Coordinator: coordinator, Record: recordKind(r), Reason: r.Reason,
		grant: tenure.Grant{Key: r.Key, Holder: r.Holder, Token: r.Token, TTL: r.TTL}, foreign: &rec}
}

// warnForeign logs, once, that key is held by a record tenure did not
// write, which tenure run waits for until it is removed, and reports
// whether it is.
func warnForeign(ctx context.Context, log *slog.Logger, c tenure.Coordinator, key string) bool {
	r, ok, err := foreignOf(ctx, c, key)
	if err != nil || !ok {
		return false
	}
	log.Warn("key held by a record tenure did not write; waiting for it, which may be for ever: remove it with tenure release --force --key "+key,
		"key", key, "holder", r.Holder, "token", r.Token, "record", recordKind(r), "reason", r.Reason)
	return true
}

// shellQuote quotes s for a POSIX shell, after "--flag=" in commands
// printed for people to run: as it is when that is safe, in single quotes
// when it is printable, else in bash's $'…' with Go's escapes, which bash
// reads.
func shellQuote(s string) string {
	safe, printable := s != "", true
	for _, r := range s {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._#:@%+=,/-", r)):
		case unicode.IsPrint(r):
			safe = false
		default:
			safe, printable = false, false
		}
	}
	switch {
	case safe:
		return s
	case printable:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	q := strconv.Quote(s)
	return "$'" + strings.ReplaceAll(q[1:len(q)-1], "'", `\'`) + "'"
}
