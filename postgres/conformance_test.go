package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/postgres"
	"github.com/tenure-dev/tenure/tenuretest"
)

func TestConformance(t *testing.T) {
	srv := server(t)
	dsn := newDB(t)
	opts := []tenuretest.Option{tenuretest.WithTTL(time.Second), tenuretest.WithEdits(edits(open(t, dsn)))}
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

// edits edit a grant's row of the default leadership table on admin's
// database, as an operator with psql could: expires_at moved to d from now
// (the database's), or the row deleted.
func edits(admin *postgres.Coordinator) tenuretest.Edits {
	exec := func(tb testing.TB, g tenure.Grant, sql string, args ...any) {
		tb.Helper()
		tag, err := admin.Pool().Exec(ctxFor(tb, 30*time.Second), sql, append([]any{g.Key, int64(g.Token)}, args...)...)
		if err != nil || tag.RowsAffected() != 1 {
			tb.Fatalf("%s (%v): %v rows, error %v; want its one row edited", sql, g, tag.RowsAffected(), err)
		}
	}
	const moveExpiry = `UPDATE public.cluster_leadership SET expires_at = CURRENT_TIMESTAMP + $3 * interval '1 microsecond'
WHERE resource = $1 AND fencing_token = $2`
	setExpiry := func(tb testing.TB, g tenure.Grant, d time.Duration) {
		tb.Helper()
		exec(tb, g, moveExpiry, d.Microseconds())
	}
	return tenuretest.Edits{
		Lengthen: setExpiry,
		Shorten:  setExpiry,
		Remove: func(tb testing.TB, g tenure.Grant) {
			tb.Helper()
			exec(tb, g, `DELETE FROM public.cluster_leadership WHERE resource = $1 AND fencing_token = $2`)
		},
	}
}
