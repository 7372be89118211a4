#!/usr/bin/env bash
# Installs what test/realapi needs, once: etcd (Debian's etcd-server) and
# kube-apiserver v1.36.3, built from the Go module proxy into the user's
# cache directory, where later runs find it and skip the build. .ci/run
# runs it; so does a developer who wants the real API server tier.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=v1.36.3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/nodeless-eks/kube-apiserver-${version}"

if ! command -v etcd >/dev/null; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo=sudo; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
  # On a machine with systemd the package starts its own etcd on the
  # default ports; the tests start theirs on free ones and need none.
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
fi
# Not `| head -1`: under pipefail, etcd's SIGPIPE would fail the script.
etcd_version="$(etcd --version)"
echo "${etcd_version%%$'\n'*}"

# The binary is rebuilt when what it is built from changes.
stamp_of_sources="$(cat "${here}/server/go.mod" "${here}/server/go.sum" "${here}/server/main.go" "$0" | sha256sum | cut -c1-16)"
if [[ ! -x "${cache}/kube-apiserver" || "$(cat "${cache}/stamp" 2>/dev/null)" != "${stamp_of_sources}" ]]; then
  mkdir -p "${cache}"
  echo "building kube-apiserver ${version} (4 to 9 minutes and 1.9 GB the first time)"
  # The version the binary reports (/version), as Kubernetes' own build
  # stamps it (hack/lib/version.sh).
  stamp="-X k8s.io/component-base/version.gitVersion=${version} -X k8s.io/component-base/version.gitMajor=1"
  stamp="${stamp} -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
  tmp="$(mktemp "${cache}/kube-apiserver.XXXXXX")"
  trap 'rm -f "${tmp}"' EXIT
  # Without -trimpath, so that `go vet` of the module (.ci/run) reuses
  # this build's compiled packages instead of compiling them again.
  go -C "${here}/server" build -ldflags="-s -w ${stamp}" -o "${tmp}" .
  mv "${tmp}" "${cache}/kube-apiserver"
  trap - EXIT
  echo "${stamp_of_sources}" > "${cache}/stamp"
fi
"${cache}/kube-apiserver" --version

# kube-controller-manager of the same module, for the tiers that need a
# garbage collector and a namespace controller (most of its packages are the
# API server's: both together took 402 s of CPU here).
kcm_cache="$(dirname "${cache}")/kube-controller-manager-${version}"
kcm_stamp="$(cat "${here}/server/go.mod" "${here}/server/go.sum" "${here}/server/kube-controller-manager/main.go" "$0" | sha256sum | cut -c1-16)"
if [[ ! -x "${kcm_cache}/kube-controller-manager" || "$(cat "${kcm_cache}/stamp" 2>/dev/null)" != "${kcm_stamp}" ]]; then
  mkdir -p "${kcm_cache}"
  echo "building kube-controller-manager ${version}"
  stamp="-X k8s.io/component-base/version.gitVersion=${version} -X k8s.io/component-base/version.gitMajor=1"
  stamp="${stamp} -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
  trap 'rm -f "${kcm_cache}/kube-controller-manager.tmp"' EXIT
  go -C "${here}/server" build -ldflags="-s -w ${stamp}" -o "${kcm_cache}/kube-controller-manager.tmp" ./kube-controller-manager
  mv "${kcm_cache}/kube-controller-manager.tmp" "${kcm_cache}/kube-controller-manager"
  trap - EXIT
  echo "${kcm_stamp}" > "${kcm_cache}/stamp"
fi
"${kcm_cache}/kube-controller-manager" --version

# The Gateway API CRDs test/realapi installs, fetched now so that the tests
# themselves read only the module cache.
outside="$(mktemp -d)" # outside any module, so that no go.mod changes
(cd "${outside}" && GOFLAGS= go mod download sigs.k8s.io/gateway-api@v1.6.0)
rm -rf "${outside}"
