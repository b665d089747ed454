#!/usr/bin/env bash
# Compares two tenure binaries on the same machine in the same run: each
# benchmark is run with OLD and NEW alternately in ABBA order (old new new
# old old new ...), so load that drifts during the run weighs on both alike.
# Each run starts its own embedded etcd (bench's default). The load average
# is recorded beside each run. Prints one line a run (tenure's p50 and p99,
# and the peer's bench runs beside it), then the median of each binary and
# the NEW/OLD ratio of the medians.
#
#   scripts/bench-compare.sh OLD NEW [RUNS] [BENCHMARK...]
#
# RUNS (default 3) runs of each binary per benchmark; BENCHMARK defaults to
# handover failover. Extra flags for every run go in BENCH_FLAGS. The JSON
# each run printed is kept in $OUT (default: a new temporary directory).
set -euo pipefail

if [ $# -lt 2 ]; then
	echo "usage: $0 OLD NEW [RUNS] [BENCHMARK...]" >&2
	exit 2
fi
old=$1 new=$2
runs=${3:-3}
shift $(($# < 3 ? $# : 3))
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(handover failover)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "bench-compare: runs in $out" >&2

# order prints the binaries of RUNS pairs in ABBA order.
order() {
	local i
	for ((i = 0; i < runs; i++)); do
		if ((i % 2 == 0)); then echo old new; else echo new old; fi
	done
}

summary="$out/summary.tsv"
printf 'bench\tbinary\trun\tload1\ttenure_p50_ms\ttenure_p99_ms\tpeer\tpeer_p50_ms\tpeer_p99_ms\ttenure_over_peer_p50\n' >"$summary"
for b in "${benches[@]}"; do
	n=0
	for which in $(order); do
		n=$((n + 1))
		bin=$old
		[ "$which" = new ] && bin=$new
		load=$(cut -d' ' -f1 /proc/loadavg)
		f="$out/$b-$n-$which.json"
		echo "bench-compare: $b run $n ($which), load $load: $(uptime)" >&2
		# shellcheck disable=SC2086
		"$bin" bench "$b" --json ${BENCH_FLAGS:-} >"$f" 2>"$out/$b-$n-$which.err"
		jq -r --arg b "$b" --arg w "$which" --arg n "$n" --arg l "$load" '
			(.rows[] | select(.impl == "tenure")) as $t
			| (.rows[] | select(.impl == $t.peer)) as $p
			| [$b, $w, $n, $l, $t.latency.p50_ms, $t.latency.p99_ms,
			   $t.peer, $p.latency.p50_ms, $p.latency.p99_ms,
			   ($t.latency.p50_ms / $p.latency.p50_ms * 1000 | round / 1000)] | @tsv' "$f" >>"$summary"
	done
done

column -t -s $'\t' "$summary"
echo
# Medians per benchmark and binary, and NEW/OLD.
python3 - "$summary" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cols = ["tenure_p50_ms", "tenure_p99_ms", "peer_p50_ms", "peer_p99_ms",
        "tenure_over_peer_p50"]
print("%-9s %-20s %10s %10s %7s" % ("bench", "figure", "old", "new", "new/old"))
for b in dict.fromkeys(r["bench"] for r in rows):
    for c in cols:
        med = {w: statistics.median(float(r[c]) for r in rows
                                    if r["bench"] == b and r["binary"] == w)
               for w in ("old", "new")}
        print("%-9s %-20s %10.3f %10.3f %7.3f" % (b, c, med["old"], med["new"],
                                                  med["new"] / med["old"]))
EOF
