#!/usr/bin/env bash
# Builds the release archives of tenure (docs/build.md, "Releasing"):
#
#   scripts/release-build.sh [--snapshot] [DIST]
#
# into DIST (default dist/), one archive per platform,
#
#   tenure_VERSION_GOOS_GOARCH.tar.gz   tenure, LICENSE, README.md
#
# The archive's README.md links to the repository at the release's tag (the
# commit, for a snapshot) where the checkout's links to docs/, CHANGELOG.md,
# … are relative: the archive holds none of those files.
#
# and SHA256SUMS over them (check with: cd DIST && sha256sum -c SHA256SUMS).
# Each Linux tenure embeds the guard's own program built for its platform
# (cmd/tenure-guard, by guardbin's go:generate line); the other platforms
# embed none: their tenure run refuses to start (the guard needs Linux),
# every other command works.
#
# VERSION (what tenure version prints) comes from the environment, else the
# tag at HEAD; the checkout must be clean. --snapshot builds a checkout with
# changes or no tag, as VERSION or git describe --dirty, else
# v0.0.0-snapshot-COMMIT. TARGETS (default: every platform below) picks
# platforms: TARGETS=linux/amd64 scripts/release-build.sh --snapshot.
#
# The build is reproducible: the same commit and Go version give the same
# bytes (-trimpath, no build ID, CGO_ENABLED=0, archive entries owned by
# root, dated the commit's time, in name order, gzip without a time stamp).
# Nothing in the source tree is written but DIST: the guard is built into
# a temporary directory and put where tenure embeds it by go build -overlay,
# which also hides whatever go generate left in bin/.
set -euo pipefail
cd "$(dirname "$0")/.."

snapshot=false
if [ "${1:-}" = --snapshot ]; then
  snapshot=true
  shift
fi
dist=${1:-dist}
targets=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}

# Outside a git checkout (a source archive), only --snapshot builds, and
# the commit is unknown.
commit=$(git rev-parse HEAD 2>/dev/null || true)
dirty=$(git status --porcelain 2>/dev/null || echo "not a git checkout")
version=${VERSION:-$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || true)}
if ! $snapshot; then
  if [ -n "$dirty" ]; then
    echo "scripts/release-build.sh: the checkout has uncommitted changes (--snapshot builds them)" >&2
    exit 1
  fi
  if [ -z "$version" ]; then
    echo "scripts/release-build.sh: no v* tag at HEAD and no VERSION (scripts/release.sh tags; --snapshot builds untagged)" >&2
    exit 1
  fi
fi
if [ -z "$version" ]; then
  version=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null ||
    echo "v0.0.0-snapshot${commit:+-${commit:0:12}}${dirty:+-dirty}")
fi
if ! [[ $version =~ ^v[0-9A-Za-z.+-]+$ ]]; then
  echo "scripts/release-build.sh: version \"$version\" is not a v* version (it names the archives)" >&2
  exit 2
fi
# Archive entries are dated the commit's time (SOURCE_DATE_EPOCH overrides).
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

# The archive's README: each relative link made absolute, to the
# repository at the tag (a snapshot's commit); the build fails if one is
# left.
repo=https://github.com/tenure-dev/tenure
ref=$version
if $snapshot && ! git rev-parse -q --verify "refs/tags/$version" >/dev/null 2>&1; then
  ref=${commit:-main}
fi
archiveReadme() {
  sed -E "s#\]\(([^):\#][^):]*)\)#]($repo/blob/$ref/\1)#g" README.md >"$1"
  if grep -oE '\]\([^)]*\)' "$1" | grep -vE '^\]\((https?://|mailto:|#)' >&2; then
    echo "scripts/release-build.sh: the archive's README.md keeps the relative links above" >&2
    return 1
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dist"
rm -f "$dist"/tenure_*.tar.gz "$dist"/SHA256SUMS

guardbin=cmd/internal/guard/guardbin
directive=$(sed -n 's#^//go:generate ##p' "$guardbin/doc.go")
pkg=github.com/tenure-dev/tenure/cmd/internal/cli
ldflags="-s -w -buildid= -X $pkg.linkVersion=$version -X $pkg.linkRevision=$commit"

for target in $targets; do
  goos=${target%/*} goarch=${target#*/}
  name=tenure_${version}_${goos}_${goarch}
  stage=$tmp/$name
  mkdir -p "$stage/$name"

  # The overlay hides every guard program in bin/ and, on Linux, puts the
  # one built for this platform where guardbin embeds it.
  overlay="{\"Replace\":{"
  for f in "$guardbin"/bin/tenure-guard-*; do
    [ -e "$f" ] && overlay+="\"$PWD/$f\":\"\","
  done
  if [ "$goos" = linux ]; then
    prog=$stage/tenure-guard-$goos-$goarch
    # guardbin's go:generate line, with its output in $stage.
    (cd "$guardbin" && export GOOS=$goos GOARCH=$goarch && eval "${directive/-o bin\//-o $stage/}")
    if [ ! -s "$prog" ]; then
      echo "scripts/release-build.sh: the go:generate line of $guardbin/doc.go did not build $prog" >&2
      exit 1
    fi
    overlay+="\"$PWD/$guardbin/bin/tenure-guard-$goos-$goarch\":\"$prog\","
  fi
  echo "${overlay%,}}}" >"$stage/overlay.json"

  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false -overlay "$stage/overlay.json" \
    -ldflags="$ldflags" -o "$stage/$name/tenure" ./cmd/tenure
  cp LICENSE "$stage/$name/"
  archiveReadme "$stage/$name/README.md"
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --mode='go-w,u+rw,a+rX' \
    --format=gnu -C "$stage" -cf - "$name" | gzip -n -9 >"$dist/$name.tar.gz"
  echo "built $dist/$name.tar.gz ($target, guard: $([ "$goos" = linux ] && echo "embedded, $(wc -c <"$prog") bytes" || echo none))"
done

(cd "$dist" && sha256sum tenure_"$version"_*.tar.gz >SHA256SUMS)
echo "wrote $dist/SHA256SUMS ($version, commit ${commit:-unknown})"
