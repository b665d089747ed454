#!/usr/bin/env bash
# CI's guard against gross speed regressions: short side-by-side runs of
# the ratios that have goals (docs/speed.md), each against a floor far
# below its goal (cmd/internal/speeddoc/guard.go):
#   - etcd handover p50: tenure at most 2× concurrency.Election;
#   - PostgreSQL acquire/renew/release per second at 1 and 10 clients:
#     tenure at least 0.3× the seed SQL;
#   - a partition group of 2,000 partitions over 4 members on etcd fully
#     owned within 10 s.
# Every figure is printed, passing or not. A check under its floor runs
# once more; under it twice, the guard fails (exit 1). About a minute.
#
#   scripts/speed-guard.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Without the symbol table and DWARF (as scripts/build.sh): links faster.
go build -ldflags='-s -w' -o "$tmp/" ./cmd/tenure ./cmd/internal/speeddoc
"$tmp/speeddoc" guard -tenure "$tmp/tenure" 2>"$tmp/progress" || {
  status=$?
  echo "speed guard: tenure bench's progress:" >&2
  tail -n 40 "$tmp/progress" >&2
  exit "$status"
}
