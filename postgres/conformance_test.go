package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/tenuretest"
)

func TestConformance(t *testing.T) {
	srv := server(t)
	dsn := newDB(t)
	opts := []tenuretest.Option{tenuretest.WithTTL(time.Second)}
	if !srv.External() {
		opts = append(opts, tenuretest.WithRestart(func(t *testing.T) {
			if err := srv.Restart(ctxFor(t, time.Minute), pgtest.Immediate); err != nil {
				t.Fatalf("restart PostgreSQL: %v", err)
			}
		}))
	}
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return open(t, dsn)
	}, opts...)
}
