package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/limits"
	"github.com/tenure-dev/tenure/partition"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
)

// A membership row that no member wrote as it stands (an expires_at of
// infinity or more than a day ahead, which no renewal writes, a member
// that is not a holder identity, or a grp other than the group its member
// joined: see movedSQL) is no member: GroupMembers and
// GroupPartitions leave it and its partitions out. It never expires by
// itself, and claims do not take the partitions it owns, so ListForeign
// lists each such partition as a foreign record, and RemoveForeign of one
// deletes the membership row, which frees every partition it owns.
//
// A partition row whose owner_epoch names a live membership row of another
// group (edited by hand, or left by a membership row moved to another group)
// is no partition of that member's either: GroupPartitions leaves it out,
// claims are refused it while that row lives (a member moved by hand may
// still run it until its deadline) and take it once the row has expired,
// ListForeign lists it, and RemoveForeign of it frees that partition alone
// (its owner_epoch cleared), leaving the other group's member be.

// foreignMemberSQL is true for membership row m that no member wrote as
// it stands; the holder identity of m.member is checked in Go
// (foreignMember). It reads clock_timestamp(), not the statement's start:
// a DELETE that waited on the row's lock for a renewal that started later
// judges the renewed row (see RemoveForeign).
var foreignMemberSQL = `(NOT pg_catalog.isfinite(m.expires_at)
     OR m.expires_at OPERATOR(pg_catalog.>) (pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => ` + maxTTLSecs + `))
     OR ` + movedSQL + `)`

// movedSQL is true for membership row m whose grp is not the group its
// member joined (joined_grp, which JoinGroup writes and nothing updates):
// a row moved to another group by hand. Such a row is no member of either
// group: its member's renewals are lost, and it is a foreign record of the
// group it was moved to. A row without joined_grp (written by an older
// tenure, or by hand) is read as of its grp; the column is read through the
// row's JSON form, so that a table made by an older tenure reads too, and
// compared byte for byte.
const movedSQL = `coalesce((pg_catalog.to_jsonb(m) OPERATOR(pg_catalog.->>) 'joined_grp') OPERATOR(pg_catalog.<>) (m.grp COLLATE pg_catalog."C"), false)`

// maxTTLSecs is limits.MaxTTL in seconds, as SQL.
var maxTTLSecs = fmt.Sprint(int64(limits.MaxTTL / time.Second))

// memberLeftMicros is leftMicros for membership row m.
const memberLeftMicros = `LEAST(CASE WHEN pg_catalog.isfinite(m.expires_at)
       THEN extract(epoch FROM m.expires_at OPERATOR(pg_catalog.-) CURRENT_TIMESTAMP) OPERATOR(pg_catalog.*) 1000000
       ELSE 9e15 END, 9e15)::bigint`

// foreignMember says why a live membership row of member, whose expires_at
// is finite or not and leftUS ahead, and that was moved from the group it
// joined or not (movedSQL), is no member's as it stands; "" when a member
// wrote it.
func foreignMember(member string, finite bool, leftUS int64, moved bool) (why string, malformed bool) {
	var out []string
	if moved {
		out = append(out, "moved by hand from the group its member joined")
	}
	if tenure.ValidateHolder(member) != nil {
		out, malformed = append(out, "a member that is not a holder identity"), true
	}
	switch {
	case !finite:
		out = append(out, "an expires_at of infinity")
	case time.Duration(leftUS)*time.Microsecond > limits.MaxTTL:
		out = append(out, "an expires_at more than a day ahead")
	}
	return strings.Join(out, ", "), malformed
}

// foreignPartitions returns the partitions of keys under prefix owned by a
// live membership row that no member wrote as it stands (see above).
func (c *Coordinator) foreignPartitions(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	t, err := c.groupTables()
	if err != nil {
		return nil, nil // no group tables can exist
	}
	if err := c.checkGroupTables(ctx, t); errors.Is(err, ErrTableShape) {
		return nil, nil // not tenure's: never used, and JoinGroup and Acquire say so
	} else if err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, `SELECT p.grp, p.name, m.grp, m.member, m.epoch, p.fencing_token,
       pg_catalog.isfinite(m.expires_at), `+memberLeftMicros+`, `+movedSQL+`
FROM `+t.partitions+` p JOIN `+t.members+` m ON m.epoch OPERATOR(pg_catalog.=) p.owner_epoch
WHERE pg_catalog.starts_with(p.grp OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) p.name, $1)
  AND m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP`, prefix)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []tenure.ForeignRecord
	var group, name, ownerGroup, member string
	var epoch, token, leftUS int64
	var finite, moved bool
	_, err = pgx.ForEachRow(rows, []any{&group, &name, &ownerGroup, &member, &epoch, &token, &finite, &leftUS, &moved}, func() error {
		if f, ok := foreignPartition(group, name, ownerGroup, member, epoch, token, finite, leftUS, moved); ok {
			out = append(out, f)
		}
		return nil
	})
	return out, err
}

// foreignPartition describes partition name of group, at token, whose
// owner is the live membership row of member in ownerGroup with epoch,
// whose expires_at is finite or not and leftUS ahead, and that was moved
// from the group it joined or not, when no member owns it as it stands
// (the row is no member's, or of another group).
//
// A partition row naming a live member of its own group is that member's,
// whether the member claimed it or not, and is never listed: nothing in
// the database tells a row a claim wrote from one written for the member
// by hand. A claim applied after its call failed leaves a row a claim did
// write, token and all, that its member does not run; the key's leadership
// row, where a claim writes its token too, may have been deleted by hand
// since (the next claim's token is still greater); and the member's own
// record of what it runs is in its process, not in the database. A
// listing would offer to free a
// partition a live member may run. The member frees it instead: at each
// read of the partition table (GroupPartitions lists the row as its, at
// the row's token), a partition.Group releases the partitions listed as
// its own that it neither runs nor is to run, by that token and on its
// own membership, so never a grant it runs, and claims those its
// assignment gives it, with a token above the row's. Such a row holds its
// partition from other members until that read: at most 15 renewal
// intervals (5 TTLs with the default interval), or 1.5·P/1,000 seconds
// when that is longer. A program that calls the group methods
// itself has the same duty: ReleasePartitions of the grant GroupPartitions
// lists frees the partition.
func foreignPartition(group, name, ownerGroup, member string, epoch, token int64, finite bool, leftUS int64, moved bool) (tenure.ForeignRecord, bool) {
	key, other := partition.Key(group, name), ownerGroup != group
	why, malformed := foreignMember(member, finite, leftUS, moved)
	if (why == "" && !other) || tenure.ValidateKey(key) != nil {
		return tenure.ForeignRecord{}, false
	}
	f := tenure.ForeignRecord{Key: key, Holder: member, Token: uint64(token), TTL: -1, Malformed: malformed,
		Reason: fmt.Sprintf("owned by a membership row that no member wrote as it stands (epoch %d: %s)", epoch, why)}
	if other {
		f.Reason = fmt.Sprintf("owned by a membership row of another group (%q, epoch %d)", ownerGroup, epoch)
	}
	if finite {
		f.TTL = time.Duration(leftUS) * time.Microsecond
	}
	return f, true
}

// removeForeignMember frees r's partition, at r's token, when its owner is
// a membership row of r's member in another group (its owner_epoch
// cleared: that partition alone). Otherwise it deletes the membership row
// that owns the partition, if it is still r's member and, unless that
// member is not a holder identity, still ends more than a day ahead. It
// reports whether it did either. Every partition the row owned is then
// free: the next claim's token is greater than the partition row's.
func (c *Coordinator) removeForeignMember(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	i := strings.LastIndexByte(r.Key, '/')
	t, err := c.groupTables()
	if i < 0 || err != nil {
		return false, nil
	}
	if err := c.checkGroupTables(ctx, t); errors.Is(err, ErrTableShape) {
		return false, nil // not tenure's: see foreignPartitions
	} else if err != nil {
		return false, err
	}
	tag, err := c.pool.Exec(ctx, `UPDATE `+t.partitions+` p SET owner_epoch = NULL
WHERE p.grp OPERATOR(pg_catalog.=) $1 AND p.name OPERATOR(pg_catalog.=) $2 AND p.fencing_token OPERATOR(pg_catalog.=) $3
  AND EXISTS (SELECT 1 FROM `+t.members+` m WHERE m.epoch OPERATOR(pg_catalog.=) p.owner_epoch
              AND m.member OPERATOR(pg_catalog.=) $4 AND m.grp OPERATOR(pg_catalog.<>) p.grp)`,
		r.Key[:i], r.Key[i+1:], int64(r.Token), r.Holder)
	if isUndefinedTable(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() > 0 {
		c.o.logger.Info("partition owned by another group's member freed", "key", r.Key, "member", r.Holder, "token", int64(r.Token), "reason", r.Reason)
		return true, nil
	}
	tag, err = c.pool.Exec(ctx, `DELETE FROM `+t.members+` m USING `+t.partitions+` p
WHERE p.grp OPERATOR(pg_catalog.=) $1 AND p.name OPERATOR(pg_catalog.=) $2 AND p.fencing_token OPERATOR(pg_catalog.=) $3
  AND m.epoch OPERATOR(pg_catalog.=) p.owner_epoch AND m.member OPERATOR(pg_catalog.=) $4
  AND m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP AND ($5 OR `+foreignMemberSQL+`)`,
		r.Key[:i], r.Key[i+1:], int64(r.Token), r.Holder, tenure.ValidateHolder(r.Holder) != nil)
	if isUndefinedTable(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() > 0 {
		c.o.logger.Info("foreign membership row removed", "key", r.Key, "member", r.Holder, "token", int64(r.Token), "reason", r.Reason)
	}
	return tag.RowsAffected() > 0, nil
}

// foreignMemberRows returns, as records of their groups' keys with Member
// set, the live membership rows of the groups under prefix that no member
// wrote as they stand. A record's token is its row's epoch; its Member is
// the row's member ("#EPOCH" when that is empty).
func (c *Coordinator) foreignMemberRows(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	t, err := c.groupTables()
	if err != nil {
		return nil, nil // no group tables can exist
	}
	if err := c.checkGroupTables(ctx, t); errors.Is(err, ErrTableShape) {
		return nil, nil // not tenure's: see foreignPartitions
	} else if err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, `SELECT m.grp, m.member, m.epoch, pg_catalog.isfinite(m.expires_at), `+memberLeftMicros+`, `+movedSQL+`
FROM `+t.members+` m
WHERE pg_catalog.starts_with(m.grp, $1) AND m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP`, prefix)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []tenure.ForeignRecord
	var group, member string
	var epoch, leftUS int64
	var finite, moved bool
	_, err = pgx.ForEachRow(rows, []any{&group, &member, &epoch, &finite, &leftUS, &moved}, func() error {
		if r, ok := foreignMemberRow(group, member, epoch, finite, leftUS, moved); ok {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// foreignMemberRow describes the live membership row of member in group
// with epoch, whose expires_at is finite or not and leftUS ahead, and that
// was moved from the group it joined or not, when no member wrote it as it
// stands.
func foreignMemberRow(group, member string, epoch int64, finite bool, leftUS int64, moved bool) (tenure.ForeignRecord, bool) {
	why, malformed := foreignMember(member, finite, leftUS, moved)
	if why == "" || tenure.ValidateKey(group) != nil {
		return tenure.ForeignRecord{}, false
	}
	r := tenure.ForeignRecord{Key: group, Member: cmp.Or(member, fmt.Sprintf("#%d", epoch)), Holder: member, Token: uint64(epoch), TTL: -1,
		Malformed: malformed, Reason: fmt.Sprintf("a membership row that no member wrote as it stands (epoch %d: %s)", epoch, why)}
	if finite {
		r.TTL = time.Duration(leftUS) * time.Microsecond
	}
	return r, true
}

// removeForeignMemberRow deletes the membership row of group r.Key whose
// epoch is r's token, if it still names r's member and, unless that
// member is not a holder identity, still ends more than a day ahead; it reports whether it did.
// Every partition the row owns is then free.
func (c *Coordinator) removeForeignMemberRow(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	t, err := c.groupTables()
	if err != nil || r.Member != cmp.Or(r.Holder, fmt.Sprintf("#%d", r.Token)) {
		return false, nil
	}
	if err := c.checkGroupTables(ctx, t); errors.Is(err, ErrTableShape) {
		return false, nil // not tenure's: see foreignPartitions
	} else if err != nil {
		return false, err
	}
	tag, err := c.pool.Exec(ctx, `DELETE FROM `+t.members+` m
WHERE m.grp OPERATOR(pg_catalog.=) $1 AND m.epoch OPERATOR(pg_catalog.=) $2 AND m.member OPERATOR(pg_catalog.=) $3
  AND m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP AND ($4 OR `+foreignMemberSQL+`)`,
		r.Key, int64(r.Token), r.Holder, tenure.ValidateHolder(r.Holder) != nil)
	if isUndefinedTable(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() > 0 {
		c.o.logger.Info("foreign membership row removed", "group", r.Key, "member", r.Member, "epoch", int64(r.Token), "reason", r.Reason)
	}
	return tag.RowsAffected() > 0, nil
}
