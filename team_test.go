package main

import (
	"strings"
	"testing"

	"nodeless-eks/cluster"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeCommand                 = "command:local:Command"
	typeAccessPolicyAssociation = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
	typeLogGroup                = "aws:cloudwatch/logGroup:LogGroup"
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

func TestAccessEntries(t *testing.T) {
	run := devStackWith(t, map[string]string{"accessEntries": `{
		"platform": {"principalArn": "arn:aws:iam::111122223333:role/platform-admins", "policy": "cluster-admin"},
		"team-a":   {"principalArn": "arn:aws:iam::123456789012:role/teams/team-a", "policy": "edit", "namespaces": ["team-a", "team-a-ci"]}
	}`})
	rec := run.rec
	eks := rec.Get(t, typeEksCluster, "eks-demo")

	tests := []struct {
		name, entry, principal, policy, scope string
		namespaces                            []string
	}{
		{"a cluster-admin entry is cluster-wide", "platform", "arn:aws:iam::111122223333:role/platform-admins", "AmazonEKSClusterAdminPolicy", "cluster", nil},
		{"an edit entry is limited to its namespaces", "team-a", "arn:aws:iam::123456789012:role/teams/team-a", "AmazonEKSEditPolicy", "namespace", []string{"team-a", "team-a-ci"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := rec.Get(t, typeAccessEntry, "eks-demo-access-"+tt.entry)
			assert.Equal(t, tt.principal, entry.Inputs["principalArn"].StringValue())
			assert.Equal(t, "STANDARD", entry.Inputs["type"].StringValue())
			assert.Equal(t, "eks-demo", entry.Inputs["clusterName"].StringValue())
			rec.RequireDependsOn(t, entry, eks)

			assoc := rec.Get(t, typeAccessPolicyAssociation, "eks-demo-access-"+tt.entry)
			assert.Equal(t, tt.principal, assoc.Inputs["principalArn"].StringValue())
			assert.Equal(t, "arn:aws:eks::aws:cluster-access-policy/"+tt.policy, assoc.Inputs["policyArn"].StringValue())
			scope := assoc.Inputs["accessScope"].ObjectValue()
			assert.Equal(t, tt.scope, scope["type"].StringValue())
			if tt.namespaces == nil {
				assert.NotContains(t, scope, resource.PropertyKey("namespaces"))
			} else {
				assert.Equal(t, tt.namespaces, stringsOf(t, scope["namespaces"]))
			}
			rec.RequireDependsOn(t, assoc, entry)
		})
	}

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

	t.Run("no entry is registered without config", func(t *testing.T) {
		dev := runDevStack(t)
		for _, e := range dev.rec.OfType(typeAccessEntry) {
			assert.NotContains(t, e.Name, "-access-", "only the node role's entry exists")
		}
		assert.Empty(t, dev.rec.OfType(typeAccessPolicyAssociation))
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

func TestControlPlaneLogging(t *testing.T) {
	t.Run("the log group exists before the cluster, with a retention", func(t *testing.T) {
		rec := runDevStack(t).rec
		group := rec.Get(t, typeLogGroup, "eks-demo-control-plane")
		assert.Equal(t, "/aws/eks/eks-demo/cluster", group.Inputs["name"].StringValue(), "the name EKS writes to")
		assert.Equal(t, 90.0, group.Inputs["retentionInDays"].NumberValue())
		eks := rec.Get(t, typeEksCluster, "eks-demo")
		rec.RequireDependsOn(t, eks, group)
		assert.Equal(t, []string{"api", "audit", "authenticator"}, stringsOf(t, eks.Inputs["enabledClusterLogTypes"]))
		rec.RequireNotDependsOn(t, group, eks)
	})
	t.Run("retention and log types come from config", func(t *testing.T) {
		rec := devStackWith(t, map[string]string{"logRetentionDays": "30", "clusterLogTypes": `["audit"]`}).rec
		assert.Equal(t, 30.0, rec.Get(t, typeLogGroup, "eks-demo-control-plane").Inputs["retentionInDays"].NumberValue())
		assert.Equal(t, []string{"audit"}, stringsOf(t, rec.Get(t, typeEksCluster, "eks-demo").Inputs["enabledClusterLogTypes"]))
	})
	t.Run("no log types means no log group", func(t *testing.T) {
		run := devStackWith(t, map[string]string{"clusterLogTypes": `[]`})
		assert.Empty(t, run.rec.OfType(typeLogGroup))
		assert.Equal(t, "", run.exports["logGroupName"])
	})
}

func TestSecretsEncryption(t *testing.T) {
	t.Run("a rotated key of our own encrypts Secrets", func(t *testing.T) {
		rec := runDevStack(t).rec
		key := rec.Get(t, typeKmsKey, "eks-demo-secrets")
		assert.Equal(t, true, key.Inputs["enableKeyRotation"].V)
		eks := rec.Get(t, typeEksCluster, "eks-demo")
		assert.Equal(t, "arn:aws:kms:eu-west-1:"+testAccount+":key/eks-demo-secrets-0000", eks.Inputs["encryptionConfigKeyArn"].StringValue())
		rec.RequireDependsOn(t, eks, key)
		assert.False(t, key.Protect, "dev stacks can be destroyed")
		tags := key.Inputs["tags"].ObjectValue()
		assert.Equal(t, "eks-demo", tags["nodeless-eks/cluster"].StringValue(), "the deploy role reaches only keys tagged for its clusters")
		assert.Equal(t, "platform-team", tags["owner"].StringValue(), "the stack's tags too")
	})
	t.Run("a configured key is used and none is created", func(t *testing.T) {
		arn := "arn:aws:kms:eu-west-1:" + testAccount + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"
		rec := devStackWith(t, map[string]string{"kmsKeyArn": arn}).rec
		assert.Empty(t, rec.OfType(typeKmsKey))
		assert.Equal(t, arn, rec.Get(t, typeEksCluster, "eks-demo").Inputs["encryptionConfigKeyArn"].StringValue())
	})
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
	t.Run("dev stacks are not protected", func(t *testing.T) {
		dev := runDevStack(t).rec.Get(t, typeEksCluster, "eks-demo")
		assert.False(t, dev.Protect)
		assert.False(t, dev.Transformed["aws:eks/cluster:Cluster"].Protect)
	})
}

// TestUpgradePolicy follows supportType through the transform that the
// program registers on pulumi-eks to the aws:eks/cluster:Cluster child,
// which pulumi-eks v3.9 does not let set it.
func TestUpgradePolicy(t *testing.T) {
	tests := []struct {
		name, stackFile string
		set             map[string]string
		want            string
	}{
		{"a dev stack defaults to STANDARD", "Pulumi.dev.yaml", nil, cluster.SupportStandard},
		{"a dev stack may choose EXTENDED", "Pulumi.dev.yaml", map[string]string{"supportType": "EXTENDED"}, cluster.SupportExtended},
		{"a production stack gets what it chose", "testdata/stack-multipool.yaml", map[string]string{"supportType": "EXTENDED"}, cluster.SupportExtended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := stackWith(t, tt.stackFile, tt.set).rec
			eks := rec.OfType(typeEksCluster)
			require.Len(t, eks, 1)
			child, ok := eks[0].Transformed["aws:eks/cluster:Cluster"]
			require.True(t, ok, "the EKS cluster must carry a transform for its child")
			policy := child.Props["upgradePolicy"]
			require.Truef(t, policy.IsObject(), "upgradePolicy must be set on the child; got %v", child.Props)
			assert.Equal(t, tt.want, policy.ObjectValue()["supportType"].StringValue())
			assert.Equal(t, "1.36", child.Props["version"].StringValue(), "the child's other inputs pass through")
		})
	}
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
