package k8syaml

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const kubernetesModule = "github.com/pulumi/pulumi-kubernetes/sdk/v4"

type registered struct {
	typ, name, version string
	remote             bool
	inputs             resource.PropertyMap
}

type recorder struct {
	mu   sync.Mutex
	regs []registered
}

func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, registered{args.TypeToken, args.Name, args.RegisterRPC.GetVersion(), args.RegisterRPC.GetRemote(), args.Inputs})
	return "", args.Inputs, nil
}

func (r *recorder) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func kubernetesModuleDir(t *testing.T) (dir, version string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", kubernetesModule).Output()
	require.NoError(t, err, "go list -m %s", kubernetesModule)
	var m struct{ Dir, Version string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "the module must be downloaded (go mod download)")
	return m.Dir, m.Version
}

func TestNewConfigGroupRegistersTheProvidersComponent(t *testing.T) {
	rec := &recorder{}
	files := []string{"https://example.com/a.yaml", "https://example.com/b.yaml"}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewConfigGroup(ctx, "crds", &ConfigGroupArgs{Files: pulumi.ToStringArray(files)})
		return err
	}, pulumi.WithMocks("project", "stack", rec))
	require.NoError(t, err)
	require.Len(t, rec.regs, 1)
	reg := rec.regs[0]
	_, moduleVersion := kubernetesModuleDir(t)

	assert.Equal(t, "kubernetes:yaml/v2:ConfigGroup", reg.typ, "the provider's ConfigGroup type")
	assert.True(t, reg.remote, "the provider constructs the group's children")
	assert.Equal(t, moduleVersion, "v"+reg.version, "the provider version is the pulumi-kubernetes module's")
	var got []string
	for _, f := range reg.inputs["files"].ArrayValue() {
		got = append(got, f.StringValue())
	}
	assert.Equal(t, files, got, "files are sent in order")
}

func TestNewConfigGroupRequiresFiles(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewConfigGroup(ctx, "x", &ConfigGroupArgs{})
		return err
	}, pulumi.WithMocks("project", "stack", &recorder{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Files is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and type of pulumi-kubernetes' generated configGroupArgs,
// parsed from the module source rather than compiled.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	dir, _ := kubernetesModuleDir(t)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "go", "kubernetes", "yaml", "v2", "configGroup.go"), nil, 0)
	require.NoError(t, err)
	sdk := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || spec.Name.Name != "configGroupArgs" {
			return true
		}
		for _, field := range spec.Type.(*ast.StructType).Fields.List {
			if field.Tag != nil && len(field.Names) == 1 {
				tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`")).Get("pulumi")
				if arr, ok := field.Type.(*ast.ArrayType); ok {
					if id, ok := arr.Elt.(*ast.Ident); ok {
						sdk[tag] = "[]" + id.Name
					}
				}
			}
		}
		return false
	})
	require.NotEmpty(t, sdk, "the SDK's configGroupArgs was not found")
	ours := reflect.TypeOf(configGroupArgs{})
	for i := range ours.NumField() {
		field := ours.Field(i)
		tag := field.Tag.Get("pulumi")
		assert.Equalf(t, sdk[tag], field.Type.String(), "input %q must have the SDK's name and type", tag)
	}
}
