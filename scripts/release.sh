#!/usr/bin/env bash
# release.sh VERSION: builds silt for linux, darwin and windows on amd64 and
# arm64 into dist/, in goreleaser's layout:
#
#   dist/silt_<version>_<os>_<arch>.tar.gz   (windows: .zip), each holding
#   silt (silt.exe), LICENSE, README.md and the man pages (man/man1)
#   dist/SHA256SUMS                           sha256sum -c checks them
#
# Builds are reproducible: -trimpath, no build id, the version, commit and
# the commit's own time stamped with -X, that time as every archive
# member's mtime, and archives with sorted members and fixed owners. Run it
# twice at one commit and the checksums match. VERSION defaults to
# `git describe`; SILT_PLATFORMS="os/arch ..." builds fewer platforms.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
date="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$epoch" +%Y-%m-%dT%H:%M:%SZ)"
platforms="${SILT_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}"
ldflags="-s -w -buildid= -X main.version=$version -X main.commit=$commit -X main.date=$date"

rm -rf dist && mkdir -p dist
for p in $platforms; do
  os="${p%/*}" arch="${p#*/}"
  name="silt_${version}_${os}_${arch}"
  stage="dist/$name"
  mkdir -p "$stage"
  bin=silt; [ "$os" = windows ] && bin=silt.exe
  echo "== $name"
  CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/$bin" ./cmd/silt
  cp LICENSE README.md "$stage/"
  cp -r docs/man "$stage/man"
  find "$stage" -exec touch -h -d "@$epoch" {} +
  if [ "$os" = windows ]; then
    (cd dist && find "$name" -print | LC_ALL=C sort | TZ=UTC zip -q -X -D "$name.zip" -@)
  else
    tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C dist -cf - "$name" | gzip -n -9 >"dist/$name.tar.gz"
  fi
  rm -rf "$stage"
done
(cd dist && sha256sum silt_* >SHA256SUMS)
cat dist/SHA256SUMS
