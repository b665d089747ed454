package foreign

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// watchEvents returns the events of watch's whole JSON lines so far.
func watchEvents(t *testing.T, w *e2e.Proc) []cli.WatchLine {
	t.Helper()
	var out []cli.WatchLine
	text := w.Out.String()
	for _, l := range e2e.Lines(text[:strings.LastIndexByte(text, '\n')+1]) {
		var ev cli.WatchLine
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("watch line %q: %v", l, err)
		}
		out = append(out, ev)
	}
	return out
}

// hasEvent reports whether evs hold event for member of group.
func hasEvent(evs []cli.WatchLine, group, event, member string) bool {
	for _, ev := range evs {
		if ev.Event == event && ev.Key == group && ev.Member == member {
			return true
		}
	}
	return false
}

// TestForeignMembershipRecordsEtcd: a membership key of group fm put
// without a lease (as etcdctl put makes it), with no live member, is a
// foreign membership record, never the group key's holder: status --key
// fm says "no leader" (exit 4 with --exit-code) and lists the record after
// it with "member", the reason and the remedy; watch --prefix and watch
// --key fm print foreign_member, then foreign_member_gone once it is
// removed, and neither prints a leader event;
// release --force without --member leaves it (and says how to remove it),
// --member without --force refuses with the command, and --member --force
// removes it.
func TestForeignMembershipRecordsEtcd(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()
	const ghost = "ghost#00000000"
	put, err := etcdc.Put(t.Context(), "/tenure/leader/#members/fm#0000000000000000#"+ghost, "2 3")
	if err != nil {
		t.Fatal(err)
	}
	token := uint64(put.Header.Revision)
	coord := s.Coord

	st := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "fm")...)
	if len(st) != 2 || st[0].Held || st[0].Member != "" || st[1].Held || st[1].Key != "fm" || st[1].Member != ghost ||
		st[1].Token != token || st[1].Record != "foreign" || !strings.Contains(st[1].Reason, "no lease") || st[1].TTLLeftMS != nil {
		t.Errorf("status --key fm --json = %+v; want fm not held, then %s's foreign membership record (no lease) with token %d", st, ghost, token)
	}
	res := e2e.RunTenure(t, nil, append(coord, "status", "--key", "fm", "--exit-code")...)
	if res.Code != cli.ExitNoLeader || !strings.Contains(res.Stdout, "fm: no leader") ||
		!strings.Contains(res.Stdout, `foreign membership record of member "`+ghost+`"`) || !strings.Contains(res.Stdout, "--key fm --member="+ghost) {
		t.Errorf("status --key fm --exit-code: exit %d, output:\n%s\nwant %d, no leader, and the record with its remedy", res.Code, res.Stdout, cli.ExitNoLeader)
	}

	byKey := e2e.StartProc(t, "watch-key", nil, append(coord, "watch", "--key", "fm", "--json")...)
	byPrefix := e2e.StartProc(t, "watch-prefix", nil, append(coord, "watch", "--prefix", "f", "--json")...)
	e2e.WaitFor(t, 10*time.Second, "watch --prefix to show the record", func() bool { return hasEvent(watchEvents(t, byPrefix), "fm", "foreign_member", ghost) })
	e2e.WaitFor(t, 10*time.Second, "watch --key to show the record", func() bool { return hasEvent(watchEvents(t, byKey), "fm", "foreign_member", ghost) })

	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", "fm", "--force")...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "no leader, nothing released") || !strings.Contains(res.Stderr, "--member ID --force") {
		t.Errorf("release --key fm --force: exit %d, stdout %q, stderr:\n%s\nwant nothing released and how to remove the records", res.Code, res.Stdout, res.Stderr)
	}
	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", "fm", "--member", ghost)...)
	if res.Code != cli.ExitError || !strings.Contains(res.Stderr, "tenure release --key fm --member="+ghost+" --force") {
		t.Errorf("release --key fm --member %s without --force: exit %d, stderr:\n%s\nwant %d naming the command", ghost, res.Code, res.Stderr, cli.ExitError)
	}
	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", "fm", "--member", ghost, "--force", "--json")...)
	var rel cli.ReleaseResult
	if err := json.Unmarshal([]byte(res.Stdout), &rel); err != nil || res.Code != 0 || !rel.Released || rel.Member != ghost || rel.Token != token || rel.Record != "foreign" {
		t.Fatalf("release --key fm --member %s --force --json: exit %d, %q (%v); want released with token %d\n%s", ghost, res.Code, res.Stdout, err, token, res.Stderr)
	}

	e2e.WaitFor(t, 10*time.Second, "watch --prefix to say the record is gone", func() bool { return hasEvent(watchEvents(t, byPrefix), "fm", "foreign_member_gone", ghost) })
	e2e.WaitFor(t, 10*time.Second, "watch --key to say the record is gone", func() bool { return hasEvent(watchEvents(t, byKey), "fm", "foreign_member_gone", ghost) })
	for _, w := range []*e2e.Proc{byKey, byPrefix} {
		w.Signal(t, syscall.SIGINT)
		w.Wait(t, 5*time.Second)
		for _, ev := range watchEvents(t, w) {
			if ev.Event == "leader" {
				t.Errorf("%s: %+v; want no leader event: the record holds no key", w.Name, ev)
			}
		}
	}
	if st := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "fm")...); len(st) != 1 || st[0].Held {
		t.Errorf("status --key fm --json after the release = %+v; want fm alone, not held", st)
	}
}
