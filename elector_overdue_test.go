package tenure_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// logRecords is a slog handler that keeps every record with the time it
// was logged, as time since began (a bubble's virtual time).
type logRecords struct {
	began time.Time
	mu    sync.Mutex
	lines []string
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s %s", r.Level, time.Since(l.began), r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b.String())
	return nil
}

// warnings returns the records at level WARN and above.
func (l *logRecords) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, "WARN") || strings.HasPrefix(s, "ERROR") {
			out = append(out, s)
		}
	}
	return out
}

// TestRenewalOverdueWarnsAtOnce: a renewal that hangs (the coordinator
// does not answer) is reported as overdue, with its cause, a retry period
// after it was due; not only when the attempt times out, a request timeout
// later.
func TestRenewalOverdueWarnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		logs := &logRecords{began: time.Now()}
		cfg := testConfig("a") // TTL 3s: renew every 1s, retry period 300ms, request timeout 1s
		cfg.Logger = slog.New(logs)
		e := newElector(t, c, cfg)
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			time.Sleep(500 * time.Millisecond)
			c.Block("a") // the renewal due at 1s hangs
			<-ctx.Done()
			return nil
		})
		time.Sleep(1400 * time.Millisecond)
		stop()
		w := logs.warnings()
		want := `WARN@1.3s renewal overdue token="1" cause="no reply from the coordinator to the renewal sent 300ms ago"`
		if len(w) == 0 || !strings.HasPrefix(w[0], want) {
			t.Fatalf("warnings 1.4s in, a renewal hung since 1s: %q; want first %q", w, want)
		}
	})
}
