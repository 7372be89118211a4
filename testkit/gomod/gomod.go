// Package gomod finds the source of a module of go.mod, so that a test can
// hold the program to the SDK it compiles against (a generated args struct,
// the provider version it asks for) without linking more of it.
package gomod

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// PulumiKubernetes is the pulumi-kubernetes Go SDK module.
const PulumiKubernetes = "github.com/pulumi/pulumi-kubernetes/sdk/v4"

// Dir is where the go command keeps module of go.mod, and its version.
func Dir(t testing.TB, module string) (dir, version string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", module).Output()
	require.NoError(t, err, "go list -m %s", module)
	var m struct{ Dir, Version string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "the module must be downloaded (go mod download)")
	return m.Dir, m.Version
}
