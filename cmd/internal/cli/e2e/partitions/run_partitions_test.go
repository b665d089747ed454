package partitions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// groupParts is P in the partition end-to-end tests.
const groupParts = 8

// partitionScript makes the helper command write to the fenced register of
// its own partition ($TENURE_E2E_PART_<index>).
const partitionScript = `eval "export ` + e2e.FenceURLEnv + `=\$TENURE_E2E_PART_$TENURE_PARTITION"; exec "$SELF"`

// partGroup is a partition group of "tenure run --partitions" members on
// one coordinator, each partition's command writing to its own fenced
// register.
type partGroup struct {
	coord []string
	regs  []*e2e.Resource
	env   []string
}

func newPartGroup(t *testing.T, coord []string) *partGroup {
	g := &partGroup{coord: coord, env: []string{e2e.ChildModeEnv + "=fence", "SELF=" + e2e.SelfBin}}
	for i := range groupParts {
		r := e2e.StartResource(t)
		g.regs = append(g.regs, r)
		g.env = append(g.env, fmt.Sprintf("TENURE_E2E_PART_%d=%s", i, r.URL))
	}
	return g
}

// member starts a member of the group as holder.
func (g *partGroup) member(t *testing.T, holder string) *e2e.Proc {
	t.Helper()
	args := append(append([]string{}, g.coord...), "run", "--key", "jobs", "--partitions", fmt.Sprint(groupParts),
		"--ttl", e2e.TTL.String(), "--margin", "300ms", "--holder", holder, "--kill-grace", "500ms", "--", "sh", "-c", partitionScript)
	return e2e.StartProc(t, holder, g.env, args...)
}

// status reads the group's table with tenure status --partitions --json.
func (g *partGroup) status(t *testing.T) cli.PartitionStatus {
	t.Helper()
	res := e2e.RunTenure(t, nil, append(append([]string{}, g.coord...), "status", "--key", "jobs",
		"--partitions", fmt.Sprint(groupParts), "--json")...)
	var st cli.PartitionStatus
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &st) != nil {
		t.Fatalf("%s: exit %d, output %q\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	return st
}

// awaitOwned waits until the table gives each holder of want its count of
// partitions and no partition is unowned, and returns the table.
func (g *partGroup) awaitOwned(t *testing.T, d time.Duration, want map[string]int) cli.PartitionStatus {
	t.Helper()
	var st cli.PartitionStatus
	e2e.WaitFor(t, d, fmt.Sprintf("partitions owned %v", want), func() bool {
		st = g.status(t)
		return st.Unowned == 0 && fmt.Sprint(owned(st)) == fmt.Sprint(want)
	})
	return st
}

// owned is the count of partitions st gives each holder.
func owned(st cli.PartitionStatus) map[string]int {
	got := map[string]int{}
	for _, m := range st.Members {
		got[m.Holder] = m.Owned
	}
	return got
}

// startSlack bounds how long every owned partition's command takes to
// write once the table shows it owned: liveness, with the slack a loaded
// 2-core machine needs to start eight race-instrumented guard, shell and
// command processes, while terms that end at their deadlines there restart
// some of them.
const startSlack = 3 * e2e.Slack

// awaitRunning waits until one read of the table gives each holder of want
// its count of partitions, none unowned, and every partition has an
// accepted write from the holder that read gives it, with that read's token
// or a later one of the same holder; it returns that read and the writing
// pid of each partition (its holder's latest command). The table is read
// again on each try, not taken from awaitOwned: on a loaded machine a
// member's renewals may miss its deadline before its commands first write
// (CI at adbafc7: PostgreSQL renewals timed out, and a's race-built
// commands were not yet running 2.3 s after they started), and then its
// partitions are claimed again, by it or by another member.
func (g *partGroup) awaitRunning(t *testing.T, d time.Duration, want map[string]int) (cli.PartitionStatus, []int) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := g.status(t)
		pids, missing := g.running(st)
		if got := owned(st); fmt.Sprint(got) != fmt.Sprint(want) || st.Unowned != 0 {
			missing = fmt.Sprintf("partitions owned %v, %d unowned; want %v", got, st.Unowned, want)
		}
		if missing == "" {
			return st, pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions not all running within %s: %s", d, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running returns the writing pid of each partition of st (the latest
// accepted write of the holder st gives it, with st's token or later), or
// which partition has no such write.
func (g *partGroup) running(st cli.PartitionStatus) ([]int, string) {
	pids := make([]int, groupParts)
	for _, row := range st.Partitions {
		found := false
		for _, w := range g.regs[row.Partition].Accepted() {
			if w.Holder == row.Holder && w.Token >= row.Token {
				pids[row.Partition], found = w.PID, true // its latest command
			}
		}
		if !found {
			return nil, fmt.Sprintf("no accepted write to partition %d by %s with token %d or later", row.Partition, row.Holder, row.Token)
		}
	}
	return pids, ""
}

// checkOnceAtATime asserts that each partition's commands wrote one after
// another: a pid's writes are never interleaved with another's, and tokens
// never decrease.
func (g *partGroup) checkOnceAtATime(t *testing.T) {
	t.Helper()
	for i, r := range g.regs {
		var order []int
		var last uint64
		for _, w := range r.Accepted() {
			if w.Token < last {
				t.Errorf("partition %d: accepted token %d after %d", i, w.Token, last)
			}
			last = w.Token
			if len(order) == 0 || order[len(order)-1] != w.PID {
				if slices.Contains(order, w.PID) {
					t.Errorf("partition %d: pid %d wrote again after another command (pids in order %v)", i, w.PID, order)
				}
				order = append(order, w.PID)
			}
		}
	}
}

// killedBound bounds how long the command of a SIGKILLed member lives: its
// guard kills the tree at the term's local deadline (up to a TTL after the
// crash), and on a loaded machine a SIGKILLed process has been seen to take
// over 5 s to be gone (the guard logs "still alive 1s after SIGKILL"),
// though it runs nothing after the signal.
const killedBound = e2e.TTL + 2*e2e.Slack

// TestRunPartitions: two "tenure run --partitions 8" members on Debian's
// etcd share the partitions 4/4, each partition's command running once; a
// SIGKILLed member's partitions run again on the other with greater tokens
// and its commands die; a joining member restores the balance; a SIGTERMed
// member hands its partitions over.
func TestRunPartitions(t *testing.T) {
	t.Parallel()
	g := newPartGroup(t, []string{"--endpoints", etcdbin.Start(t)})
	a, _ := g.member(t, "a"), g.member(t, "b")
	g.awaitOwned(t, 10*time.Second+e2e.Slack, map[string]int{"a": 4, "b": 4})
	st, pids := g.awaitRunning(t, startSlack, map[string]int{"a": 4, "b": 4})

	a.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	// Liveness, with slack for a loaded machine: a's membership expires
	// (TTL), b notices and claims, and each command starts; b's own terms
	// may also end at their deadlines when the machine starves it. The
	// takeover time is the benchmark's business (tenure bench partitions).
	takeover := 2*e2e.TTL + 2*e2e.Slack
	for _, row := range st.Partitions {
		if row.Holder == "a" {
			e2e.WaitDead(t, pids[row.Partition], killedBound, fmt.Sprintf("a's command of partition %d", row.Partition))
			g.regs[row.Partition].First(t, takeover-time.Since(killed), fmt.Sprintf("to partition %d by b with a token > %d", row.Partition, row.Token),
				func(w e2e.Write) bool { return w.Holder == "b" && w.Token > row.Token })
		}
	}
	g.awaitOwned(t, e2e.Slack, map[string]int{"b": groupParts})

	c := g.member(t, "c")
	g.awaitOwned(t, 2*e2e.TTL+e2e.Slack, map[string]int{"b": 4, "c": 4})
	st, pids = g.awaitRunning(t, startSlack, map[string]int{"b": 4, "c": 4})

	c.Signal(t, syscall.SIGTERM)
	if code := c.Wait(t, e2e.TTL+e2e.Slack); code != e2e.SignalExit(syscall.SIGTERM) {
		t.Errorf("member c after SIGTERM: exit %d; want %d", code, e2e.SignalExit(syscall.SIGTERM))
	}
	for _, row := range st.Partitions {
		if row.Holder == "c" && e2e.Alive(pids[row.Partition]) {
			t.Errorf("c's command of partition %d (pid %d) outlived c", row.Partition, pids[row.Partition])
		}
	}
	g.awaitOwned(t, e2e.TTL+e2e.Slack, map[string]int{"b": groupParts})
	g.awaitRunning(t, startSlack, map[string]int{"b": groupParts})
	g.checkOnceAtATime(t)

	// Without --partitions, status finds the group: the table of what is owned.
	res := e2e.RunTenure(t, nil, append(append([]string{}, g.coord...), "status", "--key", "jobs")...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "PARTITION") || !strings.Contains(res.Stdout, "partitions 8, members 1,") {
		t.Errorf("%s: exit %d; want the group's table of 8 partitions\n%s%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
}

// TestRunPartitionsPostgres: the same group on PostgreSQL: balanced, and a
// SIGKILLed member's partitions run again on the other with greater tokens.
func TestRunPartitionsPostgres(t *testing.T) {
	t.Parallel()
	g := newPartGroup(t, e2e.PostgresCoord(t))
	a, _ := g.member(t, "a"), g.member(t, "b")
	g.awaitOwned(t, 10*time.Second+e2e.Slack, map[string]int{"a": 4, "b": 4})
	st, pids := g.awaitRunning(t, startSlack, map[string]int{"a": 4, "b": 4})
	a.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	for _, row := range st.Partitions {
		if row.Holder == "a" {
			e2e.WaitDead(t, pids[row.Partition], killedBound, fmt.Sprintf("a's command of partition %d", row.Partition))
		}
	}
	// Liveness, counted from the crash as on etcd, with slack for a loaded
	// machine: a's membership row expires (TTL), b notices and claims (each
	// group statement there is also a look at the tables' owner, and a
	// claim refused for a concurrent change runs again), b's own terms may
	// end at their deadlines when the machine starves its renewals, and
	// each poll is a tenure status process; never less than TTL + Slack
	// after a's commands are gone.
	takeover := max(2*e2e.TTL+2*e2e.Slack-time.Since(killed), e2e.TTL+e2e.Slack)
	st2 := g.awaitOwned(t, takeover, map[string]int{"b": groupParts})
	t.Logf("b owned every partition %s after a's SIGKILL", time.Since(killed).Round(time.Millisecond))
	for _, row := range st.Partitions {
		if now := st2.Partitions[row.Partition]; now.Token <= row.Token && row.Holder == "a" {
			t.Errorf("partition %d: token %d after a's crash; want > %d", row.Partition, now.Token, row.Token)
		}
	}
	g.awaitRunning(t, startSlack, map[string]int{"b": groupParts})
	g.checkOnceAtATime(t)
}

// TestRunPartitionsFlags: bad --partitions and --names are refused, naming
// the flag.
func TestRunPartitionsFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{"--partitions 0", "--partitions (0) must be at least 1"},
		{"--partitions 3 --names a,b", "--names gives 2 names for --partitions 3"},
		{"--partitions 2 --names a,a", "--names[1]"},
		{"--partitions 2 --wait-timeout 1s", "--wait-timeout is not supported with --partitions"},
	} {
		args := append(append([]string{"run", "--endpoints", "http://127.0.0.1:1", "--key", "jobs"}, strings.Fields(tc.args)...), "--", "true")
		res := e2e.RunTenure(t, nil, args...)
		if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, tc.want) {
			t.Errorf("tenure run %s: exit %d, stderr %q; want %d and %q", tc.args, res.Code, res.Stderr, cli.ExitUsage, tc.want)
		}
	}
}

// TestRunPartitionsCommandExits: a partition's command that exits on its
// own releases the partition, which the member claims again with a greater
// token and runs the command again; each command sees its partition's
// index, name, key and token.
func TestRunPartitionsCommandExits(t *testing.T) {
	t.Parallel()
	out := t.TempDir() + "/runs"
	p := e2e.StartProc(t, "member", []string{"OUT=" + out}, "--endpoints", etcdbin.Start(t), "run", "--key", "jobs",
		"--partitions", "2", "--names", "x,y", "--ttl", e2e.TTL.String(), "--margin", "300ms", "--",
		"sh", "-c", `echo "$TENURE_PARTITION $TENURE_PARTITION_NAME $TENURE_KEY $TENURE_FENCING_TOKEN" >> "$OUT"`)
	runs := map[string][]string{}
	e2e.WaitFor(t, 3*e2e.TTL+e2e.Slack, "each partition's command run three times", func() bool {
		runs = map[string][]string{}
		for _, l := range e2e.Lines(e2e.ReadFile(out)) {
			f := strings.Fields(l)
			if len(f) == 4 {
				runs[f[0]+" "+f[1]+" "+f[2]] = append(runs[f[0]+" "+f[1]+" "+f[2]], f[3])
			}
		}
		return len(runs["0 x jobs/x"]) >= 3 && len(runs["1 y jobs/y"]) >= 3
	})
	if len(runs) != 2 {
		t.Errorf("commands saw partitions %v; want only \"0 x jobs/x\" and \"1 y jobs/y\"", runs)
	}
	for part, tokens := range runs {
		for i := 1; i < len(tokens); i++ {
			prev, _ := strconv.ParseUint(tokens[i-1], 10, 64)
			next, err := strconv.ParseUint(tokens[i], 10, 64)
			if err != nil || next <= prev {
				t.Errorf("partition %s: run %d had token %q after %d; want a greater token", part, i+1, tokens[i], prev)
			}
		}
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, e2e.TTL+e2e.Slack); code != e2e.SignalExit(syscall.SIGTERM) {
		t.Errorf("member after SIGTERM: exit %d; want %d", code, e2e.SignalExit(syscall.SIGTERM))
	}
}
