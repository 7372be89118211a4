#!/usr/bin/env bash
# Builds the real pulumi-kubernetes provider plugin that the Kubernetes
# engine tier (provider/kube_engine_test.go) runs, once, into the user's
# cache directory, where later runs find it and skip the build: v4.25.0,
# the newest provider module the Go module proxy serves (about 1,350 s of
# CPU, 4.5 GB and a 285 MB binary the first time). .ci/run runs it; the
# test finds it in the cache (or at $NODELESS_EKS_KUBERNETES_PROVIDER).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=4.25.0
module="$(sed -n 's|^require github.com/pulumi/pulumi-kubernetes/provider/v4 \(v[^ ]*\)$|\1|p' "${here}/go.mod")"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/nodeless-eks/pulumi-resource-kubernetes-v${version}"
# The binary is rebuilt when what it is built from, or the Go that builds
# it, changes.
stamp_of_sources="$( (cat "${here}/go.mod" "${here}/go.sum" "${here}/main.go" "$0"; go version) | sha256sum | cut -c1-16)"
if [[ ! -x "${cache}/pulumi-resource-kubernetes" || "$(cat "${cache}/stamp" 2>/dev/null)" != "${stamp_of_sources}" ]]; then
  mkdir -p "${cache}"
  echo "building pulumi-resource-kubernetes ${version} (about 1,350 s of CPU and 4.5 GB the first time)"
  go -C "${here}" mod download github.com/pulumi/pulumi-kubernetes/provider/v4
  src="$(go -C "${here}" list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)/cmd/pulumi-resource-kubernetes"
  # What upstream's `go generate` (generate.go) writes beside main.go: the
  # schema with its version set, and the Terraform mapping, compacted.
  build="$(mktemp -d)"
  trap 'rm -rf "${build}" "${cache}/pulumi-resource-kubernetes.tmp"' EXIT
  cp "${here}/go.mod" "${here}/go.sum" "${here}/main.go" "${build}/"
  python3 - "${src}" "${build}" "${version}" <<'PY'
import json, sys
src, out, version = sys.argv[1:]
schema = json.load(open(src + "/schema.json"))
schema["version"] = version
json.dump(schema, open(out + "/schema-embed.json", "w"), separators=(",", ":"))
json.dump(json.load(open(src + "/terraform-mapping.json")), open(out + "/terraform-mapping-embed.json", "w"), separators=(",", ":"))
PY
  # The version the plugin reports to the engine, as upstream's build
  # stamps it (its Makefile: -X of pkg/version.Version, CGO_ENABLED=0).
  CGO_ENABLED=0 go -C "${build}" build -ldflags="-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=${version}" \
    -o "${cache}/pulumi-resource-kubernetes.tmp" .
  mv "${cache}/pulumi-resource-kubernetes.tmp" "${cache}/pulumi-resource-kubernetes"
  echo "${stamp_of_sources}" > "${cache}/stamp"
fi
echo "pulumi-resource-kubernetes ${version} (${module}) at ${cache}"
