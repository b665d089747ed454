#!/usr/bin/env bash
# Builds tenure as a release is built: first the guard's own program
# (cmd/tenure-guard, by go generate, into cmd/internal/guard/guardbin/bin/),
# then tenure, which embeds it. One file comes out (docs/build.md).
#
#   scripts/build.sh [OUTPUT [GO BUILD FLAGS...]]
#
# OUTPUT defaults to ./tenure. GOOS and GOARCH build for another platform:
#   GOOS=linux GOARCH=arm64 scripts/build.sh tenure-linux-arm64
# tenure is built without its symbol table and DWARF (-ldflags='-s -w'):
# 69 MB instead of 98, the same resident memory and start-up (panics and
# pprof still name functions); an -ldflags among the flags given replaces it.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-tenure}
shift $(( $# > 0 ? 1 : 0 ))

# Only this platform's guard: tenure embeds every file in bin/.
rm -f cmd/internal/guard/guardbin/bin/tenure-guard-*
go generate ./internal/guard/guardbin
read -r goos goarch < <(go env GOOS GOARCH | paste -sd' ')
prog=cmd/internal/guard/guardbin/bin/tenure-guard-$goos-$goarch
if [ ! -s "$prog" ]; then
  echo "scripts/build.sh: go generate did not build $prog" >&2
  exit 1
fi
go build -o "$out" -ldflags='-s -w' "$@" ./cmd/tenure
echo "built $out ($goos/$goarch), embedding $prog ($(wc -c <"$prog") bytes)"
