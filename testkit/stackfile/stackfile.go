// Package stackfile is internal/stackfile for tests: Load and Encode, and
// With, a stack file's configuration with keys changed.
package stackfile

import (
	"strings"
	"testing"

	"nodeless-eks/internal/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/require"
)

// Load is stackfile.Load: the configuration the CLI would hand the program.
func Load(projectFile, stackFile string) (map[string]string, error) {
	return stackfile.Load(projectFile, stackFile)
}

// Encode is stackfile.Encode.
func Encode(values map[string]any) (map[string]string, error) { return stackfile.Encode(values) }

// With is Load's configuration, which must load, with keys changed: a key
// without a namespace is the project's, and "" deletes a key.
func With(t testing.TB, projectFile, stackFile string, set map[string]string) map[string]string {
	t.Helper()
	cfg, err := Load(projectFile, stackFile)
	require.NoError(t, err, "the Pulumi CLI would refuse %s", stackFile)
	proj, err := workspace.LoadProject(projectFile)
	require.NoError(t, err)
	for k, v := range set {
		if !strings.Contains(k, ":") {
			k = string(proj.Name) + ":" + k
		}
		if v == "" {
			delete(cfg, k)
			continue
		}
		cfg[k] = v
	}
	return cfg
}
