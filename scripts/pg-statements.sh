#!/usr/bin/env bash
# Where the PostgreSQL server's time goes in the ops benchmark
# (BenchmarkPostgresCoordinator/ops: acquire, renew, release cycles, tenure
# beside the seed's plain SQL): starts a throwaway server as
# internal/pgtest starts one, plus pg_stat_statements, runs the benchmark
# against it (TENURE_TEST_POSTGRES), and prints one row a statement that
# ran at least 100 times: side (tenure or seed), calls a cycle, mean
# executor time, plans made and their mean time, shared buffers and WAL
# records a call, and the statement's first words. A cycle is one renewal
# (each side renews once a cycle, with one statement), so calls a cycle
# count the statements an operation takes. The executor time excludes
# parsing, planning, executor start-up and commit, and on a loaded machine
# includes time the server process waited for a CPU.
#
#   scripts/pg-statements.sh [CLIENTS] [BENCHTIME]
#
# CLIENTS 1 or 10 (default 10), BENCHTIME as go test -benchtime (default
# 4s). Needs initdb, pg_ctl and psql (PATH, else the newest
# /usr/lib/postgresql/*/bin) and the pg_stat_statements module; as root,
# runs the server as the user postgres (TENURE_PGTEST_USER).
set -euo pipefail

clients=${1:-10}
benchtime=${2:-4s}
cd "$(dirname "$0")/.."

if ! command -v initdb >/dev/null; then
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	[ -n "$bin" ] || { echo "$0: no initdb on PATH or in /usr/lib/postgresql" >&2; exit 1; }
	PATH=$bin:$PATH
fi
dir=$(mktemp -d /tmp/tenure-pg-statements.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then
	user=${TENURE_PGTEST_USER:-postgres}
	chown "$user" "$dir"
	as=(runuser -u "$user" --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"
stop() { "${as[@]}" pg_ctl -D "$dir/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap stop EXIT

"${as[@]}" initdb -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
# The settings of internal/pgtest (server.go), and pg_stat_statements.
"${as[@]}" pg_ctl -D "$dir/data" -l "$dir/log" -w -o "-p $port -k $dir -c listen_addresses=127.0.0.1 \
-c fsync=off -c full_page_writes=off -c shared_buffers=32MB -c max_connections=200 \
-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on" start >/dev/null
psql -X -q "$dsn" -c 'CREATE EXTENSION pg_stat_statements'

(cd cmd && TENURE_TEST_POSTGRES=$dsn go test -count=1 -run '^$' \
	-bench "PostgresCoordinator/ops/clients=$clients\$" -benchtime "$benchtime" ./internal/bench/) |
	grep -E '^Benchmark|^(ok|FAIL)'

# The benchmark's database is dropped when it ends: its statements are those
# of a database that no longer exists. The renewals name the row's token
# ($3) and a TTL: tenure's is renewSQL (WITH locked ...), the seed's
# SeedRenew (cmd/internal/bench/seed.go).
psql -X -q "$dsn" <<'SQL'
CREATE TEMP VIEW s AS
	SELECT *, CASE WHEN query LIKE '%tenure_bench_seed%' THEN 'seed' ELSE 'tenure' END AS side
	FROM pg_stat_statements
	WHERE dbid NOT IN (SELECT oid FROM pg_database) AND calls >= 100;
CREATE TEMP VIEW cycles AS
	SELECT side, sum(calls) AS n FROM s
	WHERE query LIKE 'WITH locked AS MATERIALIZED%' OR query LIKE 'UPDATE tenure_bench_seed SET expires_at = CURRENT_TIMESTAMP%'
	GROUP BY side;

SELECT s.side, round(s.calls / c.n, 3) AS per_cycle,
       round((mean_exec_time * 1000)::numeric, 1) AS exec_us, plans,
       round((mean_plan_time * 1000)::numeric) AS plan_us,
       round(shared_blks_hit::numeric / s.calls, 1) AS blks,
       round(wal_records::numeric / s.calls, 2) AS wal_recs,
       left(regexp_replace(query, '\s+', ' ', 'g'), 60) AS statement
FROM s JOIN cycles c USING (side)
ORDER BY s.side DESC, s.calls DESC, s.mean_exec_time DESC;

SELECT side, c.n AS cycles, round(sum(s.calls) / c.n, 3) AS statements_per_cycle,
       round((sum(total_exec_time) * 1000 / c.n)::numeric, 1) AS exec_us_per_cycle,
       round(sum(wal_records)::numeric / c.n, 2) AS wal_recs_per_cycle
FROM s JOIN cycles c USING (side)
GROUP BY side, c.n ORDER BY side DESC;
SQL
