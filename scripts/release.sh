#!/usr/bin/env bash
# Releases every module of the workspace at one version (docs/build.md,
# "Releasing"):
#
#   scripts/release.sh v0.1.0
#
# In a clean checkout, it makes one release commit in which the CHANGELOG's
# Unreleased section is dated as VERSION, every nested
# module (cmd, embedded, internal/kubetest, kube) requires the library and
# its sibling modules at VERSION, and go.work maps VERSION of each module to
# its directory; builds tenure and vets every module; then tags the commit
# once per module, as Go finds a nested module's versions:
#
#   v0.1.0  cmd/v0.1.0  embedded/v0.1.0  internal/kubetest/v0.1.0  kube/v0.1.0
#
# and builds the release archives and their SHA256SUMS from the tagged
# commit into dist/ (scripts/release-build.sh; DIST=dir picks another).
#
# Nothing is pushed: check the tags, then git push origin <tags>. After the
# push, go get github.com/tenure-dev/tenure@v0.1.0 and go install
# github.com/tenure-dev/tenure/cmd/tenure@v0.1.0 resolve (no go.mod of a
# module carries replace directives, which go install refuses).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh vX.Y.Z (a semantic version, got \"$version\")" >&2
  exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
  echo "scripts/release.sh: the checkout has uncommitted changes" >&2
  exit 1
fi

root=github.com/tenure-dev/tenure
# The nested modules: every directory go.work uses but the root.
dirs=$(go work edit -json | sed -n 's/.*"DiskPath": "\.\/\(..*\)".*/\1/p')
tags=("$version")
for d in $dirs; do tags+=("$d/$version"); done
for t in "${tags[@]}"; do
  if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
    echo "scripts/release.sh: tag $t exists" >&2
    exit 1
  fi
done

# The CHANGELOG's Unreleased section becomes this version's, dated today,
# and a new empty Unreleased section opens above it.
if ! grep -q '^## \[Unreleased\]' CHANGELOG.md; then
  echo "scripts/release.sh: CHANGELOG.md has no '## [Unreleased]' section to release" >&2
  exit 1
fi
sed -i "s/^## \[Unreleased\]\$/## [Unreleased]\n\n## [${version#v}] - $(date -u +%F)/" CHANGELOG.md

# Every module requires its siblings at the release version, and go.work
# maps that version of each to its directory.
modpath() { echo "$root${1:+/$1}"; }
for d in "" $dirs; do
  old=$(sed -nE "s#^(replace)?[[:space:]]*$(modpath "$d") (v[^ ]+) =>.*#\2#p" go.work | sed -n 1p)
  go work edit -dropreplace="$(modpath "$d")${old:+@$old}" -replace="$(modpath "$d")@$version=./$d"
done
go work edit -fmt
for d in $dirs; do
  reqs=()
  for o in "" $dirs; do
    [ "$o" = "$d" ] && continue
    p=$(modpath "$o")
    if go mod edit -json "$d/go.mod" | grep -q "\"Path\": \"$p\""; then
      reqs+=("-require=$p@$version")
    fi
  done
  [ ${#reqs[@]} -gt 0 ] && go mod edit "${reqs[@]}" "$d/go.mod"
done

# The release builds and vets in every module.
patterns=(./...)
for d in $dirs; do patterns+=("./$d/..."); done
go vet "${patterns[@]}"
go build -o /dev/null ./cmd/tenure

git add CHANGELOG.md go.work $(for d in $dirs; do echo "$d/go.mod"; done)
git commit -q -m "Release $version: every module requires the library and its sibling modules at $version"
for t in "${tags[@]}"; do
  git tag -a "$t" -m "tenure $version"
done
echo "tagged $(git rev-parse --short HEAD): ${tags[*]}"
VERSION=$version scripts/release-build.sh "${DIST:-dist}"
echo "push with: git push origin ${tags[*]}"
echo "then publish ${DIST:-dist}/*.tar.gz and ${DIST:-dist}/SHA256SUMS with the release"
