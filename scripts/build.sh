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
# The same -ldflags sets what "tenure version" prints: VERSION (default: the
# tag at HEAD, else git describe) and the commit.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-tenure}
shift $(( $# > 0 ? 1 : 0 ))

# Only this platform's guard: tenure embeds every file in bin/.
rm -f cmd/internal/guard/guardbin/bin/tenure-guard-*
go generate ./cmd/internal/guard/guardbin
read -r goos goarch < <(go env GOOS GOARCH | paste -sd' ')
prog=cmd/internal/guard/guardbin/bin/tenure-guard-$goos-$goarch
if [ ! -s "$prog" ]; then
  echo "scripts/build.sh: go generate did not build $prog" >&2
  exit 1
fi
pkg=github.com/tenure-dev/tenure/cmd/internal/cli
version=${VERSION:-$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo '(devel)')}
commit=$(git rev-parse HEAD 2>/dev/null || true)
go build -o "$out" -ldflags="-s -w -X $pkg.linkVersion=$version -X $pkg.linkRevision=$commit" "$@" ./cmd/tenure
echo "built $out ($goos/$goarch), embedding $prog ($(wc -c <"$prog") bytes)"
