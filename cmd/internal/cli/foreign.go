package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

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

// foreignOf returns the foreign record that holds key, if one does.
func foreignOf(ctx context.Context, c tenure.Coordinator, key string) (tenure.ForeignRecord, bool, error) {
	rs, err := foreignUnder(ctx, c, key)
	if err != nil {
		return tenure.ForeignRecord{}, false, err
	}
	for _, r := range rs {
		if r.Key == key {
			return r, true, nil
		}
	}
	return tenure.ForeignRecord{}, false, nil
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
	return fmt.Sprintf("%s record (%s): tenure did not write it, nothing renews it, and it holds the key until it is removed: tenure release --force --key %s",
		recordKind(r), r.Reason, r.Key)
}

// withForeign merges the grants gs and the foreign records rs, by key: a
// key's foreign record stands for it (a backend may list it as a grant
// too). The statuses are sorted by key.
func withForeign(gs []tenure.Grant, rs []tenure.ForeignRecord, coordinator string) []KeyStatus {
	byKey := map[string]KeyStatus{}
	for _, g := range gs {
		byKey[g.Key] = KeyStatus{Key: g.Key, Held: true, Coordinator: coordinator, grant: g}
	}
	for _, r := range rs {
		byKey[r.Key] = foreignStatus(r, coordinator)
	}
	out := make([]KeyStatus, 0, len(byKey))
	for _, s := range byKey {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// foreignStatus is the status line of key held by foreign record r.
func foreignStatus(r tenure.ForeignRecord, coordinator string) KeyStatus {
	rec := r
	return KeyStatus{Key: r.Key, Held: true, Coordinator: coordinator, Record: recordKind(r), Reason: r.Reason,
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
