package run

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/freeport"
)

// TestServerDataDirInUse: a second server on a data dir in use fails at
// once naming the process that holds it; SIGINT and SIGTERM both stop a
// server, and the data dir is free again after each.
func TestServerDataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := e2e.StartServer(t, dir)
	res := e2e.RunTenure(t, nil, "server", "--data-dir", dir, "--listen-client", "http://127.0.0.1:0",
		"--listen-peer", "http://127.0.0.1:0", "--http", "")
	if res.Code != cli.ExitSoftware {
		t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, cli.ExitSoftware, res.Stderr)
	}
	if want := fmt.Sprintf("data dir %s is in use by process %d", dir, first.PID()); !strings.Contains(res.Stderr, want) {
		t.Errorf("second server: stderr %q; want %q", res.Stderr, want)
	}
	// Liveness bound with slack for a loaded machine: it must not wait for
	// the lock (the reported hang lasted 11 minutes).
	if res.Took > 10*time.Second {
		t.Errorf("second server took %s to fail; want it not to wait for the lock", res.Took)
	}

	first.Signal(t, syscall.SIGINT)
	if code := first.Wait(t, 10*time.Second); code != 0 {
		t.Errorf("server exit %d after SIGINT; want 0", code)
	}
	again := e2e.StartServer(t, dir)
	again.Stop(t) // SIGTERM, exit 0
}

// restartableServer starts a server on a fixed client URL, so that a
// restart on the same data dir is reachable where clients expect it.
func restartableServer(t *testing.T, dir, clientURL string) *e2e.Server {
	t.Helper()
	peer, err := embedded.FreeLocalURLs(1)
	if err != nil {
		t.Fatal(err)
	}
	return e2e.AwaitServer(t, e2e.StartProc(t, "server", nil, "server", "--data-dir", dir,
		"--listen-client", clientURL, "--listen-peer", peer[0], "--http", ""), dir)
}

// watchLines decodes the JSON lines a watch printed so far.
func watchLines(t *testing.T, p *e2e.Proc) []cli.WatchLine {
	t.Helper()
	var out []cli.WatchLine
	for _, l := range e2e.Lines(p.Out.String()) {
		var w cli.WatchLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("watch line %q is not JSON: %v", l, err)
		}
		out = append(out, w)
	}
	return out
}

// waitEvent waits for a watch line with event ev and returns its index.
func waitEvent(t *testing.T, p *e2e.Proc, d time.Duration, ev string, from int) int {
	t.Helper()
	at := -1
	e2e.WaitFor(t, d, "watch event "+ev, func() bool {
		for i, w := range watchLines(t, p)[from:] {
			if w.Event == ev {
				at = from + i
				return true
			}
		}
		return false
	})
	return at
}

// TestWatchCoordinatorDown: watch reports the coordinator unreachable
// while it is down and reachable again when it is back, in JSON and in
// text, then the leadership as it is now.
func TestWatchCoordinatorDown(t *testing.T) {
	t.Parallel()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	dir := t.TempDir()
	s := restartableServer(t, dir, url)
	coord := []string{"--endpoints", url, "--dial-timeout", "10s"}
	js := e2e.StartProc(t, "watch json", nil, append(coord, "watch", "--key", "down/k", "--json")...)
	text := e2e.StartProc(t, "watch text", nil, append(coord, "watch", "--key", "down/k")...)
	waitEvent(t, js, 15*time.Second, "no_leader", 0)
	e2e.WaitFor(t, 15*time.Second, "the text watch's first line", func() bool { return strings.Contains(text.Out.String(), "down/k  no leader") })

	s.Stop(t)
	down := waitEvent(t, js, 30*time.Second, "unreachable", 0)
	if w := watchLines(t, js)[down]; w.Key != "down/k" || w.Error == "" || w.Held != nil {
		t.Errorf("unreachable line = %+v; want the key and the error, no held", w)
	}
	restartableServer(t, dir, url)
	up := waitEvent(t, js, 60*time.Second, "reachable", down)
	after := waitEvent(t, js, 15*time.Second, "no_leader", up)
	ls := watchLines(t, js)
	if ls[up].DownMS == nil || *ls[up].DownMS <= 0 || after != up+1 {
		t.Errorf("watch after the restart = %+v; want reachable with down_ms, then the state now", ls[up:])
	}
	e2e.WaitFor(t, 15*time.Second, "the text watch to see the restart", func() bool {
		out := text.Out.String()
		return strings.Contains(out, "down/k  coordinator unreachable: ") && strings.Contains(out, "down/k  coordinator reachable again after ")
	})
	for _, p := range []*e2e.Proc{js, text} {
		p.Signal(t, syscall.SIGTERM)
		if code := p.Wait(t, 10*time.Second); code != 0 {
			t.Errorf("%s exit %d after SIGTERM; want 0", p.Name, code)
		}
	}
}

// TestWatchPrefixStatusExitCodeRelease: watch --prefix sees every key
// under the prefix; status --exit-code tells led from not led; release
// refuses without the live token, then releases and says whom.
func TestWatchPrefixStatusExitCodeRelease(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	coord := s.Coord
	w := e2e.StartProc(t, "watch prefix", nil, append(coord, "watch", "--prefix", "wp/", "--json")...)
	e2e.HoldKey(t, coord, "wp/a", "holder-a")
	e2e.HoldKey(t, coord, "wp/b", "holder-b")
	e2e.HoldKey(t, coord, "other", "holder-o")
	e2e.WaitFor(t, 15*time.Second, "watch --prefix to see wp/a and wp/b", func() bool { return len(watchLines(t, w)) >= 2 })

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--key", "wp/a", "--exit-code"}, 0},
		{[]string{"--key", "wp/none", "--exit-code"}, cli.ExitNoLeader},
		{[]string{"--key", "wp/none"}, 0},
		{[]string{"--prefix", "wp/", "--exit-code"}, 0},
		{[]string{"--prefix", "nothing/", "--exit-code", "--json"}, cli.ExitNoLeader},
	} {
		res := e2e.RunTenure(t, nil, append(append(coord, "status"), tc.args...)...)
		if res.Code != tc.code {
			t.Errorf("%s: exit %d; want %d\n%s", res.Description, res.Code, tc.code, res.Stderr)
		}
	}

	st := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "wp/a")...)
	if len(st) != 1 || st[0].Holder != "holder-a" || st[0].Instance == "" {
		t.Fatalf("status --key wp/a = %+v; want holder-a with its instance", st)
	}
	live := st[0].Token
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, fmt.Sprintf("tenure release --key wp/a --token %d", live)},
		{[]string{"--token", strconv.FormatUint(live+1000, 10)}, fmt.Sprintf("--token %d is not the live grant", live+1000)},
	} {
		res := e2e.RunTenure(t, nil, append(append(coord, "release", "--key", "wp/a"), tc.args...)...)
		if res.Code != cli.ExitError || !strings.Contains(res.Stderr, tc.want) || !strings.Contains(res.Stderr, "holder-a") {
			t.Errorf("%s: exit %d, stderr %q; want %d, naming holder-a and %q", res.Description, res.Code, res.Stderr, cli.ExitError, tc.want)
		}
	}
	res := e2e.RunTenure(t, nil, append(coord, "release", "--key", "wp/a", "--token", strconv.FormatUint(live, 10), "--json")...)
	var rel cli.ReleaseResult
	if err := json.Unmarshal([]byte(res.Stdout), &rel); res.Code != 0 || err != nil {
		t.Fatalf("%s: exit %d, stdout %q (%v)\n%s", res.Description, res.Code, res.Stdout, err, res.Stderr)
	}
	if !rel.Released || rel.Holder != "holder-a" || rel.Instance != st[0].Instance || rel.Token != live {
		t.Errorf("release --json = %+v; want holder-a, its instance, token %d", rel, live)
	}
	if !strings.Contains(res.Stderr, "released a live lease") || !strings.Contains(res.Stderr, "holder=holder-a") ||
		!strings.Contains(res.Stderr, "campaigns again") || strings.Count(res.Stderr, "released") != 1 {
		t.Errorf("release stderr %q; want one warning naming holder-a, saying that it campaigns again", res.Stderr)
	}
	// The released grant is gone: either nobody leads or a new term does.
	if now := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "wp/a")...); len(now) == 1 && now[0].Held && now[0].Token == live {
		t.Errorf("status after release = %+v; want token %d gone", now, live)
	}
	res = e2e.RunTenure(t, nil, append(coord, "release", "--key", "wp/none", "--force")...)
	if res.Code != 0 || !strings.Contains(res.Stdout, "no leader, nothing released") {
		t.Errorf("%s: exit %d, stdout %q; want 0, nothing released", res.Description, res.Code, res.Stdout)
	}

	waitEvent(t, w, 15*time.Second, "no_leader", 0) // wp/a released
	w.Signal(t, syscall.SIGINT)
	w.Wait(t, 10*time.Second)
	seen := map[string]bool{}
	for _, l := range watchLines(t, w) {
		if l.Event == "leader" {
			seen[l.Key+" "+l.Holder] = l.Instance != "" && l.Token > 0 && l.TTLLeftMS != nil
		}
		if !strings.HasPrefix(l.Key, "wp/") {
			t.Errorf("watch --prefix wp/ printed %+v", l)
		}
	}
	if !seen["wp/a holder-a"] || !seen["wp/b holder-b"] {
		t.Errorf("watch --prefix saw %v; want wp/a by holder-a and wp/b by holder-b, with instance, token and ttl_left_ms", seen)
	}
}
