package k8syaml

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"nodeless-eks/testkit/gomod"
	"nodeless-eks/testkit/mock"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewConfigGroupRegistersTheProvidersComponent(t *testing.T) {
	rec := mock.New("project", "stack")
	files := []string{"https://example.com/a.yaml", "https://example.com/b.yaml"}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewConfigGroup(ctx, "crds", &ConfigGroupArgs{Files: pulumi.ToStringArray(files)})
		return err
	}, pulumi.WithMocks("project", "stack", rec))
	require.NoError(t, err)
	require.Len(t, rec.All(), 1)
	reg := rec.All()[0]
	_, moduleVersion := gomod.Dir(t, gomod.PulumiKubernetes)

	assert.Equal(t, "kubernetes:yaml/v2:ConfigGroup", reg.Type, "the provider's ConfigGroup type")
	assert.True(t, reg.Remote, "the provider constructs the group's children")
	assert.Equal(t, moduleVersion, "v"+reg.Version, "the provider version is the pulumi-kubernetes module's")
	var got []string
	for _, f := range reg.Inputs["files"].ArrayValue() {
		got = append(got, f.StringValue())
	}
	assert.Equal(t, files, got, "files are sent in order")
}

func TestNewConfigGroupRequiresFiles(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewConfigGroup(ctx, "x", &ConfigGroupArgs{})
		return err
	}, pulumi.WithMocks("project", "stack", mock.New("project", "stack")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Files is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and type of pulumi-kubernetes' generated configGroupArgs,
// parsed from the module source rather than compiled.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	dir, _ := gomod.Dir(t, gomod.PulumiKubernetes)
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
