package kubecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"nodeless-eks/versions"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stringConstants returns the string constants declared in a Go file.
func stringConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if i < len(spec.Values) {
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	return out
}

// TestKubernetesRangeMatchesKarpenter reads Karpenter's own version guard
// from the module source, of the pinned release and of the long-term-support
// one (importing the package would link the AWS SDK's EC2 client into this
// test for two constants).
func TestKubernetesRangeMatchesKarpenter(t *testing.T) {
	for _, line := range []struct {
		module   Module
		max      int
		constant string
	}{
		{karpenterModule(t), versions.MaxKubernetesMinor, "versions.MaxKubernetesMinor"},
		{ltsModule(t), versions.LTSMaxKubernetesMinor, "versions.LTSMaxKubernetesMinor"},
	} {
		file := filepath.Join(line.module.Dir, "pkg", "providers", "version", "version.go")
		consts := stringConstants(t, file)
		require.Contains(t, consts, "MinK8sVersion", "Karpenter's version guard moved; update this test and versions/")
		require.Contains(t, consts, "MaxK8sVersion")
		assert.Equal(t, consts["MinK8sVersion"], fmt.Sprintf("1.%d", versions.MinKubernetesMinor),
			"versions.MinKubernetesMinor must follow %s", file)
		assert.Equal(t, consts["MaxK8sVersion"], fmt.Sprintf("1.%d", line.max), "%s must follow %s", line.constant, file)
	}
}
