#!/usr/bin/env bash
# Measures every figure of docs/speed.md in one run and writes the page:
# builds tenure as a release is built (scripts/build.sh), runs each
# benchmark the page cites with --json, one after the other (each etcd
# benchmark on an etcd member of its own, PostgreSQL on a server started
# here from the installed binaries), keeps what they printed, with the
# commit, the machine and the date, in docs/speed.json, and renders
# docs/speed.md from it (cmd/internal/speeddoc). Ten to fifteen minutes.
#
#   scripts/speed.sh
#
# Run it on a clean tree at the commit to describe, then commit both files:
# cmd/internal/speeddoc's tests fail when the page was measured too many
# coordinator commits ago, or was edited by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

start=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "speed: building tenure and cmd/internal/speeddoc"
scripts/build.sh "$tmp/tenure"
go build -o "$tmp/speeddoc" ./cmd/internal/speeddoc
"$tmp/speeddoc" measure -tenure "$tmp/tenure" -out "$tmp/speed.json"
cp "$tmp/speed.json" docs/speed.json
"$tmp/speeddoc" render -in docs/speed.json -out docs/speed.md
echo "speed: wrote docs/speed.json and docs/speed.md in $((SECONDS - start))s"
