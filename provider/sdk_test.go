package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SDK check's toolchain: sdktest/node_modules (.ci/run: npm ci). With
// envTypeScript=required a missing one fails the test instead of
// skipping it.
const envTypeScript = "NODELESS_EKS_TYPESCRIPT"

// TestGeneratedSDKs generates the TypeScript and Python SDKs from the
// schema the provider serves, with the code generators the language hosts
// run for `pulumi package add` (pulumi-language-nodejs and -python call
// codegen/nodejs and codegen/python GeneratePackage, a local SDK for
// nodejs), then type-checks the TypeScript SDK and example/index.ts with
// tsc and compiles the Python SDK with python3 -m compileall.
func TestGeneratedSDKs(t *testing.T) {
	var spec schema.PackageSpec
	require.NoError(t, json.Unmarshal(schemaJSON(t), &spec))
	bind := func() *schema.Package {
		pkg, err := schema.ImportSpec(spec, nil, noPackages{}, schema.ValidationOptions{})
		require.NoError(t, err, "the schema binds")
		return pkg
	}
	dir := t.TempDir()
	write := func(root string, files map[string][]byte) {
		for name, body := range files {
			path := filepath.Join(root, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, body, 0o644))
		}
	}

	ts, err := nodejs.GeneratePackage("pulumi-language-nodejs", bind(), nil, nil, true, noPackages{})
	require.NoError(t, err)
	// Where `pulumi package add` puts it, and the name it has there
	// (pkg/cmd/pulumi/packages/packages.go GenSDK: <namespace>-<name>).
	sdkDir := filepath.Join("sdks", Namespace()+"-"+Name)
	write(filepath.Join(dir, sdkDir), ts)
	require.Contains(t, ts, "cluster.ts")
	var pkgJSON struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal(ts["package.json"], &pkgJSON))
	npmName := "@" + Namespace() + "/" + Name
	require.Equal(t, npmName, pkgJSON.Name)

	py, err := python.GeneratePackage("pulumi-language-python", bind(), nil, noPackages{})
	require.NoError(t, err)
	write(filepath.Join(dir, "python"), py)
	var pyPkg string
	for name := range py {
		if strings.HasSuffix(name, "/cluster.py") {
			pyPkg = filepath.Dir(name)
		}
	}
	require.NotEmpty(t, pyPkg, "the Python SDK has the Cluster: %v", slices.Sorted(maps.Keys(py)))
	assert.Equal(t, strings.ReplaceAll(Namespace()+"_"+Name, "-", "_"), filepath.Base(pyPkg), "the Python package the README names")

	t.Run("python compileall", func(t *testing.T) {
		py3, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("no python3")
		}
		out, err := exec.Command(py3, "-m", "compileall", "-q", filepath.Join(dir, "python")).CombinedOutput()
		require.NoError(t, err, "%s", out)
	})

	t.Run("tsc", func(t *testing.T) {
		modules, err := filepath.Abs(filepath.Join("sdktest", "node_modules"))
		require.NoError(t, err)
		tsc := filepath.Join(modules, ".bin", "tsc")
		if _, err := os.Stat(tsc); err != nil {
			if os.Getenv(envTypeScript) == "required" {
				t.Fatalf("%s=required and no %s: run npm ci in provider/sdktest", envTypeScript, tsc)
			}
			t.Skipf("no %s (npm ci in provider/sdktest)", tsc)
		}
		require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
		run := func(args ...string) {
			t.Helper()
			cmd := exec.Command(tsc, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "tsc %s:\n%s", strings.Join(args, " "), out)
		}
		// The SDK as its own tsconfig builds it.
		run("-p", sdkDir, "--noEmit")

		// The example, resolving the SDK's name to its directory as the
		// file: dependency of its package.json does (held below).
		example, err := os.ReadFile(filepath.Join("example", "index.ts"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "index.ts"), example, 0o644))
		var tsconfig map[string]any
		raw, err := os.ReadFile(filepath.Join("example", "tsconfig.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &tsconfig))
		opts := tsconfig["compilerOptions"].(map[string]any)
		opts["noEmit"] = true
		opts["baseUrl"] = "."
		opts["paths"] = map[string]any{npmName: []string{"./" + sdkDir}}
		raw, err = json.Marshal(tsconfig)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tsconfig.json"), raw, 0o644))
		run("-p", ".")

		var project, checker struct {
			Dependencies    map[string]string `json:"dependencies"`
			DevDependencies map[string]string `json:"devDependencies"`
		}
		raw, err = os.ReadFile(filepath.Join("example", "package.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &project))
		assert.Equal(t, "file:"+filepath.ToSlash(sdkDir), project.Dependencies[npmName], "example/package.json depends on the SDK package add writes")
		raw, err = os.ReadFile(filepath.Join("sdktest", "package.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &checker))
		assert.Equal(t, "^"+checker.DevDependencies["@pulumi/pulumi"], project.Dependencies["@pulumi/pulumi"],
			"example/package.json asks for the @pulumi/pulumi the example is type-checked with, or newer")

		// A wrong input is a type error, not a surprise at `pulumi up`.
		bad := strings.Replace(string(example), `clusterName: "platform",`, `clusterName: 42,`, 1)
		require.NotEqual(t, string(example), bad)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "index.ts"), []byte(bad), 0o644))
		cmd := exec.Command(tsc, "-p", ".")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "tsc accepted a number for clusterName")
		line := strings.Count(string(example[:strings.Index(string(example), "clusterName:")]), "\n") + 1
		assert.Contains(t, string(out), fmt.Sprintf("index.ts(%d,", line), "the error is on clusterName's line")
		assert.Contains(t, string(out), "Type 'number' is not assignable to type 'string'")

		// An output where the schema says plain: Construct decides what to
		// register from the value, so the SDK takes none (truthful).
		for field, value := range map[string]string{
			`clusterName: "platform",`:             `clusterName: pulumi.output("platform"),`,
			`capacityTypes: ["spot", "on-demand"]`: `capacityTypes: pulumi.output(["spot"])`,
		} {
			bad := "import * as pulumi from \"@pulumi/pulumi\";\n" + strings.Replace(string(example), field, value, 1)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "index.ts"), []byte(bad), 0o644))
			cmd := exec.Command(tsc, "-p", ".")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "tsc accepted %s", value)
			assert.Contains(t, string(out), "Output<", value)
		}
	})
}

// noPackages is the schema loader: the package refers to no other
// package (its inputs are plain values), so any load is a mistake.
type noPackages struct{}

func (noPackages) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %s", pkg)
}

func (noPackages) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %s", d.Name)
}

func (noPackages) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema refers to package %s", pkg)
}

func (noPackages) LoadPackageReferenceV2(_ context.Context, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema refers to package %s", d.Name)
}
