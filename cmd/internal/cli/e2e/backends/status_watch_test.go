package backends

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// watchTimeFormat is the layout of the time of watch's JSON lines
// (docs/json.md): RFC 3339 in UTC, to the millisecond.
const watchTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// testStatusAndWatch checks status and watch output against the
// coordinator coord names.
func testStatusAndWatch(t *testing.T, coord []string) {
	a := e2e.HoldKey(t, coord, "st/a", "holder-a")
	e2e.HoldKey(t, coord, "st/b", "holder-b")

	t.Run("status --key", func(t *testing.T) {
		got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "st/a")...)
		if len(got) != 1 {
			t.Fatalf("status --key printed %d lines; want 1", len(got))
		}
		s := got[0]
		if !s.Held || s.Key != "st/a" || e2e.NameOf(s.Holder) != "holder-a" || s.Token == 0 || s.TTLLeftMS == nil || s.Coordinator == "" {
			t.Fatalf("status --key st/a = %+v; want held by holder-a with a token, ttl_left_ms and the coordinator", s)
		}
		if left := time.Duration(*s.TTLLeftMS) * time.Millisecond; left < 0 || left > 10*time.Second {
			t.Errorf("ttl_left_ms = %d; want within the 10s TTL", *s.TTLLeftMS)
		}
	})
	t.Run("status --key free", func(t *testing.T) {
		got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "st/none")...)
		if len(got) != 1 || got[0].Held || got[0].Key != "st/none" {
			t.Fatalf("status --key st/none = %+v; want one line, not held", got)
		}
	})
	t.Run("status --key near a led key", func(t *testing.T) {
		res := e2e.RunTenure(t, nil, append(coord, "status", "--key", "st")...)
		if res.Code != 0 || !strings.Contains(res.Stdout, "st: no leader") {
			t.Fatalf("status --key st: exit %d, output:\n%s", res.Code, res.Stdout)
		}
		if !strings.Contains(res.Stderr, "led keys that start with it: st/a, st/b") {
			t.Errorf("status --key st (st/a and st/b led): stderr\n%s\nwant it to name st/a and st/b", res.Stderr)
		}
	})
	t.Run("status --prefix", func(t *testing.T) {
		got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--prefix", "st/")...)
		if len(got) != 2 || got[0].Key != "st/a" || got[1].Key != "st/b" || e2e.NameOf(got[1].Holder) != "holder-b" {
			t.Fatalf("status --prefix st/ = %+v; want st/a and st/b, in order", got)
		}
		if got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--prefix", "st/b")...); len(got) != 1 || got[0].Key != "st/b" {
			t.Errorf("status --prefix st/b = %+v; want st/b alone", got)
		}
		if got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--prefix", "nothing/")...); len(got) != 0 {
			t.Errorf("status --prefix nothing/ = %+v; want no lines", got)
		}
	})
	t.Run("status table", func(t *testing.T) {
		res := e2e.RunTenure(t, nil, append(coord, "status", "--prefix", "")...)
		ls := e2e.Lines(e2e.AfterCoordinatorLine(t, res.Stdout))
		if res.Code != 0 || len(ls) < 3 || !strings.HasPrefix(ls[0], "KEY") {
			t.Fatalf("status --prefix \"\": exit %d, output:\n%s", res.Code, res.Stdout)
		}
		// Columns are aligned: HOLDER starts at the same offset on every line.
		col := strings.Index(ls[0], "HOLDER")
		for _, l := range ls[1:] {
			if !strings.HasPrefix(l[col:], "holder-") {
				t.Errorf("line %q: holder not at column %d", l, col)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		w := e2e.StartProc(t, "watch", nil, append(coord, "watch", "--key", "st/w", "--json")...)
		e2e.WaitFor(t, 10*time.Second, "watch's first line", func() bool { return len(e2e.Lines(w.Out.String())) >= 1 })
		res := e2e.RunTenure(t, nil, append(coord, "run", "--key", "st/w", "--holder", "brief", "--", "sleep", "0.3")...)
		if res.Code != 0 {
			t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
		}
		e2e.WaitFor(t, 10*time.Second, "watch to see the release", func() bool { return len(e2e.Lines(w.Out.String())) >= 3 })
		w.Signal(t, syscall.SIGINT)
		if code := w.Wait(t, 5*time.Second); code != 0 {
			t.Errorf("watch exit %d after SIGINT; want 0", code)
		}
		var evs []cli.WatchLine
		for _, l := range e2e.Lines(w.Out.String()) {
			var ev cli.WatchLine
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("watch line %q is not JSON: %v", l, err)
			}
			if _, err := time.Parse(watchTimeFormat, ev.Time); err != nil {
				t.Errorf("watch line %q: time: %v", l, err)
			}
			if ev.Coordinator == "" {
				t.Errorf("watch line %q does not name the coordinator", l)
			}
			evs = append(evs, ev)
		}
		if len(evs) != 3 || evs[0].Event != "no_leader" || evs[1].Event != "leader" || evs[1].Holder != "brief" || evs[1].Instance == "" || evs[1].Token == 0 || evs[2].Event != "no_leader" {
			t.Fatalf("watch saw %+v; want free, held by brief, free", evs)
		}
		// PostgreSQL and Kubernetes keep when a lease ends, not its TTL:
		// what they give is the time left, and watch says so.
		left := slices.Contains(coord, "--postgres") || slices.Contains(coord, "--kubeconfig")
		if left != (evs[1].TTLMS == nil) || left != (evs[1].TTLLeftMS != nil) {
			t.Errorf("watch's leader line on %v: ttl_ms %v, ttl_left_ms %v; want ttl_left_ms on PostgreSQL and Kubernetes, ttl_ms elsewhere", coord, evs[1].TTLMS, evs[1].TTLLeftMS)
		}
	})
	a.Signal(t, syscall.SIGTERM)
	a.Wait(t, 10*time.Second)
	if got := e2e.StatusJSON[cli.KeyStatus](t, nil, append(coord, "--key", "st/a")...); len(got) != 1 || got[0].Held {
		t.Errorf("status of st/a after its holder stopped = %+v; want released", got)
	}
}

func TestStatusAndWatchEtcd(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	testStatusAndWatch(t, s.Coord)
}
