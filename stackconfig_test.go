package main

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// loadProject loads Pulumi.yaml with the CLI's own loader, which validates
// it against Pulumi's project schema.
func loadProject(t *testing.T) *workspace.Project {
	t.Helper()
	proj, err := workspace.LoadProject("Pulumi.yaml")
	require.NoError(t, err, "Pulumi.yaml must pass Pulumi's project schema")
	return proj
}

// stackConfig reads a stack file the way `pulumi up` would hand it to the
// program: every project key must be declared in Pulumi.yaml with a value
// of its declared type, and declared defaults fill the keys the stack omits.
// The result is PULUMI_CONFIG's shape (objects and arrays as JSON).
func stackConfig(t *testing.T, stackFile string) map[string]string {
	t.Helper()
	proj := loadProject(t)
	raw, err := os.ReadFile(stackFile)
	require.NoError(t, err)
	var stack struct {
		Config map[string]any `yaml:"config"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &stack), "parsing %s", stackFile)

	prefix := string(proj.Name) + ":"
	values := map[string]any{}
	for key, value := range stack.Config {
		if name, ok := strings.CutPrefix(key, prefix); ok {
			decl, declared := proj.Config[name]
			require.Truef(t, declared, "%s sets %s, which Pulumi.yaml does not declare", stackFile, key)
			require.Truef(t, workspace.ValidateConfigValue(*decl.Type, decl.Items, value),
				"%s: %s = %v is not of the declared type %s", stackFile, key, value, *decl.Type)
		}
		values[key] = value
	}
	for name, decl := range proj.Config {
		if _, set := values[prefix+name]; !set && decl.Default != nil {
			values[prefix+name] = decl.Default
		}
	}
	return encodeConfig(t, values)
}

// encodeConfig renders values as the engine passes them to a program.
func encodeConfig(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	out := make(map[string]string, len(values))
	for k, v := range values {
		switch v := v.(type) {
		case string:
			out[k] = v
		default:
			b, err := json.Marshal(v)
			require.NoError(t, err, "encoding %s", k)
			out[k] = string(b)
		}
	}
	return out
}

// declaredKeys lists the project keys that Pulumi.yaml declares.
func declaredKeys(proj *workspace.Project) []string {
	keys := make([]string, 0, len(proj.Config))
	for k := range proj.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
