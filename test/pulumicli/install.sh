#!/usr/bin/env bash
# Builds the Pulumi CLI that the real Pulumi CLI tier runs (provider/'s
# tests that install the package's plugin, run an engine `up` and
# `destroy`, and recover a killed `up`), once, into the user's cache
# directory, where later runs find it and skip the build: v3.276.0, the
# version of Pulumi's Go SDK and pkg every module here uses, from the Go
# module proxy (no prebuilt binary can be downloaded here). .ci/run runs
# it; the tests find it in the cache (or at $NODELESS_EKS_PULUMI_CLI).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(sed -n 's|^require github.com/pulumi/pulumi/pkg/v3 \(v[0-9.]*\)$|\1|p' "${here}/go.mod")"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/nodeless-eks/pulumi-${version}"
stamp_of_sources="$(cat "${here}/go.mod" "${here}/go.sum" "$0" | sha256sum | cut -c1-16)"
if [[ ! -x "${cache}/pulumi" || "$(cat "${cache}/stamp" 2>/dev/null)" != "${stamp_of_sources}" ]]; then
  mkdir -p "${cache}"
  echo "building the Pulumi CLI ${version} (about 5 minutes and 2.3 GB the first time)"
  tmp="$(mktemp "${cache}/pulumi.XXXXXX")"
  trap 'rm -f "${tmp}"' EXIT
  # The version `pulumi version` reports, and the one the engine checks
  # requiredPulumiVersion against, as Pulumi's own build stamps it.
  go -C "${here}" build -ldflags="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=${version}" \
    -o "${tmp}" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  mv "${tmp}" "${cache}/pulumi"
  trap - EXIT
  echo "${stamp_of_sources}" > "${cache}/stamp"
fi
"${cache}/pulumi" version
# The YAML language host the package's consumer tier runs
# (provider/yaml_cli_test.go): pulumi-language-yaml, a plain `go install`
# from the module proxy (about 190 s of CPU and 32 MB cold; less where
# the CLI's build left its shared packages compiled), into its own
# directory beside the CLI.
yaml_version=v1.25.0
yaml_dir="$(dirname "${cache}")/pulumi-language-yaml-${yaml_version}"
if [[ ! -x "${yaml_dir}/pulumi-language-yaml" ]]; then
  echo "building pulumi-language-yaml ${yaml_version}"
  mkdir -p "${yaml_dir}"
  GOBIN="${yaml_dir}" GOFLAGS= go install -ldflags="-s -w" "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml@${yaml_version}"
fi
