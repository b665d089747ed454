package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/postgres"
)

// TestNotifyModes checks which changes each mode announces: by default
// acquisitions and releases only while some coordinator watches the key;
// always with NotifyAll.
func TestNotifyModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []postgres.Option
		watched bool // another coordinator watches the key
		want    int  // notifications for an acquire then a release
	}{
		{"default-unwatched", nil, false, 0},
		{"default-watched", nil, true, 2},
		{"watched-unwatched", []postgres.Option{postgres.WithNotify(postgres.NotifyWatched)}, false, 0},
		{"all", []postgres.Option{postgres.WithNotify(postgres.NotifyAll)}, false, 2},
		{"all-watched", []postgres.Option{postgres.WithNotify(postgres.NotifyAll)}, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, 30*time.Second)
			c := open(t, dsn, tc.opts...)
			if tc.watched {
				w := open(t, dsn, postgres.WithPollInterval(noPolling))
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				if _, err := w.Watch(wctx, "k"); err != nil {
					t.Fatal(err)
				}
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(ctx, "LISTEN "+postgres.DefaultChannel); err != nil {
				t.Fatal(err)
			}
			g, err := c.Acquire(ctx, "k", "h", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Release(ctx, g); err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				// Both statements have committed: their notifications,
				// if any, are queued for this session already.
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				n, err := conn.WaitForNotification(wctx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, n.Payload)
			}
			if len(got) != tc.want {
				t.Errorf("notifications = %q; want %d", got, tc.want)
			}
		})
	}
}

// TestNotifyWatchedAfterWatchEnds: once the last watch of a key ends, its
// releases are no longer announced.
func TestNotifyWatchedAfterWatchEnds(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, 30*time.Second)
	c := open(t, dsn)
	w := open(t, dsn, postgres.WithPollInterval(noPolling))
	wctx, cancel := context.WithCancel(ctx)
	ch, err := w.Watch(wctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch, time.Second, "first event")
	g, err := c.Acquire(ctx, "k", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitFree(t, ch, 3*time.Second, g, "release while watched")
	cancel()
	for range ch { // the watch ends and lets go of its announcement
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var held int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d advisory locks held after the watch ended; want 0", held)
	}
}

// TestNotifyInvalid checks that an unknown mode is rejected, naming the
// option.
func TestNotifyInvalid(t *testing.T) {
	t.Parallel()
	_, err := postgres.Dial(ctxFor(t, 10*time.Second), newDB(t), postgres.WithNotify(postgres.Notify(7)))
	if !errors.Is(err, postgres.ErrInvalidOption) {
		t.Fatalf("Dial(WithNotify(7)) error = %v; want ErrInvalidOption", err)
	}
}
