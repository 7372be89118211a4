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
  # The package's service must not start: the tests start their own etcd.
  $sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
fi
# Not `| head -1`: under pipefail, etcd's SIGPIPE would fail the script.
etcd_version="$(etcd --version)"
echo "${etcd_version%%$'\n'*}"

if [[ ! -x "${cache}/kube-apiserver" ]]; then
  mkdir -p "${cache}"
  echo "building kube-apiserver ${version} (about 8 minutes and 2.3 GB the first time)"
  # The version the binary reports (/version), as Kubernetes' own build
  # stamps it (hack/lib/version.sh).
  stamp="-X k8s.io/component-base/version.gitVersion=${version} -X k8s.io/component-base/version.gitMajor=1"
  stamp="${stamp} -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
  go -C "${here}/server" build -trimpath -ldflags="-s -w ${stamp}" -o "${cache}/kube-apiserver.tmp" .
  mv "${cache}/kube-apiserver.tmp" "${cache}/kube-apiserver"
fi
"${cache}/kube-apiserver" --version
