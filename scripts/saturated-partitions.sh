#!/usr/bin/env bash
# A partition group of separate `tenure run --partitions` processes on a
# saturated machine, measured from the outside.
#
#   scripts/saturated-partitions.sh                      # embedded etcd (tenure server)
#   scripts/saturated-partitions.sh --postgres "$DSN"    # PostgreSQL
#   scripts/saturated-partitions.sh --help
#
# Each run: N members (separate processes, TTL 2 s) start together beside
# busy loops (2 per core), and the script measures the time until every
# partition's command runs (target: within 3 TTLs); then member N+1 joins
# and the script counts the partitions whose holder changed between the
# settled tables before and after (target: at most ⌈P/(N+1)⌉ + 1). With
# --small-join (the default) two members then leave and one joins a group
# of N-1, counted the same way against ⌈P/N⌉ + 1. tenure is built as a
# release is (scripts/build.sh, the guard's program embedded) unless
# --plain-build. Everything listens on 127.0.0.1 only. Exits 1 when a
# target is missed. The figures are in docs/speed.md.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: scripts/saturated-partitions.sh [flags]

  --postgres DSN      use PostgreSQL at DSN (default: a tenure server, embedded etcd)
  --runs R            runs (default 5)
  --partitions P      partitions (default 24)
  --members N         members started together (default 3); one more joins
  --ttl D             lease TTL, a Go duration in whole seconds (default 2s)
  --busy B            busy loops beside the members (default 2 per core: 2 × nproc)
  --small-join 0|1    also count a join into a group of N-1 (default 1)
  --timeout S         seconds to wait for a phase before it fails (default 60)
  --log-level L       the members' --log-level (default info)
  --plain-build       build with a plain `go build` (no embedded guard program:
                      tenure re-executes itself as each command's guard)
                      instead of scripts/build.sh, as a release is built;
                      refused while cmd/internal/guard/guardbin/bin/ holds a
                      program from go generate, which go build embeds
  --keep              keep the temporary directory (members' logs) at the end
  -h, --help          this help

Figures per run: time from the members' start until every partition's
command runs (in seconds and TTLs: the moment the last of the commands of
the partitions' current terms started), then for each join: the moves (the
partitions whose holder changed between the settled tables), the command
starts after the join (a partition moved twice starts twice) and the time
to settle (every member owning ⌊P/N⌋ or ⌈P/N⌉, nothing unowned, the table
unchanged for one TTL). The load averages (uptime) come with each run.
EOF
}

dsn=""
runs=5
parts=24
members=3
ttl=2s
busy=$((2 * $(nproc)))
small_join=1
timeout=60
log_level=info
keep=0
plain=0
while [ $# -gt 0 ]; do
  case $1 in
    --postgres|--runs|--partitions|--members|--ttl|--busy|--small-join|--timeout|--log-level)
      if [ $# -lt 2 ]; then
        echo "saturated-partitions.sh: $1 needs a value (see --help)" >&2
        exit 2
      fi ;;
  esac
  case $1 in
    --postgres) dsn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --partitions) parts=$2; shift 2 ;;
    --members) members=$2; shift 2 ;;
    --ttl) ttl=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --small-join) small_join=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --log-level) log_level=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --plain-build) plain=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "saturated-partitions.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
ttl_s=${ttl%s}
if ! [[ $ttl_s =~ ^[0-9]+$ ]] || [ "$ttl_s" -lt 1 ]; then
  echo "saturated-partitions.sh: --ttl must be whole seconds, like 2s" >&2
  exit 2
fi
# whole NAME VALUE MIN: the flag's value must be a whole number, at least MIN.
whole() {
  if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ]; then
    echo "saturated-partitions.sh: $1 must be a whole number, at least $3; got \"$2\"" >&2
    exit 2
  fi
}
whole --runs "$runs" 1
whole --partitions "$parts" 1
whole --members "$members" 2
whole --busy "$busy" 0
whole --timeout "$timeout" 1
if [ "$small_join" != 0 ] && [ "$small_join" != 1 ]; then
  echo "saturated-partitions.sh: --small-join must be 0 or 1; got \"$small_join\"" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/saturated-partitions.XXXXXX")
pids=()     # every process started, killed at exit
busy_pids=()
cleanup() {
  local p
  for p in "${pids[@]}" "${busy_pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}" "${busy_pids[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ "$keep" = 1 ]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { echo "$EPOCHREALTIME"; }
# sub A B prints A-B, seconds with 2 decimals.
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
ttls() { awk -v s="$1" -v t="$ttl_s" 'BEGIN { printf "%.2f", s / t }'; }
ceil_div() { echo $(( ($1 + $2 - 1) / $2 )); }

if [ "$plain" = 1 ]; then
  echo "building tenure (plain go build: no embedded guard, tenure re-executes itself as each guard)"
  (cd cmd && go build -o "$tmp/tenure" ./tenure)
else
  echo "building tenure as a release is built (scripts/build.sh: the guard's own program embedded)"
  scripts/build.sh "$tmp/tenure" >/dev/null
fi
tenure=$tmp/tenure
guard=$("$tenure" version | sed -n 's/.*guard: \([^)]*\)).*/\1/p')
echo "guard: $guard"
if [ "$plain" = 1 ] && [ "$guard" = embedded ]; then
  echo "saturated-partitions.sh: --plain-build embedded a guard program all the same: cmd/internal/guard/guardbin/bin/ holds one from an earlier go generate (scripts/build.sh); remove it for a build without" >&2
  exit 2
fi

coord=()
if [ -n "$dsn" ]; then
  coord=(--postgres "$dsn")
  backend=postgres
else
  backend=etcd
  "$tenure" server --data-dir "$tmp/etcd" --listen-client http://127.0.0.1:0 \
    --listen-peer http://127.0.0.1:0 --http "" --prefix unwatched/ \
    >"$tmp/server.out" 2>"$tmp/server.log" &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q 'ready:' "$tmp/server.out" 2>/dev/null && break
    sleep 0.1
  done
  url=$(sed -n 's/.*clients=\([^ ]*\).*/\1/p' "$tmp/server.out")
  if [ -z "$url" ]; then
    echo "saturated-partitions.sh: tenure server did not start:" >&2
    cat "$tmp/server.log" >&2
    exit 1
  fi
  coord=(--endpoints "$url")
  echo "tenure server at $url"
fi

echo "starting $busy busy loops"
for _ in $(seq "$busy"); do
  sh -c 'while :; do :; done' &
  busy_pids+=($!)
done
sleep 2

# The command each member runs per owned partition: it marks its start
# (partition, token, time) and sleeps until stopped.
cmd='echo "$EPOCHREALTIME" >"$SAT_MARKS/$TENURE_PARTITION.$TENURE_FENCING_TOKEN"; exec sleep 100000'

# start_member RUN NAME starts member NAME of run RUN; its pid is in
# mpid[NAME].
declare -A mpid
start_member() {
  local dir=$tmp/run$1
  SAT_MARKS=$dir/marks "$tenure" run "${coord[@]}" --key "$key" --partitions "$parts" \
    --ttl "$ttl" --holder "$2" --log-level "$log_level" -- bash -c "$cmd" \
    >"$dir/$2.out" 2>"$dir/$2.log" &
  pids+=($!)
  mpid[$2]=$!
}

stop_member() {
  local p=${mpid[$1]}
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}

# status RUN writes the group's table, as JSON, to RUN's status.json.
status() {
  local dir=$tmp/run$1
  timeout 20 "$tenure" status "${coord[@]}" --key "$key" --partitions "$parts" --json \
    >"$dir/status.tmp" 2>>"$dir/status.log" || return 1
  mv "$dir/status.tmp" "$dir/status.json"
}

# running RUN prints "COUNT LAST": how many partitions are held by a term
# whose command has started, and the latest of those commands' starts.
running() {
  local dir=$tmp/run$1
  jq -r '.partitions[] | select(.held) | "\(.partition) \(.token)"' "$dir/status.json" >"$dir/held.txt"
  awk -v d="$dir/marks" '
    { f = d "/" $1 "." $2; at = ""
      if ((getline at < f) > 0) { n++; if (at + 0 > last + 0) last = at }
      close(f) }
    END { printf "%d %s\n", n, (last == "" ? 0 : last) }' "$dir/held.txt"
}

# settled RUN N prints the table (one "partition holder token" line each)
# when N members own every partition, each ⌊P/N⌋ or ⌈P/N⌉; nothing otherwise.
settled() {
  jq -r --argjson n "$2" '
    (.partitions | length) as $p
    | ($p / $n | floor) as $lo | (($p + $n - 1) / $n | floor) as $hi
    | if (.members | length) == $n and .unowned == 0
         and all(.members[]; .owned >= $lo and .owned <= $hi)
      then .partitions[] | "\(.partition) \(.holder) \(.token)" else empty end' \
    "$tmp/run$1/status.json"
}

# wait_settled RUN N SINCE waits until the table is settled for N members,
# with the same holders for one TTL, writes it to RUN's settled.txt and prints the
# seconds since SINCE at which it first had that table; fails after the
# timeout.
wait_settled() {
  local dir=$tmp/run$1 prev="" since_t="" cur tab start
  start=$(now)
  while :; do
    if status "$1"; then
      tab=$(settled "$1" "$2")
      cur=$(cut -d' ' -f1,2 <<<"$tab") # holders only: tokens change when a command restarts in place
      if [ -n "$tab" ] && [ "$cur" = "$prev" ]; then
        if awk -v d="$(sub "$(now)" "$since_t")" -v t="$ttl_s" 'BEGIN { exit !(d >= t) }'; then
          printf '%s\n' "$tab" >"$dir/settled.txt"
          sub "$since_t" "$3"
          return 0
        fi
      elif [ -n "$tab" ]; then
        prev=$cur
        since_t=$(now)
      else
        prev=""
      fi
    fi
    if awk -v d="$(sub "$(now)" "$start")" -v t="$timeout" 'BEGIN { exit !(d > t) }'; then
      return 1
    fi
    sleep 0.2
  done
}

# moves BEFORE AFTER prints "MOVES REGRANTS": partitions whose holder
# changed, and those with the same holder but another token.
moves() {
  sort -k1,1 "$1" >"$1.sorted"
  sort -k1,1 "$2" >"$2.sorted"
  join "$1.sorted" "$2.sorted" |
    awk '$2 != $4 { m++ } $2 == $4 && $3 != $5 { r++ } END { printf "%d %d\n", m, r }'
}

# starts_after RUN T counts the commands started after T.
starts_after() {
  cat "$tmp/run$1"/marks/* 2>/dev/null | awk -v t="$2" '$1 + 0 > t + 0 { n++ } END { print n + 0 }'
}

warnings() {
  local dir=$tmp/run$1
  grep -h -o 'level=\(WARN\|ERROR\) msg="[^"]*"' "$dir"/m*.log 2>/dev/null | sort | uniq -c | sort -rn | head -5 |
    sed 's/^/    member log: /' || true
}

# join_phase RUN N NAME: member NAME joins a settled group of N-1 members;
# sets jp to "MOVES REGRANTS STARTS SETTLE_S", or "fail". (Not in a
# subshell: the member's pid must reach cleanup.)
join_phase() {
  local dir=$tmp/run$1 t_join settle
  cp "$dir/settled.txt" "$dir/before.txt"
  t_join=$(now)
  start_member "$1" "$3"
  if ! settle=$(wait_settled "$1" "$2" "$t_join"); then
    jp=fail
    return
  fi
  jp="$(moves "$dir/before.txt" "$dir/settled.txt") $(starts_after "$1" "$t_join") $settle"
}

target_ttls=3
join_cap=$(( $(ceil_div "$parts" $((members + 1))) + 1 ))
small_cap=$(( $(ceil_div "$parts" "$members") + 1 ))
missed=0
res_start=()
res_moves=()
res_small=()
echo "backend $backend, P=$parts, N=$members (+1 joining), TTL $ttl, $busy busy loops on $(nproc) cores, $runs runs, guard $guard"
for r in $(seq "$runs"); do
  key=sat-$$-$r
  dir=$tmp/run$r
  mkdir -p "$dir/marks"
  mpid=()
  load_before=$(uptime | sed 's/.*load average: //')
  t0=$(now)
  for m in $(seq "$members"); do start_member "$r" "m$m"; done
  all_at=""
  at10=""
  while :; do
    elapsed=$(sub "$(now)" "$t0")
    if status "$r"; then
      res=$(running "$r")
      read -r n last <<<"$res"
      if [ -z "$at10" ] && awk -v e="$elapsed" 'BEGIN { exit !(e >= 10) }'; then at10=$n; fi
      if [ "$n" -eq "$parts" ]; then
        all_at=$(sub "$last" "$t0")
        break
      fi
    fi
    if awk -v e="$elapsed" -v t="$timeout" 'BEGIN { exit !(e > t) }'; then break; fi
    sleep 0.2
  done
  line="run $r: load $load_before"
  if [ -z "$all_at" ]; then
    line+=", all running: NOT within ${timeout}s (${n:-0} of $parts running, ${at10:-?} after 10 s)"
    missed=1
    res_start+=(999)
    echo "$line"
    warnings "$r"
    for m in "${!mpid[@]}"; do stop_member "$m"; done
    continue
  fi
  res_start+=("$all_at")
  line+=", all $parts running after ${all_at}s ($(ttls "$all_at") TTLs)"
  if awk -v a="$all_at" -v t="$((target_ttls * ttl_s))" 'BEGIN { exit !(a > t) }'; then missed=1; line+=" MISSED"; fi

  if ! wait_settled "$r" "$members" "$t0" >/dev/null; then
    echo "$line, never settled at N=$members"
    warnings "$r"
    missed=1
    res_moves+=(999)
    for m in "${!mpid[@]}"; do stop_member "$m"; done
    continue
  fi
  join_phase "$r" $((members + 1)) "m$((members + 1))"
  read -r mv rg st settle <<<"$jp"
  if [ "$mv" = fail ]; then
    line+=", join to N=$((members + 1)): never settled"
    missed=1
    res_moves+=(999)
  else
    res_moves+=("$mv")
    line+=", join to N=$((members + 1)): $mv moves (≤ $join_cap), $rg re-granted, $st starts, settled after ${settle}s"
    [ "$mv" -le "$join_cap" ] || { missed=1; line+=" MISSED"; }
  fi

  if [ "$small_join" = 1 ] && [ "$mv" != fail ]; then
    # Two planned leaves (m1, m2) leave N-1; then one joins a group of N-1.
    stop_member m1
    stop_member m2
    if wait_settled "$r" $((members - 1)) "$(now)" >/dev/null; then
      join_phase "$r" "$members" "m$((members + 2))"
      read -r mv2 rg2 st2 settle2 <<<"$jp"
      if [ "$mv2" = fail ]; then
        line+="; join to N=$members: never settled"
        missed=1
        res_small+=(999)
      else
        res_small+=("$mv2")
        line+="; join to N=$members: $mv2 moves (≤ $small_cap), $rg2 re-granted, $st2 starts, settled after ${settle2}s"
        [ "$mv2" -le "$small_cap" ] || { missed=1; line+=" MISSED"; }
      fi
    else
      line+="; after two leaves: never settled at N=$((members - 1))"
      missed=1
      res_small+=(999)
    fi
  fi
  line+="; load after $(uptime | sed 's/.*load average: //')"
  echo "$line"
  warnings "$r"
  for m in "${!mpid[@]}"; do stop_member "$m"; done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
max() { printf '%s\n' "$@" | sort -g | tail -1; }
echo
echo "summary ($backend, P=$parts, N=$members, TTL $ttl, $busy busy loops, $runs runs, guard $guard):"
ms=$(max "${res_start[@]}")
echo "  all running: max ${ms}s ($(ttls "$ms") TTLs), median $(median "${res_start[@]}")s ($(ttls "$(median "${res_start[@]}")") TTLs); target ≤ $target_ttls TTLs"
if [ ${#res_moves[@]} -gt 0 ]; then
  echo "  join to N=$((members + 1)): max $(max "${res_moves[@]}") moves, median $(median "${res_moves[@]}"); target ≤ $join_cap"
fi
if [ ${#res_small[@]} -gt 0 ]; then
  echo "  join to N=$members: max $(max "${res_small[@]}") moves, median $(median "${res_small[@]}"); target ≤ $small_cap"
fi
if [ "$missed" = 1 ]; then
  echo "  TARGET MISSED"
  exit 1
fi
echo "  every target met"
