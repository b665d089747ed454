package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/postgres"
)

// TestNotifyModes checks which changes each mode announces: releases only
// by default, acquisitions too with NotifyAll.
func TestNotifyModes(t *testing.T) {
	tests := []struct {
		name string
		opts []postgres.Option
		want []string // payloads, in order, for an acquire then a release
	}{
		{"default", nil, []string{"k"}},
		{"releases", []postgres.Option{postgres.WithNotify(postgres.NotifyReleases)}, []string{"k"}},
		{"all", []postgres.Option{postgres.WithNotify(postgres.NotifyAll)}, []string{"k", "k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, 30*time.Second)
			c := open(t, dsn, tc.opts...)
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
			if len(got) != len(tc.want) {
				t.Errorf("notifications = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestNotifyInvalid checks that an unknown mode is rejected, naming the
// option.
func TestNotifyInvalid(t *testing.T) {
	_, err := postgres.Open(ctxFor(t, 10*time.Second), newDB(t), postgres.WithNotify(postgres.Notify(7)))
	if !errors.Is(err, postgres.ErrInvalidOption) {
		t.Fatalf("Open(WithNotify(7)) error = %v; want ErrInvalidOption", err)
	}
}
