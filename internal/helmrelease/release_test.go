package helmrelease

import (
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
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
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
	}).Err
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
	noChart := func(ctx *pulumi.Context) error {
		_, err := New(ctx, "x", &ReleaseArgs{Name: pulumi.String("x")})
		return err
	}
	assert.ErrorContains(t, mock.New("project", "stack").Run(t, nil, false, noChart).Err, "Chart is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and Go type that pulumi-kubernetes' generated helm/v3 package
// declares for it. The generated source is parsed, not compiled, so this
// test does not pay for the packages the program avoids.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	sdk := gomod.PulumiFields(t, gomod.PulumiKubernetes, "go/kubernetes/helm/v3", []string{"release.go", "pulumiTypes.go"},
		"releaseArgs", "RepositoryOpts")
	rename := strings.NewReplacer("helmrelease.repositoryOpts", "RepositoryOpts")
	gomod.RequireWireShape(t, reflect.TypeOf(releaseArgs{}), sdk["releaseArgs"], rename)
	gomod.RequireWireShape(t, reflect.TypeOf(repositoryOpts{}), sdk["RepositoryOpts"], rename)
}
