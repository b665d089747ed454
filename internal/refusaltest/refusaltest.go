// Package refusaltest checks, on a real coordinator whose role the server
// refuses for good, that an Elector's Run and a partition group's Run
// return the refusal (an error matching tenure.ErrRefused) instead of
// retrying it: the same check for every backend.
package refusaltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// Bound is how long a Run may take to return the refusal: a first call,
// with a retry's slack on a loaded machine. Not a speed: a Run that
// retries a refusal never returns at all.
const Bound = 30 * time.Second

// Stops runs an Elector for key, then a partition group named key+"-group",
// each without a logger, on c, whose calls the server refuses, and checks
// that each Run returns within Bound an error that matches
// tenure.ErrRefused and that own accepts (the backend's own error, found
// with errors.As).
func Stops(t *testing.T, c partition.Coordinator, key string, own func(error) bool) {
	t.Helper()
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL = key, "reader", 5*time.Second
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Elector.Run", own, func(ctx context.Context) error {
		return e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error {
			t.Error("Elector.Run led: the coordinator granted a key to a role it refuses")
			<-ctx.Done()
			return nil
		})
	})

	pc := partition.DefaultConfig()
	pc.Key, pc.Holder, pc.Partitions, pc.TTL = key+"-group", "reader", 2, 5*time.Second
	g, err := partition.New(c, pc)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Group.Run", own, func(ctx context.Context) error {
		return g.Run(ctx, func(ctx context.Context, _ partition.Partition, _ *tenure.Term) error {
			t.Error("Group.Run ran a partition: the coordinator granted one to a role it refuses")
			<-ctx.Done()
			return nil
		})
	})
}

// check runs run with a context bounded by Bound and checks its error.
func check(t *testing.T, what string, own func(error) bool, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Bound)
	defer cancel()
	start := time.Now()
	err := run(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		t.Errorf("%s still running %s after it started, on a coordinator that refuses every write (it retries a refusal); want it returned with an error matching tenure.ErrRefused", what, Bound)
	case !errors.Is(err, tenure.ErrRefused) || !own(err):
		t.Errorf("%s = %v; want an error matching tenure.ErrRefused that wraps the coordinator's own", what, err)
	default:
		t.Logf("%s returned after %s: %v", what, time.Since(start).Round(time.Millisecond), err)
	}
}
