#!/usr/bin/env bash
# Runs every Go fuzz target of the module (each `func FuzzX(f *testing.F)`
# in a _test.go file) for a while, one at a time, and fails if any fails.
#
#   scripts/fuzz.sh            # 5s each
#   scripts/fuzz.sh 30s        # 30s each
#   scripts/fuzz.sh 5s FuzzRedactDSN FuzzParseToken   # only these
#
# A failing input is written under the package's testdata/fuzz/FuzzX/;
# commit it with the fix, and it runs with the package's tests from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-5s}
shift || true
only=" $* "

failed=()
count=0
bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT
cache=$(go env GOCACHE)/fuzz
built=""
# "dir name" for every target, sorted (so a package's targets come
# together); tools/ holds other modules.
while read -r dir name; do
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then
    continue
  fi
  count=$((count + 1))
  pkg=./$dir/
  [ "$dir" = . ] && pkg=./
  # One test binary per package, built for fuzzing (go test -fuzz would
  # link one per target: most of the time of a short run), run from the
  # package's directory so that it reads and writes testdata/fuzz there,
  # with the cache go test uses.
  bin=$bins/$(printf '%s' "$dir" | tr / _).test
  if [ "$built" != "$dir" ]; then
    printf '==> build %s for fuzzing\n' "$pkg"
    if ! go test -c -o "$bin" -fuzz . "$pkg"; then
      failed+=("$name $pkg (build)")
      continue
    fi
    built=$dir
  fi
  importpath=$(go list -f '{{.ImportPath}}' "$pkg")
  printf '==> %s %s (%s)\n' "$name" "$pkg" "$duration"
  log=$(mktemp)
  if ! (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$duration" \
    -test.fuzzcachedir "$cache/$importpath") 2>&1 | tee "$log"; then
    # Go's fuzz engine sometimes ends a run at its -fuzztime with "context
    # deadline exceeded" and no failing input: not a finding.
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "fuzz.sh: $name: the fuzz engine's own timeout at the end of the run, no failing input"
    else
      failed+=("$name $pkg")
      # The input itself, so that a log (CI's) is enough to reproduce it.
      for f in $(grep -o 'testdata/fuzz/[^ ]*' "$log" | sort -u); do
        printf -- '--- failing input %s/%s:\n' "$dir" "$f"
        cat "$dir/$f" || true
      done
    fi
  fi
  rm -f "$log"
done < <(grep -r -o --include='*_test.go' --exclude-dir=tools --exclude-dir=.git \
  '^func Fuzz[A-Za-z0-9_]*(\w* \*testing\.F)' . |
  sed -E 's#^\./##; s#^(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#; s#^[^/ ]*:func (Fuzz[A-Za-z0-9_]*)\(.*#. \1#' |
  sort -u)

if [ "$count" -eq 0 ]; then
  echo "fuzz.sh: no fuzz target found${only:+ among$only}" >&2
  exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz.sh: %d of %d targets failed:\n' "${#failed[@]}" "$count" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz.sh: $count targets passed, $duration each"
