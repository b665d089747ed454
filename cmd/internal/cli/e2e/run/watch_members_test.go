package run

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/freeport"
)

// memberEvent waits for a watch line with event ev for member after line
// from, and returns its index.
func memberEvent(t *testing.T, p *e2e.Proc, d time.Duration, ev, member string, from int) int {
	t.Helper()
	at := -1
	e2e.WaitFor(t, d, "watch event "+ev+" of "+member, func() bool {
		for i, w := range watchLines(t, p)[from:] {
			if w.Event == ev && w.Member == member {
				at = from + i
				return true
			}
		}
		return false
	})
	return at
}

// TestWatchKeyMembersCoordinatorDown: watch --key GROUP of a group with a
// membership record that no member wrote (a key put without a lease)
// shows the record, and, once the coordinator is down, reports it
// unreachable within the bound of its lookups (one a second, each given up
// after 2×3s; waited for 30s, slack for a loaded machine) however its
// reads of the group's membership records fare: reading them never holds
// up the lookup. When the coordinator is back, it says so, then shows the
// leadership and the record again.
func TestWatchKeyMembersCoordinatorDown(t *testing.T) {
	t.Parallel()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	dir := t.TempDir()
	s := restartableServer(t, dir, url)
	etcdc, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdc.Close()
	const ghost = "ghost#00000000"
	if _, err := etcdc.Put(t.Context(), "/tenure/leader/#members/mdown#0000000000000000#"+ghost, "2 3"); err != nil {
		t.Fatal(err)
	}
	w := e2e.StartProc(t, "watch", nil, "--endpoints", url, "--dial-timeout", "10s", "watch", "--key", "mdown", "--json")
	memberEvent(t, w, 15*time.Second, "foreign_member", ghost, 0)

	s.Stop(t)
	down := waitEvent(t, w, 30*time.Second, "unreachable", 0)
	restartableServer(t, dir, url)
	up := waitEvent(t, w, 60*time.Second, "reachable", down)
	after := waitEvent(t, w, 15*time.Second, "no_leader", up)
	again := memberEvent(t, w, 15*time.Second, "foreign_member", ghost, up)
	ls := watchLines(t, w)
	if after != up+1 {
		t.Errorf("watch after the restart = %+v; want reachable, then the leadership now", ls[up:])
	}
	if l := ls[again]; l.Key != "mdown" || l.Record != "foreign" || l.Token == 0 {
		t.Errorf("foreign_member line after the restart = %+v; want %s's foreign membership record of mdown with its token", l, ghost)
	}
	if up != down+1 {
		t.Errorf("watch while down = %+v; want unreachable, then nothing until reachable", ls[down:up])
	}
	w.Signal(t, syscall.SIGTERM)
	if code := w.Wait(t, 10*time.Second); code != 0 {
		t.Errorf("watch exit %d after SIGTERM; want 0", code)
	}
}
