package partitions

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// TestRunPartitionsCountMismatch (issue #21): member m1 runs group "jobs"
// with --partitions 8, then m2 joins with --partitions 4. m2 refuses to
// run, with an error naming both counts, and leaves; m1 keeps every
// partition (before, m2 joined silently and partitions 0 and 2 stayed
// unowned). tenure status --key shows the 8 partitions m1 announces;
// status --partitions 4 is refused, naming 8.
func TestRunPartitionsCountMismatch(t *testing.T) {
	t.Parallel()
	g := newPartGroup(t, []string{"--endpoints", etcdbin.Start(t)})
	g.member(t, "m1")
	g.awaitOwned(t, 10*time.Second+e2e.Slack, map[string]int{"m1": groupParts})

	m2 := e2e.StartProc(t, "m2", g.env, append(append([]string{}, g.coord...), "run", "--key", "jobs", "--partitions", "4",
		"--ttl", e2e.TTL.String(), "--margin", "300ms", "--holder", "m2", "--kill-grace", "500ms", "--", "sh", "-c", partitionScript)...)
	code := m2.Wait(t, e2e.TTL+e2e.Slack)
	for _, want := range []string{`refusing to join group "jobs" with 4 partitions`, "runs it with 8"} {
		if code == 0 || !strings.Contains(m2.Err.String(), want) {
			t.Errorf("m2 (--partitions 4 beside m1's 8): exit %d; want an error saying %q\nstderr:\n%s", code, want, m2.Err)
		}
	}
	// m1 never handed anything over: 8 of 8 at every reading.
	for deadline := time.Now().Add(e2e.TTL); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if st := g.status(t); st.Unowned != 0 || len(st.Members) != 1 || st.Members[0].Owned != groupParts {
			t.Fatalf("after m2 refused: unowned %d, members %+v; want m1 alone with all %d", st.Unowned, st.Members, groupParts)
		}
	}
	res := e2e.RunTenure(t, nil, append(append([]string{}, g.coord...), "status", "--key", "jobs")...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "partitions 8, members 1,") || !strings.Contains(res.Stdout, "unowned 0") {
		t.Errorf("%s: exit %d; want the table of 8 partitions, none unowned\n%s%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	res = e2e.RunTenure(t, nil, append(append([]string{}, g.coord...), "status", "--key", "jobs", "--partitions", "4")...)
	if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, "announce 8") {
		t.Errorf("%s: exit %d, stderr %q; want exit %d naming the 8 partitions the members announce", res.Description, res.Code, res.Stderr, cli.ExitUsage)
	}
}

// TestStatusShowsUnownedPartitions (issue #21): a group of 8 partitions
// whose member owns 1 and 3 to 7. tenure status --key (without
// --partitions) shows all 8, numbered as named, 0 and 2 unowned; before,
// it showed the 6 owned ones numbered 0 to 5 and "unowned 0".
func TestStatusShowsUnownedPartitions(t *testing.T) {
	t.Parallel()
	ep := etcdbin.Start(t)
	ctx := e2e.CtxFor(t, time.Minute)
	c, err := etcd.Dial(ctx, etcd.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.JoinGroup(ctx, "pj", "m1#1", time.Minute, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClaimPartitions(ctx, m, []string{"1", "3", "4", "5", "6", "7"}); err != nil {
		t.Fatal(err)
	}
	res := e2e.RunTenure(t, nil, "--endpoints", ep, "status", "--key", "pj", "--json")
	var st cli.PartitionStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
		t.Fatalf("%s: exit %d, output %q\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	var rows []string
	for _, r := range st.Partitions {
		rows = append(rows, fmt.Sprintf("%d:%s:%v", r.Partition, r.Name, r.Held))
	}
	want := "0:0:false 1:1:true 2:2:false 3:3:true 4:4:true 5:5:true 6:6:true 7:7:true"
	if got := strings.Join(rows, " "); got != want || st.Unowned != 2 {
		t.Errorf("%s: partitions %s, unowned %d; want %s, unowned 2", res.Description, got, st.Unowned, want)
	}
	res = e2e.RunTenure(t, nil, "--endpoints", ep, "status", "--key", "pj")
	if !strings.Contains(res.Stdout, "partitions 8, members 1,") || !strings.Contains(res.Stdout, "unowned 2") {
		t.Errorf("%s: want 8 partitions, 2 unowned\n%s%s", res.Description, res.Stdout, res.Stderr)
	}
}
