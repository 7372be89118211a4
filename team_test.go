package main

import (
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeCommand                 = "command:local:Command"
	typeAccessPolicyAssociation = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
	typeKmsKey                  = "aws:kms/key:Key"
)

// devStackWith runs Pulumi.dev.yaml with some keys changed.
func devStackWith(t *testing.T, set map[string]string) stackRun {
	t.Helper()
	return stackWith(t, "Pulumi.dev.yaml", set)
}

// stackWith runs a stack file with some project keys changed; the run
// must succeed.
func stackWith(t *testing.T, stackFile string, set map[string]string) stackRun {
	t.Helper()
	cfg := stackConfig(t, stackFile)
	for k, v := range set {
		cfg[testProject+":"+k] = v
	}
	run := runProgram(t, cfg, fakeaws.DevVpc())
	require.NoError(t, run.err)
	return run
}

// TestAccessEntries: people's access and the stack's order (the entries
// themselves: cluster/cluster_test.go).
func TestAccessEntries(t *testing.T) {
	run := devStackWith(t, map[string]string{"accessEntries": `{
		"platform": {"principalArn": "arn:aws:iam::111122223333:role/platform-admins", "policy": "cluster-admin"},
		"team-a":   {"principalArn": "arn:aws:iam::123456789012:role/teams/team-a", "policy": "edit", "namespaces": ["team-a", "team-a-ci"]}
	}`})
	rec := run.rec

	t.Run("nothing in the bootstrap waits for people's access", func(t *testing.T) {
		cleanup := rec.Get(t, typeCommand, "eks-demo-addons-destroy-cleanup")
		for _, typ := range []string{typeHelmRelease, typeNodePool, typeAddon} {
			for _, reg := range rec.OfType(typ) {
				if rec.DependsOn(reg, cleanup) {
					continue // ArgoCD, deleted before the cleanup; see TestDestroyCleanup
				}
				for _, e := range rec.OfType(typeAccessEntry) {
					if strings.Contains(e.Name, "-access-") {
						rec.RequireNotDependsOn(t, reg, e)
					}
				}
			}
		}
	})

	t.Run("the destroy cleanup runs while people still have access", func(t *testing.T) {
		cleanup := rec.Get(t, typeCommand, "eks-demo-addons-destroy-cleanup")
		for _, typ := range []string{typeAccessEntry, typeAccessPolicyAssociation} {
			for _, e := range rec.OfType(typ) {
				if strings.Contains(e.Name, "-access-") {
					rec.RequireDependsOn(t, cleanup, e)
				}
			}
		}
	})

}

// TestTwoStacksInOneVpc runs two clusters against the same VPC: neither may
// change anything the other (or the VPC's owner) has, and no physical name
// may collide.
func TestTwoStacksInOneVpc(t *testing.T) {
	names := map[string]map[string]string{} // cluster -> physical name -> resource
	for _, clusterName := range []string{"team-a", "team-b"} {
		run := devStackWith(t, map[string]string{"clusterName": clusterName})
		names[clusterName] = map[string]string{}
		vpc := fakeaws.DevVpc()
		foreign := map[string]bool{vpc.ID: true}
		for _, s := range vpc.Subnets {
			foreign[s.ID] = true
		}
		for _, reg := range programRegistrations(run.rec) {
			if (!reg.Custom && !reg.Remote) || strings.HasPrefix(reg.Type, "kubernetes:") || strings.HasPrefix(reg.Type, "pulumi:providers:") {
				continue // Kubernetes objects live in each stack's own cluster
			}
			assert.NotEqualf(t, "aws:ec2/tag:Tag", reg.Type, "%s: %s tags %v, which it does not own", clusterName, reg.Name, reg.Inputs["resourceId"])
			for _, key := range []string{"resourceId", "subnetId", "routeTableId"} {
				if v, ok := reg.Inputs[resource.PropertyKey(key)]; ok && v.IsString() {
					assert.Falsef(t, foreign[v.StringValue()], "%s: %s::%s changes %s, which belongs to the VPC's owner",
						clusterName, reg.Type, reg.Name, v.StringValue())
				}
			}
			if n, ok := reg.Inputs["name"]; ok && n.IsString() {
				names[clusterName][reg.Type+" "+n.StringValue()] = reg.Name
			}
		}
		tags, ok := run.rec.Get(t, typeSecurityGroup, clusterName+"-node").Inputs["tags"]
		require.True(t, ok, "%s: the node security group carries tags", clusterName)
		assert.Equal(t, clusterName, tags.ObjectValue()["karpenter.sh/discovery"].StringValue(), "the only discovery tag is on our own group")
	}
	require.NotEmpty(t, names["team-a"], "explicitly named resources were found")
	for name, res := range names["team-a"] {
		_, clash := names["team-b"][name]
		assert.Falsef(t, clash, "%s (%s) has the same physical name in both stacks", name, res)
	}
}

func TestProductionGuards(t *testing.T) {
	run := runProgram(t, stackConfig(t, "testdata/stack-multipool.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	eks := run.rec.Get(t, typeEksCluster, "eks-prod")

	t.Run("the cluster and its key are protected", func(t *testing.T) {
		assert.True(t, eks.Protect, "the pulumi-eks component is protected")
		assert.True(t, run.rec.Get(t, typeKmsKey, "eks-prod-secrets").Protect)
	})
	t.Run("the transform protects pulumi-eks's EKS cluster and nothing else", func(t *testing.T) {
		child := eks.Transformed["aws:eks/cluster:Cluster"]
		assert.True(t, child.Protect, "the transform protects the EKS cluster itself, not relying on the component's protection reaching it")
		assert.True(t, eks.Transformed["aws:iam/role:Role"].Unchanged, "other children of pulumi-eks pass unchanged")
	})
}

func TestIAMPathAndBoundary(t *testing.T) {
	const boundary = "arn:aws:iam::123456789012:policy/org-boundary"
	run := devStackWith(t, map[string]string{"iamPath": "/eks/", "iamPermissionsBoundary": boundary})
	rec := run.rec
	roles := rec.OfType(typeRole)
	require.GreaterOrEqual(t, len(roles), 5, "service, Fargate, controller, node and LB controller roles")
	for _, role := range roles {
		assert.Equalf(t, "/eks/", role.Inputs["path"].StringValue(), "role %s", role.Name)
		assert.Equalf(t, boundary, role.Inputs["permissionsBoundary"].StringValue(), "role %s", role.Name)
	}
	for _, policy := range rec.OfType(typePolicy) {
		assert.Equalf(t, "/eks/", policy.Inputs["path"].StringValue(), "policy %s", policy.Name)
	}

	t.Run("the cluster's service role is ours, with its policy before the cluster", func(t *testing.T) {
		service := rec.Get(t, typeRole, "eks-demo-service")
		eks := rec.Get(t, typeEksCluster, "eks-demo")
		assert.True(t, eks.Inputs["serviceRole"].IsResourceReference(), "pulumi-eks must use our role")
		rec.RequireDependsOn(t, eks, service)
		rec.RequireDependsOn(t, eks, rec.Get(t, typeAttachment, "eks-demo-service"))
		trust := iamtest.Parse(t, service.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		assert.Equal(t, map[string]any{"Service": "eks.amazonaws.com"}, trust[0].Principal)
	})
	t.Run("without them pulumi-eks keeps its own service role", func(t *testing.T) {
		dev := runDevStack(t).rec
		assert.NotContains(t, dev.Get(t, typeEksCluster, "eks-demo").Inputs, resource.PropertyKey("serviceRole"))
		for _, role := range dev.OfType(typeRole) {
			assert.NotEqual(t, "eks-demo-service", role.Name)
			assert.NotContainsf(t, role.Inputs, resource.PropertyKey("permissionsBoundary"), "role %s", role.Name)
			assert.NotContainsf(t, role.Inputs, resource.PropertyKey("path"), "role %s", role.Name)
		}
	})
}
