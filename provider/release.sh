#!/usr/bin/env bash
# Builds the package's plugin archives for a release: one per platform,
# named and laid out as Pulumi's plugin installer downloads them from a
# release ("pulumi-resource-<name>-v<version>-<os>-<arch>.tar.gz", holding
# pulumi-resource-<name>[.exe] at its root: sdk/go/common/workspace/plugins.go
# standardAssetName, and pkg/workspace/plugin.go InstallPluginContent, which
# unpacks it, at v3.276.0), into $OUT (dist/), with their SHA256SUMS.
#
#   release.sh <version> [<os>/<arch> ...]
#
# The version is the tag's (v0.2.0 or 0.2.0); the repository the release is
# published in is $GITHUB_REPOSITORY (owner/name), which the schema then
# names as the plugin's download URL, github://api.github.com/<owner/name>.
# Without platforms it builds the release's: linux and darwin on amd64 and
# arm64, and windows on amd64. --names prints the archive names and builds
# nothing. It builds with -trimpath ("remove all file system paths from
# the resulting executable", go help build), so that no checkout's path is
# in the binary (.ci/run compiles everything so too, and the tests give it the
# build cache's CGO_ENABLED, so that they link what `go test` compiled).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
names_only=false
if [[ "${1:-}" == "--names" ]]; then names_only=true; shift; fi
version="${1:?usage: release.sh [--names] <version> [<os>/<arch> ...]}"
version="${version#v}"
shift
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "release.sh: ${version}: not a semver version" >&2; exit 2; }
platforms=("$@")
if [[ ${#platforms[@]} == 0 ]]; then
  platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)
fi
name=nodeless-eks
if ${names_only}; then
  for p in "${platforms[@]}"; do echo "pulumi-resource-${name}-v${version}-${p%/*}-${p#*/}.tar.gz"; done
  exit 0
fi
repository="${GITHUB_REPOSITORY:?release.sh: set GITHUB_REPOSITORY to the owner/name the release is published in}"
[[ "${repository}" =~ ^[A-Za-z0-9-]+/[A-Za-z0-9_.-]+$ ]] || { echo "release.sh: GITHUB_REPOSITORY ${repository}: want owner/name" >&2; exit 2; }
out="$(mkdir -p "${OUT:-dist}" && cd "${OUT:-dist}" && pwd)"
for p in "${platforms[@]}"; do
  os="${p%/*}" arch="${p#*/}" exe=""
  [[ "${os}" == windows ]] && exe=.exe
  stage="$(mktemp -d)"
  CGO_ENABLED="${CGO_ENABLED:-0}" GOOS="${os}" GOARCH="${arch}" go -C "${here}" build -trimpath \
    -ldflags "-s -w -X main.version=${version} -X main.repository=${repository}" \
    -o "${stage}/pulumi-resource-${name}${exe}" .
  # The same bytes from the same binary: no owner, time or name of this
  # machine's in the tar or the gzip header (GNU tar, gzip -n).
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - -C "${stage}" "pulumi-resource-${name}${exe}" |
    gzip -n -9 >"${out}/pulumi-resource-${name}-v${version}-${os}-${arch}.tar.gz"
  rm -rf "${stage}"
  echo "${out}/pulumi-resource-${name}-v${version}-${os}-${arch}.tar.gz"
done
# The checksums a consumer gives `pulumi plugin install --checksum` and a
# package entry's checksums (provider/README.md), of every archive in $OUT.
(cd "${out}" && sha256sum pulumi-resource-${name}-v${version}-*.tar.gz >SHA256SUMS)
echo "${out}/SHA256SUMS"
