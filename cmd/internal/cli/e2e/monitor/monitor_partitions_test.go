package monitor

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/headless"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// partMonitored starts "tenure run --partitions 4 --http" on coord as
// holder, each partition's command a long sleep, and returns it with the
// address of its endpoints.
func partMonitored(t *testing.T, coord []string, holder string) (*e2e.Proc, string) {
	t.Helper()
	args := append(append([]string{}, coord...), "run", "--key", "jobs", "--partitions", "4", "--holder", holder,
		"--ttl", e2e.TTL.String(), "--margin", "300ms", "--http", "127.0.0.1:0", "--", "sleep", "600")
	p := e2e.StartProc(t, holder, nil, args...)
	return p, httpAddr(t, p)
}

// TestMonitorRunPartitions: "tenure run --partitions 4 --http", alone in its
// group, serves /status with the 4 partitions owned by it (tokens, lease
// left), /leader 200 while it owns them, /health, and /metrics with every
// partition metric; "tenure status --prefix --partitions" prints the same
// group, and refuses a bad --partitions with exit 2.
func TestMonitorRunPartitions(t *testing.T) {
	t.Parallel()
	coord := []string{"--endpoints", etcdbin.Start(t)}
	_, addr := partMonitored(t, coord, "solo")
	var st monitor.Status
	e2e.WaitFor(t, 15*time.Second, "4 partitions owned in /status", func() bool {
		_, body := e2e.Get(t, addr, "/status")
		st = monitor.Status{}
		if json.Unmarshal([]byte(body), &st) != nil || len(st.Partitions) != 4 {
			return false
		}
		for _, p := range st.Partitions {
			if !p.Mine {
				return false
			}
		}
		return true
	})
	for _, p := range st.Partitions {
		if p.Holder != "solo" || p.Group != "jobs" || p.Key != fmt.Sprintf("jobs/%d", p.Partition) || p.Token == 0 || p.TTLLeftMs == nil {
			t.Errorf("/status partition = %+v; want jobs/%d held by solo with a token and the lease left", p, p.Partition)
		}
	}
	if len(st.Groups) != 1 || st.Groups[0].Members != 1 || st.Groups[0].Unowned != 0 || st.Role != "leader" || len(st.Keys) != 0 {
		t.Errorf("/status groups %+v, role %q, %d keys; want group jobs with 1 member and none unowned, leader, no keys", st.Groups, st.Role, len(st.Keys))
	}
	for _, path := range []string{"/health", "/"} {
		if code, _ := e2e.Get(t, addr, path); code != 200 {
			t.Errorf("GET %s = %d; want 200", path, code)
		}
	}
	// The member's partitions share its lease: on a loaded machine they
	// may all end at its deadline, briefly, and be claimed again.
	e2e.WaitFor(t, 10*time.Second, "/leader 200 while owning partitions", func() bool { code, _ := e2e.Get(t, addr, "/leader"); return code == 200 })
	names := []string{"tenure_partitions_owned{group=\"jobs\"} 4", "tenure_partitions_unowned{group=\"jobs\"} 0",
		"tenure_partition_members{group=\"jobs\"} 1", "tenure_partition_imbalance_ratio{group=\"jobs\"} 1",
		"tenure_partition_oldest_unowned_seconds", "tenure_partition_moves_total{group=\"jobs\",reason=\"claimed\"}"}
	var body string
	e2e.WaitFor(t, 10*time.Second, "the partition metrics", func() bool {
		_, body = e2e.Get(t, addr, "/metrics")
		return !slices.ContainsFunc(names, func(n string) bool { return !strings.Contains(body, n) })
	})

	res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "status", "--prefix", "jo", "--partitions", "4", "--json")...)
	var ps cli.PartitionStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &ps) != nil || ps.Key != "jobs" || len(ps.Partitions) != 4 || len(ps.Members) != 1 || ps.Members[0].Holder != "solo" {
		t.Errorf("%s: exit %d, output %q; want the table of group jobs, 4 partitions, member solo", res.Description, res.Code, res.Stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--prefix", "", "--partitions", "4"}, 0, "GROUP jobs"},
		{[]string{"--prefix", "other/", "--partitions", "4", "--exit-code"}, cli.ExitNoLeader, `no partition group with live members under prefix "other/"`},
		{[]string{"--prefix", "", "--partitions", "0"}, cli.ExitUsage, "--partitions (0) must be at least 1"},
	} {
		res := e2e.RunTenure(t, nil, append(append(append([]string{}, coord...), "status"), tc.args...)...)
		if res.Code != tc.code || !strings.Contains(res.Stdout+res.Stderr, tc.want) {
			t.Errorf("%s: exit %d, output %q %q; want %d and %q", res.Description, res.Code, res.Stdout, res.Stderr, tc.code, tc.want)
		}
	}
}

// TestMonitorPartitionPage: the page of "tenure server --http" shows
// the partition table of a group of two "tenure run --partitions" members
// (and not its partitions as keys);
// when one is SIGKILLed, the page shows its partitions owned by the other
// with greater tokens, without a reload, within the TTL and generous
// slack.
func TestMonitorPartitionPage(t *testing.T) {
	t.Parallel()
	chromium := headless.Need(t)
	s := e2e.StartServer(t, t.TempDir())
	partMonitored(t, s.Coord, "alpha")
	beta, _ := partMonitored(t, s.Coord, "beta")

	ctx := e2e.CtxFor(t, 2*time.Minute)
	b, err := headless.Open(ctx, chromium, "http://"+s.HTTP+"/", 1200, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	type row struct {
		Key, Holder string
		Token       uint64
	}
	shown := func() map[string]row {
		var rows []row
		err := b.Eval(ctx, `(() => { window.tenureLoads ??= performance.getEntriesByType("navigation").length;
			return [...document.querySelectorAll('.group[data-group="jobs"] table.all tbody tr')].map(r =>
				({key: r.dataset.key, holder: r.dataset.holder, token: Number(r.dataset.token || 0)})); })()`, &rows)
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		out := map[string]row{}
		for _, r := range rows {
			out[r.Key] = r
		}
		return out
	}
	owners := func(rows map[string]row) map[string]int {
		n := map[string]int{}
		for _, r := range rows {
			n[r.Holder]++
		}
		return n
	}
	var before map[string]row
	e2e.WaitFor(t, 30*time.Second, "the page to show 2 partitions each for alpha and beta", func() bool {
		before = shown()
		return maps.Equal(owners(before), map[string]int{"alpha": 2, "beta": 2})
	})
	screenshot(t, ctx, b, "partitions-two.png")
	var asKeys int
	if err := b.Eval(ctx, `document.querySelectorAll('#keys tr[data-key^="jobs/"]').length`, &asKeys); err != nil || asKeys != 0 {
		t.Errorf("the page shows %d partitions of jobs as keys (%v); want them only in the group's table", asKeys, err)
	}

	killed := time.Now()
	beta.Cmd.Process.Kill()
	var after map[string]row
	e2e.WaitFor(t, e2e.TTL+20*time.Second, "the page to show alpha owning all 4", func() bool {
		after = shown()
		return maps.Equal(owners(after), map[string]int{"alpha": 4})
	})
	t.Logf("the page showed alpha owning every partition %s after beta was killed; TTL %s", time.Since(killed).Round(10*time.Millisecond), e2e.TTL)
	for k, r := range before {
		if r.Holder == "beta" && after[k].Token <= r.Token {
			t.Errorf("partition %s: token shown for alpha = %d; want > beta's %d", k, after[k].Token, r.Token)
		}
	}
	var loads int
	if err := b.Eval(ctx, `window.tenureLoads`, &loads); err != nil || loads != 1 {
		t.Errorf("page loads = %d, %v; want 1: the page must update without a reload", loads, err)
	}
	screenshot(t, ctx, b, "partitions-one.png")
}
