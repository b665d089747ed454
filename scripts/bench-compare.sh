#!/usr/bin/env bash
# Compares two tenure binaries on the same machine in the same run: each
# benchmark is run with OLD and NEW alternately in ABBA order (old new new
# old old new ...), so load that drifts during the run weighs on both alike.
# Each run starts its own embedded etcd (bench's default). The load average
# is recorded beside each run. Prints one line a run (tenure's p50 and p99,
# the peer's that bench runs beside it, and tenure's p50 over the peer's,
# which the machine's load moves less), then each binary's median of those
# and NEW/OLD, then each binary's samples pooled over its runs (p50, p99)
# and NEW/OLD.
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
# Medians per benchmark and binary, and NEW/OLD; then every sample of a
# binary's runs pooled (bench's "series"), its p50 and p99, and NEW/OLD.
python3 - "$summary" "$out" <<'EOF'
import csv, glob, json, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cols = ["tenure_p50_ms", "tenure_p99_ms", "peer_p50_ms", "peer_p99_ms",
        "tenure_over_peer_p50"]
line = "%-9s %-28s %10s %10s %7s"
print(line % ("bench", "median of runs", "old", "new", "new/old"))
benches = list(dict.fromkeys(r["bench"] for r in rows))
for b in benches:
    for c in cols:
        med = {w: statistics.median(float(r[c]) for r in rows
                                    if r["bench"] == b and r["binary"] == w)
               for w in ("old", "new")}
        print(line % (b, c, "%.3f" % med["old"], "%.3f" % med["new"],
                      "%.3f" % (med["new"] / med["old"])))


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


print()
print(line % ("bench", "pooled samples", "old", "new", "new/old"))
for b in benches:
    pooled = {}
    for f in glob.glob(os.path.join(sys.argv[2], b + "-*.json")):
        w = f.rsplit("-", 1)[1].split(".")[0]
        for s in json.load(open(f))["series"]:
            pooled.setdefault((s["impl"], w), []).extend(s["samples_ms"])
    for impl in dict.fromkeys(i for i, _ in sorted(pooled)):
        for name, p in (("p50", 0.5), ("p99", 0.99)):
            v = {w: pct(pooled[(impl, w)], p) for w in ("old", "new")}
            label = "%s %s (n=%d)" % (impl, name, len(pooled[(impl, "new")]))
            print(line % (b, label, "%.3f" % v["old"], "%.3f" % v["new"],
                          "%.3f" % (v["new"] / v["old"])))
EOF
