package partition_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// warnings returns the lines logged at WARN or above.
func (l *lockedBuffer) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") {
			out = append(out, s)
		}
	}
	return out
}

// TestRenewalOverdueWarnsAtOnce: a member whose coordinator stops
// answering (its requests hang) logs its membership renewal as overdue, with
// the cause, a retry period after the renewal was due: not only when the
// attempt times out, a request timeout later, as the Elector does.
func TestRenewalOverdueWarnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2) // TTL 3s: renew every 1s, retry period 300ms, request timeout 1s
		defer c.close()
		var logs lockedBuffer
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.start("a")
		c.await("a owns the partitions", 5*time.Second, c.settled)
		if w := logs.warnings(); len(w) > 0 {
			t.Fatalf("warnings before the fault: %q", w)
		}
		c.coord.Block("a") // the next renewal's requests hang
		time.Sleep(2 * time.Second)
		w := logs.warnings()
		want := []string{`msg="renewal overdue"`, `epoch=1`,
			`cause="no reply from the coordinator to the renewal sent 300ms ago"`}
		for _, part := range want {
			if len(w) == 0 || !strings.Contains(w[0], part) {
				t.Fatalf("warnings 2s after a's requests began to hang: %q; want first one with %s", w, strings.Join(want, " "))
			}
		}
		c.coord.HealAll()
	})
}

// TestJoinOutageLogsOnce: a member that cannot reach the coordinator for
// 50 s warns that its join failed once, and once more after 30 s with the
// count (outage.Log), not at every retry; once it joins, one line says the
// join works again.
func TestJoinOutageLogsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		defer c.close()
		var logs lockedBuffer
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.coord.Partition("a")
		c.start("a")
		time.Sleep(50 * time.Second)
		count := func(msg string) int {
			n := 0
			for _, w := range logs.warnings() {
				if strings.Contains(w, `msg="`+msg+`"`) {
					n++
				}
			}
			return n
		}
		if n, s := count("join failed; retrying"), count("join failed; retrying (still failing)"); n != 1 || s != 1 {
			t.Errorf("50 s cut off: %d warnings that the join failed and %d summaries; want 1 and 1:\n%q", n, s, logs.warnings())
		}
		c.coord.HealAll()
		c.await("a owns the partitions", 10*time.Second, c.settled)
		logs.mu.Lock()
		again := strings.Contains(logs.b.String(), `msg="join failed; retrying: works again"`)
		logs.mu.Unlock()
		if !again {
			t.Error("a joined, but nothing says the join works again")
		}
	})
}
