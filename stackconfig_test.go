package main

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// program (internal/stackfile: required keys set, every key declared and
// of its type, defaults filled). The result is PULUMI_CONFIG's shape.
func stackConfig(t *testing.T, stackFile string) map[string]string {
	t.Helper()
	cfg, err := stackfile.Load("Pulumi.yaml", stackFile)
	require.NoError(t, err, "the Pulumi CLI would refuse %s", stackFile)
	return cfg
}

// encodeConfig renders values as the engine passes them to a program.
func encodeConfig(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	out, err := stackfile.Encode(values)
	require.NoError(t, err)
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

// TestShippedStackFiles runs every stack file of this project through the
// CLI's rules and the program: the example stack, the test stacks, and a
// stack that sets nothing optional.
func TestShippedStackFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/stack-*.yaml")
	require.NoError(t, err)
	files = append(files, "Pulumi.dev.yaml")
	require.Contains(t, files, "testdata/stack-minimal.yaml", "a stack that sets no optional key must be among them")
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			run := runProgram(t, stackConfig(t, file), fakeaws.DevVpc())
			require.NoError(t, run.err, "%s passes the CLI's checks and must run", file)
		})
	}
	t.Run("the minimal stack gets the default cluster name", func(t *testing.T) {
		run := runProgram(t, stackConfig(t, "testdata/stack-minimal.yaml"), fakeaws.DevVpc())
		require.NoError(t, run.err)
		assert.Equal(t, "nodeless-eks-dev", run.rec.OfType(typeEksCluster)[0].Inputs["name"].StringValue())
	})
	t.Run("the required keys say so, and nothing else is required", func(t *testing.T) {
		var required []string
		for name, decl := range loadProject(t).Config {
			if decl.Default == nil && decl.Value == nil {
				required = append(required, name)
				assert.Containsf(t, decl.Description, "Required", "%s is required by the CLI; its description must say so", name)
			}
		}
		sort.Strings(required)
		assert.Equal(t, []string{"podSubnetNamePattern", "privateSubnetNamePattern", "vpcName"}, required,
			"the VPC can only be named by its owner; every other key has a default")
	})
	t.Run("a stack without a required key is refused as the CLI refuses it", func(t *testing.T) {
		dir := t.TempDir()
		stack := filepath.Join(dir, "Pulumi.dev.yaml")
		require.NoError(t, os.WriteFile(stack, []byte("config:\n  aws:region: eu-west-1\n  nodeless-eks:vpcName: eks-demo-vpc\n"), 0o600))
		_, err := stackfile.Load("Pulumi.yaml", stack)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Stack 'dev' is missing configuration value(s) 'podSubnetNamePattern', 'privateSubnetNamePattern'")
	})
}
