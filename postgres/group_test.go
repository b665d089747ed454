package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformance runs the partition group suite on PostgreSQL, each
// group member with its own pool, as separate processes would have. A
// partition is freed by hand as an operator would with SQL: an UPDATE that
// clears its owner; a membership row is moved to another group by an
// UPDATE of its grp, and its member is told (its renewal is lost); a
// partition is given to another group's member by an UPDATE of its
// owner_epoch.
func TestGroupConformance(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		return open(t, dsn)
	}, partitiontest.WithTTL(2*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		conn, err := pgx.Connect(ctxFor(t, 10*time.Second), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		tag, err := conn.Exec(ctxFor(t, 10*time.Second), `UPDATE cluster_leadership_partitions SET owner_epoch = NULL WHERE grp = $1 AND name = $2`, group, name)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("free partition %s/%s by hand = %v, %v; want one row updated", group, name, tag, err)
		}
	}), partitiontest.WithMovedMembership(func(t *testing.T, m partition.Member, to string) {
		c := open(t, dsn)
		members := c.Table()[:len(c.Table())-1] + `_members"`
		tag, err := c.Pool().Exec(ctxFor(t, 10*time.Second), `UPDATE `+members+` SET grp = $1 WHERE epoch = $2`, to, int64(m.Epoch))
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("move membership %s to %q by hand = %v, %v; want one row updated", m, to, tag, err)
		}
	}, false), partitiontest.WithOwnerByHand(func(t *testing.T, group, name string, owner partition.Member) {
		c := open(t, dsn)
		partitions := c.Table()[:len(c.Table())-1] + `_partitions"`
		tag, err := c.Pool().Exec(ctxFor(t, 10*time.Second), `UPDATE `+partitions+` SET owner_epoch = $1 WHERE grp = $2 AND name = $3`, int64(owner.Epoch), group, name)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("give partition %s/%s to %s by hand = %v, %v; want one row updated", group, name, owner, tag, err)
		}
	}), partitiontest.WithIgnoredEdit(func(t *testing.T, m partition.Member, _ tenure.Grant) {
		c := open(t, dsn)
		members := c.Table()[:len(c.Table())-1] + `_members"`
		tag, err := c.Pool().Exec(ctxFor(t, 10*time.Second), `UPDATE `+members+` SET ttl_us = 1 WHERE epoch = $1`, int64(m.Epoch))
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("set the ttl_us of %s to 1 µs by hand = %v, %v; want one row updated", m, tag, err)
		}
	}))
}
