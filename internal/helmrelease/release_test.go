package helmrelease

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

// registered is what the mock engine saw of one registration.
type registered struct {
	typ, name, version string
	inputs             resource.PropertyMap
}

type recorder struct {
	mu   sync.Mutex
	regs []registered
}

func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, registered{args.TypeToken, args.Name, args.RegisterRPC.GetVersion(), args.Inputs})
	return args.Name + "-id", args.Inputs, nil
}

func (r *recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// kubernetesModuleDir is where the go command keeps the pulumi-kubernetes
// module that go.mod requires.
func kubernetesModuleDir(t *testing.T) (dir, version string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", kubernetesModule).Output()
	require.NoError(t, err, "go list -m %s", kubernetesModule)
	var m struct{ Dir, Version string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "the module must be downloaded (go mod download)")
	return m.Dir, m.Version
}

func TestNewRegistersTheProvidersReleaseType(t *testing.T) {
	rec := &recorder{}
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
	require.Len(t, rec.regs, 1)
	reg := rec.regs[0]
	_, moduleVersion := kubernetesModuleDir(t)

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"the type token is the provider's Release", reg.typ, "kubernetes:helm.sh/v3:Release"},
		{"the provider version is the pulumi-kubernetes module's", "v" + reg.version, moduleVersion},
		{"compat is true whatever the caller set", reg.inputs["compat"].V, "true"},
		{"chart", reg.inputs["chart"].V, "aws-load-balancer-controller"},
		{"release name", reg.inputs["name"].V, "aws-load-balancer-controller"},
		{"chart version", reg.inputs["version"].V, "1.14.0"},
		{"namespace", reg.inputs["namespace"].V, "kube-system"},
		{"createNamespace", reg.inputs["createNamespace"].V, true},
		{"skipCrds", reg.inputs["skipCrds"].V, true},
		{"timeout", reg.inputs["timeout"].V, 900.0},
		{"repositoryOpts is an object with repo", reg.inputs["repositoryOpts"].ObjectValue()["repo"].V, "https://aws.github.io/eks-charts"},
		{"values resolve outputs", reg.inputs["values"].ObjectValue()["vpcId"].V, "vpc-1"},
		{"values keep plain values", reg.inputs["values"].ObjectValue()["replicaCount"].V, 2.0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
	t.Run("unset inputs are not sent", func(t *testing.T) {
		assert.NotContains(t, reg.inputs, resource.PropertyKey("waitForJobs"))
	})
}

func TestNewRequiresAChart(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := New(ctx, "x", &ReleaseArgs{Name: pulumi.String("x")})
		return err
	}, pulumi.WithMocks("project", "stack", &recorder{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Chart is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and Go type that pulumi-kubernetes' generated helm/v3 package
// declares for it. The generated source is parsed, not compiled, so this
// test does not pay for the packages the program avoids.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	dir, _ := kubernetesModuleDir(t)
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
