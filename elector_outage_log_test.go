package tenure_test

import (
	"bytes"
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

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

// runLeading runs e with a leader function that reports on led that it
// leads, then waits for its term to end; stop ends the run.
func runLeading(e *tenure.Elector) (led <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error {
			leading <- struct{}{}
			<-ctx.Done()
			return nil
		})
	}()
	return leading, func() { cancel(); <-done }
}

// TestCampaignOutageLogsOnce: a follower cut off from the coordinator for
// 50 s, retrying every 300 ms or so, warns that acquire failed once, then
// once more after 30 s (with the count), not at every retry; when the
// coordinator answers again, one info line says so.
func TestCampaignOutageLogsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var out lockedBuffer
		cfg := testConfig("a")
		cfg.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c.Partition("a")
		e := newElector(t, c, cfg)
		led, stop := runLeading(e)
		time.Sleep(50 * time.Second)
		if n := out.lines(`msg="acquire failed"`); n != 1 {
			t.Errorf("50 s cut off: %d warnings that acquire failed; want 1", n)
		}
		if n := out.lines(`msg="acquire failed (still failing)"`); n != 1 {
			t.Errorf("50 s cut off: %d summaries; want 1 (at 30 s)", n)
		}
		c.Heal("a")
		<-led
		if n := out.lines(`msg="acquire failed: works again"`); n != 1 {
			t.Errorf("after the heal: %d lines that acquire works again; want 1", n)
		}
		stop()
	})
}

// refusingWatch is a memory coordinator whose watches are refused, as a
// Kubernetes Role without list or watch on Leases refuses them.
type refusingWatch struct{ *memory.Coordinator }

func (refusingWatch) Watch(context.Context, string) (<-chan tenure.LeaderEvent, error) {
	return nil, fmt.Errorf("watch: %w: leases is forbidden: cannot watch", tenure.ErrRefused)
}

// TestCampaignWatchRefusedWarns: a follower whose watch is refused (a
// permission someone can grant) says so once, at warning level, and goes
// on campaigning by polling; it takes the key once it is free.
func TestCampaignWatchRefusedWarns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		g, err := c.Acquire(context.Background(), "scheduler", "other#1", 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		cfg := testConfig("a")
		cfg.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
		e := newElector(t, refusingWatch{c}, cfg)
		led, stop := runLeading(e)
		time.Sleep(time.Second)
		if n := out.lines(`level=WARN msg="watch failed; polling the key every retry period instead"`); n != 1 {
			t.Errorf("%d warnings that the watch was refused; want 1:\n%s", n, out.b.String())
		}
		if err := c.Release(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		<-led
		stop()
	})
}
