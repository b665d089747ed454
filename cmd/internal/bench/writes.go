package bench

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// EtcdWrites counts the writes of an etcd server running in this process,
// at the server: its committed raft proposals plus its lease renewals
// (etcd's own metrics, on the default Prometheus registry).
func EtcdWrites(context.Context) (int64, error) {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0, err
	}
	return etcdWrites(mfs), nil
}

// EtcdWritesAt counts the writes of the etcd members whose Prometheus
// endpoints are urls (`tenure server --http`'s /metrics), at the servers:
// as EtcdWrites, summed over the members (each member counts every
// proposal committed, the leader the lease renewals).
func EtcdWritesAt(urls []string) func(context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		var n int64
		for _, u := range urls {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return 0, fmt.Errorf("metrics %s: %w", u, err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, fmt.Errorf("metrics %s: %w", u, err)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := p.TextToMetricFamilies(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return 0, fmt.Errorf("metrics %s: %w", u, err)
			}
			n += etcdWrites(slices.Collect(maps.Values(mfs)))
		}
		return n, nil
	}
}

// etcdWrites sums an etcd member's committed raft proposals and lease
// renewals.
func etcdWrites(mfs []*dto.MetricFamily) int64 {
	var n float64
	for _, mf := range mfs {
		switch mf.GetName() {
		case "etcd_server_proposals_committed_total", "etcd_debugging_lease_renewed_total":
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return int64(n)
}

// PostgresGroupWritesLag is how late PostgresGroupWrites may count a
// write: a server process that went idle reports its statistics within
// 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL), and the count is read from
// them.
const PostgresGroupWritesLag = 11 * time.Second

// PostgresGroupWrites counts the rows written to tenure's partition-group
// tables in the database dsn names, at the server (pg_stat_user_tables).
func PostgresGroupWrites(ctx context.Context, dsn string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
FROM pg_stat_user_tables WHERE relname IN ('cluster_leadership_members', 'cluster_leadership_partitions')`).Scan(&n)
	return n, err
}
