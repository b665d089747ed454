package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// member runs a member name#name of group "jobs" with 4 partitions on c
// until the returned stop is called.
func member(t *testing.T, c partition.Coordinator, name string) (g *partition.Group, stop func()) {
	t.Helper()
	cfg := partition.DefaultConfig()
	cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, name, name
	return partitiontest.RunMember(t, c, cfg)
}

// owners returns the holder of each row of s's partition table, "" when
// unowned, and how many rows are this instance's.
func owners(t *testing.T, s monitor.Status) (holders []string, mine int) {
	t.Helper()
	for _, p := range s.Partitions {
		holders = append(holders, p.Holder)
		if p.Mine {
			mine++
		}
		if p.Held != (p.Holder != "") || p.Held != (p.Token > 0) || p.Held != (p.TTLLeftMs != nil) || p.Held == (p.UnownedMs != nil) {
			t.Errorf("/status partition row %+v: held, holder, token, lease left and unowned time disagree", p)
		}
	}
	return holders, mine
}

// A member's monitor shows its group's partition table in /status: every
// partition unowned (and for how long) before anyone joins, then owned by
// the two members with tokens and lease left, then by the survivor alone
// once the other is cut off and its lease has expired; /leader answers
// whether this member owns a partition.
func TestPartitionTableInStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var self *partition.Group
		names := partition.Names(4)
		mon := newMonitor(t, c, monitor.Config{
			PartitionsOnly: true, Identity: "a#a",
			Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
				tb, err := partition.ReadTable(ctx, c, "jobs", names)
				return []partition.Table{tb}, err
			},
			Leading: func() bool { return self != nil && len(self.Snapshot().Owned) > 0 },
		})
		h := mon.Handler()
		time.Sleep(time.Second)
		s := status(t, h)
		if holders, _ := owners(t, s); len(holders) != 4 || len(s.Groups) != 1 || s.Groups[0].Unowned != 4 || len(s.Keys) != 0 {
			t.Fatalf("/status before any member: %d rows, groups %+v, %d keys; want 4 unowned rows of one group and no keys", len(holders), s.Groups, len(s.Keys))
		}
		if u := s.Partitions[0].UnownedMs; u == nil || *u < 900 {
			t.Errorf("/status unowned_ms after 1s unowned = %v; want ≥ 900", u)
		}
		if code, _ := get(t, h, "/leader"); code != http.StatusServiceUnavailable {
			t.Errorf("/leader owning nothing = %d; want 503", code)
		}

		self, stopA := member(t, c, "a")
		defer stopA()
		_, stopB := member(t, c, "b")
		defer stopB()
		time.Sleep(5 * time.Second)
		s = status(t, h)
		holders, mine := owners(t, s)
		g := s.Groups[0]
		if g.Members != 2 || g.Unowned != 0 || g.Cap != 2 || g.Imbalance != 1 || mine != 2 || s.Role != "leader" {
			t.Errorf("/status with two members: group %+v, owners %q, %d mine, role %q; want 2 members, 2 each, 2 mine, leader", g, holders, mine, s.Role)
		}
		if code, _ := get(t, h, "/leader"); code != http.StatusOK {
			t.Errorf("/leader owning partitions = %d; want 200", code)
		}

		c.Partition("b") // b's lease runs out; a takes its partitions
		time.Sleep(20 * time.Second)
		s = status(t, h)
		if holders, mine := owners(t, s); mine != 4 || s.Groups[0].Members != 1 {
			t.Errorf("/status after b was cut off: owners %q, %d mine, group %+v; want all 4 owned by a, 1 member", holders, mine, s.Groups[0])
		}
		c.Heal("b")
	})
}

// A partition table that cannot be read is reported in /status, and the
// keys are still shown.
func TestPartitionReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		if _, err := c.Acquire(t.Context(), "jobs", "x#1", time.Minute); err != nil {
			t.Fatal(err)
		}
		errRead := errors.New("table unreadable")
		h := newMonitor(t, c, monitor.Config{Keys: []string{"jobs"},
			Partitions: func(context.Context, []tenure.Grant) ([]partition.Table, error) { return nil, errRead }}).Handler()
		time.Sleep(time.Second)
		s := status(t, h)
		if s.Error != errRead.Error() || len(s.Keys) != 1 || s.Keys[0].Holder != "x" || len(s.Partitions) != 0 {
			t.Errorf("/status = error %q, keys %+v, %d partitions; want %q, jobs held by x, none", s.Error, s.Keys, len(s.Partitions), errRead)
		}
	})
}

// page decodes /status/partitions?query from h.
func page(t *testing.T, h http.Handler, query string) monitor.PartitionPage {
	t.Helper()
	code, body := get(t, h, "/status/partitions?"+query)
	var p monitor.PartitionPage
	if err := json.Unmarshal([]byte(body), &p); code != http.StatusOK || err != nil {
		t.Fatalf("/status/partitions?%s = %d, %v:\n%s", query, code, err, body)
	}
	return p
}

// indexes returns the partition index of each row.
func indexes(rows []monitor.PartitionStatus) []int {
	out := []int{}
	for _, r := range rows {
		out = append(out, r.Partition)
	}
	return out
}

// /status carries the rows to look at first, at most Config.StatusRows
// per group: the unowned, then the recently moved (with the owner they
// came from), then the rest by index; the group's summary counts them and
// each member's partitions. /status/partitions pages through the table,
// filtered by state, owner and name, and refuses bad parameters by name.
func TestPartitionPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		names := partition.Names(8)
		join := func(id string, claim ...string) partition.Member {
			m, err := c.JoinGroup(t.Context(), "jobs", id, time.Minute, 0)
			if err == nil {
				_, err = c.ClaimPartitions(t.Context(), m, claim)
			}
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a := join("a#1", "0", "1", "2")
		b := join("b#2", "3", "4", "5")
		mon := newMonitor(t, c, monitor.Config{
			PartitionsOnly: true, Identity: "a#1", StatusRows: 4,
			Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
				tb, err := partition.ReadTable(ctx, c, "jobs", names)
				return []partition.Table{tb}, err
			},
		})
		h := mon.Handler()
		time.Sleep(time.Second)
		synctest.Wait() // the monitor's read at 1 s is over: it sees no instant between the release and the claim
		gs, err := c.GroupPartitions(t.Context(), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ReleasePartitions(t.Context(), b, gs[3:4]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ClaimPartitions(t.Context(), a, []string{"3"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)

		s := status(t, h)
		if got, want := indexes(s.Partitions), []int{6, 7, 3, 0}; !slices.Equal(got, want) {
			t.Errorf("/status partitions = %v; want %v (unowned, moved, then by index; 4 rows)", got, want)
		}
		if p := s.Partitions[2]; p.MovedMs == nil || p.From != "b" || p.Holder != "a" || !p.Mine || s.Partitions[3].MovedMs != nil {
			t.Errorf("/status moved row = %+v; want partition 3 moved from b to a (mine), partition 0 not moved", p)
		}
		g := s.Groups[0]
		byMember := fmt.Sprintln(g.ByMember[0].ID, g.ByMember[0].Owned, g.ByMember[0].Mine, g.ByMember[1].ID, g.ByMember[1].Owned)
		if g.Partitions != 8 || g.Owned != 6 || g.Unowned != 2 || g.Moved != 1 || len(g.ByMember) != 2 || byMember != "a#1 4 true b#2 2\n" {
			t.Errorf("/status group = %+v; want 8 partitions, 6 owned, 2 unowned, 1 moved, a#1 owning 4 (mine), b#2 2", g)
		}
		if m := g.ByMember[0]; m.TTLMs == nil || *m.TTLMs != time.Minute.Milliseconds() || m.Renewing == nil || !*m.Renewing {
			t.Errorf("/status member a: ttl %v, renewing %v; want %d ms, renewing", m.TTLMs, m.Renewing, time.Minute.Milliseconds())
		}

		for _, tc := range []struct {
			query string
			total int
			rows  []int
		}{
			{"", 8, []int{0, 1, 2, 3, 4, 5, 6, 7}},
			{"limit=3&offset=6", 8, []int{6, 7}},
			{"state=unowned", 2, []int{6, 7}},
			{"state=moved", 1, []int{3}},
			{"state=mine", 4, []int{0, 1, 2, 3}},
			{"owner=b&state=owned", 2, []int{4, 5}},
			{"owner=a%231&name=2", 1, []int{2}},
			{"group=jobs&order=attention&offset=2&limit=2", 8, []int{3, 0}},
		} {
			if p := page(t, h, tc.query); p.Group != "jobs" || p.Total != tc.total || !slices.Equal(indexes(p.Partitions), tc.rows) {
				t.Errorf("/status/partitions?%s = group %q, total %d, rows %v; want jobs, %d, %v", tc.query, p.Group, p.Total, indexes(p.Partitions), tc.total, tc.rows)
			}
		}
		for _, tc := range []struct {
			query string
			code  int
			want  string
		}{
			{"state=lost", http.StatusBadRequest, `state "lost"`},
			{"order=name", http.StatusBadRequest, `order "name"`},
			{"limit=5000", http.StatusBadRequest, "limit 5000"},
			{"limit=x", http.StatusBadRequest, `limit "x"`},
			{"offset=-1", http.StatusBadRequest, "offset -1"},
			{"group=other", http.StatusNotFound, `group "other"`},
		} {
			code, body := get(t, h, "/status/partitions?"+tc.query)
			var e struct{ Error string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || code != tc.code || !strings.Contains(e.Error, tc.want) {
				t.Errorf("/status/partitions?%s = %d %s; want %d naming %s", tc.query, code, body, tc.code, tc.want)
			}
		}
	})
}

// A read that takes long (a table of 100,000 partitions) spaces the next:
// the Monitor spends at most a fifth of its time reading, but never leaves
// more than 2 s between reads; it says how often it reads.
func TestSlowReadsSpaced(t *testing.T) {
	for _, tc := range []struct {
		read  time.Duration
		reads int32
		every int64
	}{
		{10 * time.Millisecond, 121, 250},
		{300 * time.Millisecond, 21, 1500},
		{time.Second, 16, 2000},
	} {
		t.Run(tc.read.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				var reads atomic.Int32
				mon := newMonitor(t, c, monitor.Config{PartitionsOnly: true, Poll: 250 * time.Millisecond,
					Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
						reads.Add(1)
						time.Sleep(tc.read)
						return nil, nil
					}})
				time.Sleep(30*time.Second + time.Millisecond)
				if s := mon.Status(); reads.Load() != tc.reads || s.PollMs != tc.every {
					t.Errorf("reads of %s in 30 s with Poll 250ms = %d, poll_ms %d; want %d, %d", tc.read, reads.Load(), s.PollMs, tc.reads, tc.every)
				}
			})
		})
	}
}
