package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kubernetesSDK is the pulumi-kubernetes Go SDK; every package of it costs
// cold-build time on every fresh runner, whether the program uses it or not.
const kubernetesSDK = "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"

// allowedKubernetesPackages are the SDK packages the program may link, each
// for a reason. kubernetes/yaml (imported by helm/v3 and helm/v4's Chart)
// pulls in all 69 API groups; internal/helmrelease registers the Release
// without it.
var allowedKubernetesPackages = map[string]string{
	"":               "the Kubernetes provider",
	"/utilities":     "the SDK's version pinning, shared by every package",
	"/meta/v1":       "ObjectMeta of the Karpenter custom resources",
	"/apiextensions": "CustomResource for EC2NodeClass and NodePool",
	"/core/v1":       "imported by pulumi-eks",
	"/storage/v1":    "imported by pulumi-eks",
}

// forbiddenModules belong to the offline checks (test/kubecheck, a module
// of its own) and must never reach the program's binary or its go.mod: a
// runner that builds the program would download them, and
// karpenter-provider-aws needs a newer Go than the program does.
var forbiddenModules = []string{"helm.sh/helm/", "k8s.io/apiextensions-apiserver", "github.com/aws/karpenter-provider-aws"}

func TestProgramImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps .: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, kubernetesSDK, "the program must still link the Kubernetes provider; is go list reading this module?")

	var linked []string
	for _, pkg := range deps {
		if rest, ok := strings.CutPrefix(pkg, kubernetesSDK); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			linked = append(linked, rest)
			_, allowed := allowedKubernetesPackages[rest]
			assert.Truef(t, allowed, "the program links %s; import only what it uses "+
				"(kubernetes/yaml and helm/* bring in every API group: use internal/helmrelease)", pkg)
		}
		for _, m := range forbiddenModules {
			assert.Falsef(t, strings.HasPrefix(pkg, m), "the program links %s, which only the offline checks may use", pkg)
		}
	}
	slices.Sort(linked)
	t.Logf("pulumi-kubernetes packages linked: %q", linked)

	goMod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, m := range forbiddenModules {
		assert.NotContainsf(t, string(goMod), m, "go.mod requires %s; it belongs in test/go.mod", m)
	}
}
