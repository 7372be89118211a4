package main

import (
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	typeEksCluster     = "eks:index:Cluster"
	typeFargateProfile = "aws:eks/fargateProfile:FargateProfile"
	typeAddon          = "aws:eks/addon:Addon"
	typeRole           = "aws:iam/role:Role"
	typeSecurityGroup  = "aws:ec2/securityGroup:SecurityGroup"
	typeK8sProvider    = "pulumi:providers:kubernetes"
)

// runDevStack runs the program with Pulumi.dev.yaml against the dev VPC.
func runDevStack(t *testing.T) stackRun {
	t.Helper()
	run := runProgram(t, stackConfig(t, "Pulumi.dev.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err, "the dev stack must run under mocks")
	return run
}

// TestWholeStack: what no single layer can show (cluster/cluster_test.go
// tests the cluster layer itself).
func TestWholeStack(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	eks := rec.Get(t, typeEksCluster, "eks-demo")

	t.Run("no node group of any kind is registered", func(t *testing.T) {
		for _, reg := range programRegistrations(rec) {
			lower := strings.ToLower(reg.Type)
			assert.NotContains(t, lower, "nodegroup", "%s::%s is a node group", reg.Type, reg.Name)
			assert.NotContains(t, lower, "autoscaling", "%s::%s is an auto scaling group", reg.Type, reg.Name)
			assert.NotContains(t, lower, "launchconfiguration", "%s::%s feeds a node group", reg.Type, reg.Name)
		}
		assert.Equal(t, true, eks.Inputs["skipDefaultNodeGroup"].V, "pulumi-eks must skip its default node group")
		assert.NotContains(t, eks.Inputs, resource.PropertyKey("fargate"),
			"a pulumi-eks fargate input would hold every output until the profile exists")
	})

	t.Run("stack outputs", func(t *testing.T) {
		for _, key := range []string{
			"region", "clusterName", "clusterEndpoint", "kubeconfig", "oidcProviderArn", "oidcIssuer",
			"clusterSecurityGroupId", "nodeSecurityGroupId", "secretsKeyArn", "logGroupName",
			"vpcId", "privateSubnetIds", "podSubnetIds",
			"controllerRoleArn", "nodeRoleName", "nodeRoleArn", "interruptionQueueName", "karpenterVersion", "nodePoolNames",
			"coreDnsVersion", "loadBalancerControllerRoleArn", "argoCdNamespace",
		} {
			assert.Contains(t, run.exports, key)
		}
		assert.Equal(t, "eu-west-1", run.exports["region"])
		assert.Equal(t, "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF", run.exports["oidcIssuer"])
		assert.Equal(t, "sg-eks-cluster", run.exports["clusterSecurityGroupId"])
		assert.Equal(t, "sg-eks-demo-node", run.exports["nodeSecurityGroupId"])
		assert.Equal(t, "arn:aws:iam::"+testAccount+":role/eks-demo-karpenter-node", run.exports["nodeRoleArn"])
		assert.Equal(t, "arn:aws:kms:eu-west-1:"+testAccount+":key/eks-demo-secrets-0000", run.exports["secretsKeyArn"])
		assert.Equal(t, "/aws/eks/eks-demo/cluster", run.exports["logGroupName"])
		assert.True(t, run.secretExports["kubeconfig"], "the kubeconfig output must be secret")
		assert.False(t, run.secretExports["clusterName"])
		assert.Equal(t, "eks-demo", run.exports["clusterName"])
		assert.Equal(t, "vpc-0de0", run.exports["vpcId"])
		assert.Equal(t, "eks-demo-karpenter-node", run.exports["nodeRoleName"])
		assert.Equal(t, versions.Karpenter, run.exports["karpenterVersion"])
		assert.Equal(t, "argocd", run.exports["argoCdNamespace"])
		assert.Equal(t, map[string]string{"eu-west-1a": "subnet-pod-a", "eu-west-1b": "subnet-pod-b", "eu-west-1c": "subnet-pod-c"},
			run.exports["podSubnetIds"])
	})
}
