package k8syaml

import (
	"reflect"
	"strings"
	"testing"

	"nodeless-eks/testkit/gomod"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewConfigGroupRegistersTheProvidersComponent(t *testing.T) {
	rec := mock.New("project", "stack")
	files := []string{"https://example.com/a.yaml", "https://example.com/b.yaml"}
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		_, err := NewConfigGroup(ctx, "crds", &ConfigGroupArgs{Files: pulumi.ToStringArray(files)})
		return err
	}).Err
	require.NoError(t, err)
	require.Len(t, rec.All(), 1)
	reg := rec.All()[0]
	_, moduleVersion := gomod.Dir(t, gomod.PulumiKubernetes)

	assert.Equal(t, tokens.ConfigGroup, reg.Type, "the provider's ConfigGroup type")
	assert.True(t, reg.Remote, "the provider constructs the group's children")
	assert.Equal(t, moduleVersion, "v"+reg.Version, "the provider version is the pulumi-kubernetes module's")
	var got []string
	for _, f := range reg.Inputs["files"].ArrayValue() {
		got = append(got, f.StringValue())
	}
	assert.Equal(t, files, got, "files are sent in order")
}

func TestNewConfigGroupRequiresFiles(t *testing.T) {
	noFiles := func(ctx *pulumi.Context) error { _, err := NewConfigGroup(ctx, "x", &ConfigGroupArgs{}); return err }
	assert.ErrorContains(t, mock.New("project", "stack").Run(t, nil, false, noFiles).Err, "Files is required")
}

// TestWireShapeMatchesTheSDKSchema holds every input this package sends to
// the name and type of pulumi-kubernetes' generated configGroupArgs,
// parsed from the module source rather than compiled.
func TestWireShapeMatchesTheSDKSchema(t *testing.T) {
	sdk := gomod.PulumiFields(t, gomod.PulumiKubernetes, "go/kubernetes/yaml/v2", []string{"configGroup.go"}, "configGroupArgs")
	gomod.RequireWireShape(t, reflect.TypeOf(configGroupArgs{}), sdk["configGroupArgs"], strings.NewReplacer())
}
