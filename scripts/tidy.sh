#!/usr/bin/env bash
# Runs go mod tidy in every module of the workspace (go.work). go mod tidy
# works on one module and does not read go.work, so each nested module is
# tidied with temporary replace directives to this checkout's other
# modules, dropped again afterwards: a nested go.mod requires the library
# (and its sibling modules) at v0.0.0 between releases, a version that
# exists only in the workspace, and at the released version in a release
# commit (scripts/release.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

root=github.com/tenure-dev/tenure
dirs=$(go work edit -json | sed -n 's/.*"DiskPath": "\.\/\?\(.*\)".*/\1/p')
GOWORK=off go mod tidy
for d in $dirs; do
  [ -z "$d" ] && continue
  (
    cd "$d"
    reps=() drops=()
    for o in "" $dirs; do
      [ "$o" = "$d" ] && continue
      path=$root${o:+/$o}
      reps+=("-replace=$path=$(realpath --relative-to=. "$OLDPWD/$o")")
      drops+=("-dropreplace=$path")
    done
    go mod edit "${reps[@]}"
    GOWORK=off go mod tidy
    go mod edit "${drops[@]}"
  )
done
