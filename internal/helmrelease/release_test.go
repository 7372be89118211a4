package helmrelease

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

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRegistersTheProvidersReleaseType(t *testing.T) {
	rec := mock.New("project", "stack")
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := New(ctx, "lbc", &ReleaseArgs{
			Name:            pulumi.String("aws-load-balancer-controller"),
			Chart:           pulumi.String("aws-load-balancer-controller"),
			Version:         pulumi.String("1.14.0"),
			Namespace:       pulumi.String("kube-system"),
			CreateNamespace: pulumi.Bool(true),
			SkipCrds:        pulumi.Bool(true),
			RepositoryOpts:  &RepositoryOptsArgs{Repo: pulumi.String("https://aws.github.io/eks-charts")},
			Values:          pulumi.Map{"replicaCount": pulumi.Int(2), "vpcId": pulumi.String("vpc-1").ToStringOutput()},
			Timeout:         pulumi.Int(900),
			Compat:          pulumi.String("false"),
		})
		return err
	}, pulumi.WithMocks("project", "stack", rec))
	require.NoError(t, err)
	require.Len(t, rec.All(), 1)
	reg := rec.All()[0]
	_, moduleVersion := gomod.Dir(t, gomod.PulumiKubernetes)

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"the type token is the provider's Release", reg.Type, "kubernetes:helm.sh/v3:Release"},
		{"the provider version is the pulumi-kubernetes module's", "v" + reg.Version, moduleVersion},
		{"compat is true whatever the caller set", reg.Inputs["compat"].V, "true"},
		{"chart", reg.Inputs["chart"].V, "aws-load-balancer-controller"},
		{"release name", reg.Inputs["name"].V, "aws-load-balancer-controller"},
		{"chart version", reg.Inputs["version"].V, "1.14.0"},
		{"namespace", reg.Inputs["namespace"].V, "kube-system"},
		{"createNamespace", reg.Inputs["createNamespace"].V, true},
		{"skipCrds", reg.Inputs["skipCrds"].V, true},
		{"timeout", reg.Inputs["timeout"].V, 900.0},
		{"repositoryOpts is an object with repo", reg.Inputs["repositoryOpts"].ObjectValue()["repo"].V, "https://aws.github.io/eks-charts"},
		{"values resolve outputs", reg.Inputs["values"].ObjectValue()["vpcId"].V, "vpc-1"},
		{"values keep plain values", reg.Inputs["values"].ObjectValue()["replicaCount"].V, 2.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
	t.Run("unset inputs are not sent", func(t *testing.T) {
		assert.NotContains(t, reg.Inputs, resource.PropertyKey("waitForJobs"))
	})
}

func TestNewRequiresAChart(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := New(ctx, "x", &ReleaseArgs{Name: pulumi.String("x")})
		return err
	}, pulumi.WithMocks("project", "stack", mock.New("project", "stack")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Chart is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and Go type that pulumi-kubernetes' generated helm/v3 package
// declares for it. The generated source is parsed, not compiled, so this
// test does not pay for the packages the program avoids.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	dir, _ := gomod.Dir(t, gomod.PulumiKubernetes)
	fset := token.NewFileSet()
	sdkFields := map[string]map[string]string{} // struct -> pulumi tag -> Go type
	for _, file := range []string{"release.go", "pulumiTypes.go"} {
		f, err := parser.ParseFile(fset, filepath.Join(dir, "go", "kubernetes", "helm", "v3", file), nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok || (spec.Name.Name != "releaseArgs" && spec.Name.Name != "RepositoryOpts") {
				return true
			}
			fields := map[string]string{}
			for _, field := range st.Fields.List {
				if field.Tag == nil || len(field.Names) != 1 {
					continue
				}
				tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`")).Get("pulumi")
				fields[tag] = exprString(field.Type)
			}
			sdkFields[spec.Name.Name] = fields
			return false
		})
	}
	require.NotEmpty(t, sdkFields["releaseArgs"], "the SDK's releaseArgs was not found")
	require.NotEmpty(t, sdkFields["RepositoryOpts"], "the SDK's RepositoryOpts was not found")

	check := func(ours reflect.Type, sdk map[string]string) {
		for i := range ours.NumField() {
			f := ours.Field(i)
			tag := f.Tag.Get("pulumi")
			sdkType, ok := sdk[tag]
			if assert.Truef(t, ok, "%s.%s: input %q is not in the SDK's schema", ours.Name(), f.Name, tag) {
				ourType := strings.ReplaceAll(f.Type.String(), "helmrelease.repositoryOpts", "RepositoryOpts")
				assert.Equalf(t, sdkType, ourType, "%s.%s: input %q has another type in the SDK", ours.Name(), f.Name, tag)
			}
		}
	}
	check(reflect.TypeOf(releaseArgs{}), sdkFields["releaseArgs"])
	check(reflect.TypeOf(repositoryOpts{}), sdkFields["RepositoryOpts"])
}

// exprString prints a field type as reflect would: *string, map[string]interface {}.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.MapType:
		return "map[" + exprString(e.Key) + "]" + exprString(e.Value)
	case *ast.ArrayType:
		return "[]" + exprString(e.Elt)
	case *ast.InterfaceType:
		return "interface {}"
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}
