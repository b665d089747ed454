package backends

import (
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// ttlWarning is the start of the warning of a member whose --ttl differs
// from the leader's lease.
const ttlWarning = "the leader's lease TTL differs from --ttl"

// checkTTLWarning runs "tenure run --key key --ttl ttl" on coord while a
// member with --ttl 10s (holdKey) leads key, and checks that it warns once,
// naming both TTLs, when ttl rounds to another whole number of seconds,
// and not otherwise.
func checkTTLWarning(t *testing.T, coord []string, key, ttl string, warn bool) {
	t.Helper()
	res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), "run", "--key", key, "--ttl", ttl, "--wait-timeout", "1500ms", "--", "true")...)
	if res.Code != cli.ExitNotReady {
		t.Errorf("%s: exit %d; want %d (the key is held)\n%s", res.Description, res.Code, cli.ExitNotReady, res.Stderr)
	}
	n := strings.Count(res.Stderr, ttlWarning)
	switch {
	case warn && (n != 1 || !strings.Contains(res.Stderr, "leader_ttl=10s ttl="+ttl)):
		t.Errorf("%s: %d TTL warnings; want one naming leader_ttl=10s ttl=%s\n%s", res.Description, n, ttl, res.Stderr)
	case !warn && n != 0:
		t.Errorf("%s: a TTL warning for a TTL that agrees with the leader's\n%s", res.Description, res.Stderr)
	}
}

// TestTTLDisagreementWarned: on etcd, a member whose --ttl differs from
// the leader's lease warns once with both values; one that agrees (after
// etcd's rounding up to whole seconds) does not.
func TestTTLDisagreementWarned(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	e2e.HoldKey(t, s.Coord, "ttl", "holder-10s")
	checkTTLWarning(t, s.Coord, "ttl", "3s", true)
	checkTTLWarning(t, s.Coord, "ttl", "10s", false)
	checkTTLWarning(t, s.Coord, "ttl", "9500ms", false)
}

// TestGroupTTLDisagreementWarned: a member that joins a partition group
// whose live member runs with another --ttl warns once, naming both.
func TestGroupTTLDisagreementWarned(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	member := func(holder, ttl string) *e2e.Proc {
		return e2e.StartProc(t, holder, nil, append(append([]string{}, s.Coord...), "run", "--key", "grp", "--partitions", "2",
			"--holder", holder, "--ttl", ttl, "--", "sleep", "600")...)
	}
	a := member("member-10s", "10s")
	e2e.WaitFor(t, 15*time.Second, "the first member to run a partition", func() bool { return strings.Contains(a.Err.String(), "command started") })
	b := member("member-3s", "3s")
	e2e.WaitFor(t, 15*time.Second, "the second member to join", func() bool { return strings.Contains(b.Err.String(), "joining the group") })
	if got := b.Err.String(); strings.Count(got, "another TTL than --ttl") != 1 || !strings.Contains(got, "member_ttl=10s ttl=3s") {
		t.Errorf("member with --ttl 3s beside one with 10s: stderr does not warn once with member_ttl=10s ttl=3s:\n%s", got)
	}
	if strings.Contains(a.Err.String(), "another TTL than --ttl") {
		t.Errorf("the first member warned, with no other member live when it joined:\n%s", a.Err.String())
	}
}
