package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/refusaltest"
)

// TestRefusalStopsRun: an etcd user whose role may read every key but
// write none dials (a read) and then has every write refused: an
// Elector's Run and a partition group's Run return the refusal, matching
// tenure.ErrRefused with etcd's own error beneath it, instead of
// retrying it without end.
func TestRefusalStopsRun(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	admin := newClient(t, eps)
	for _, step := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := admin.RoleAdd(ctx, "root"); return err },
		func(ctx context.Context) error { _, err := admin.UserAdd(ctx, "root", "s3cret"); return err },
		func(ctx context.Context) error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func(ctx context.Context) error { _, err := admin.RoleAdd(ctx, "reader"); return err },
		func(ctx context.Context) error {
			_, err := admin.RoleGrantPermission(ctx, "reader", "\x00", "\x00", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func(ctx context.Context) error { _, err := admin.UserAdd(ctx, "reader", "sesame"); return err },
		func(ctx context.Context) error { _, err := admin.UserGrantRole(ctx, "reader", "reader"); return err },
		func(ctx context.Context) error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(ctx(t)); err != nil {
			t.Fatalf("set up a read-only role: %v", err)
		}
	}
	// etcd checks a password with bcrypt: slow under -race on a loaded
	// machine, hence the long dial timeout.
	c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: eps, Username: "reader", Password: "sesame", DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Dial as a reader: %v", err)
	}
	defer c.Close()
	refusaltest.Stops(t, c, "jobs", func(err error) bool {
		var ee rpctypes.EtcdError
		return errors.As(err, &ee)
	})
}

// TestRefusalClasses: etcd's answers that waiting does not change (a
// permission, a password, a user name missing) match tenure.ErrRefused,
// with etcd's error still beneath; timeouts, a lost leader, an expired
// auth token (the client authenticates again) and a cancelled context do
// not.
func TestRefusalClasses(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{rpctypes.ErrPermissionDenied, true},
		{rpctypes.ErrGRPCPermissionDenied, true},
		{rpctypes.ErrAuthFailed, true},
		{rpctypes.ErrUserEmpty, true},
		{rpctypes.ErrTimeout, false},
		{rpctypes.ErrNoLeader, false},
		{rpctypes.ErrGRPCNoLeader, false},
		{rpctypes.ErrInvalidAuthToken, false},
		{rpctypes.ErrTooManyRequests, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
	} {
		got := etcd.Refusal(fmt.Errorf("etcd: acquire: %w", tc.err))
		if errors.Is(got, tenure.ErrRefused) != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("refusal(%v) = %v; want matching tenure.ErrRefused: %t, and still %v", tc.err, got, tc.want, tc.err)
		}
	}
}
