package main

import (
	"strings"
	"testing"

	"nodeless-eks/cluster"
	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryNameFits registers stacks whose cluster name is as long as the
// configuration accepts, and checks every physical name they create,
// explicit or autonamed, and those of pulumi-eks's children, against the
// limit of its type.
func TestEveryNameFits(t *testing.T) {
	longest := "n" + strings.Repeat("0", names.MaxClusterNameLength-1)
	tests := []struct {
		name, stackFile string
		set             map[string]string
	}{
		{"the dev stack, pulumi-eks's own service role", "Pulumi.dev.yaml", map[string]string{"clusterName": longest}},
		{"with an IAM path, the program's own service role", "Pulumi.dev.yaml", map[string]string{"clusterName": longest, "iamPath": "/platform/eks/"}},
		{"the production stack with two pools", "testdata/stack-multipool.yaml", map[string]string{"clusterName": longest}},
		{"the default name of a stack named after a region", "Pulumi.dev.yaml", map[string]string{"clusterName": names.DefaultClusterName(testProject, "staging-eu-west-1")}},
		{"the default name of a very long stack name", "Pulumi.dev.yaml", map[string]string{"clusterName": names.DefaultClusterName(testProject, strings.Repeat("review-", 9))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := stackWith(t, tt.stackFile, tt.set).rec
			checked := map[string]int{}
			check := func(typ, physical, what string) {
				checked[typ]++
				assert.NoErrorf(t, names.Check(typ, physical), "%s", what)
			}
			for _, reg := range programRegistrations(rec) {
				limit, ok := names.Limits[reg.Type]
				if !ok || !reg.Custom {
					continue
				}
				if v, set := reg.Inputs[resource.PropertyKey(limit.Input)]; set && v.IsString() {
					check(reg.Type, v.StringValue(), reg.Name+" (named by the program)")
				} else {
					check(reg.Type, names.Autoname(reg.Name), reg.Name+" (autonamed)")
				}
			}
			eks := rec.OfType(typeEksCluster)
			require.Len(t, eks, 1)
			_, ownRole := eks[0].Inputs["serviceRole"]
			for _, child := range cluster.PulumiEKSNamedChildren(eks[0].Name, eks[0].Inputs["name"].StringValue(), ownRole) {
				check(child.Type, child.Name, child.Name+" (pulumi-eks's child)")
			}
			for _, typ := range []string{"aws:iam/role:Role", "aws:cloudwatch/eventRule:EventRule", "aws:sqs/queue:Queue",
				"aws:eks/cluster:Cluster", "aws:eks/fargateProfile:FargateProfile", "aws:iam/policy:Policy"} {
				assert.Positivef(t, checked[typ], "no %s name was checked; the walk lost its way", typ)
			}
		})
	}
}
