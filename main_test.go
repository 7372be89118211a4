package main

import (
	"encoding/json"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
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

func TestClusterLayer(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	eks := rec.Get(t, typeEksCluster, "eks-demo")
	fargate := rec.Get(t, typeFargateProfile, "eks-demo-karpenter")
	vpcCni := rec.Get(t, typeAddon, "eks-demo-vpc-cni")

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

	t.Run("the cluster is a pulumi-eks remote component named by config", func(t *testing.T) {
		assert.True(t, eks.Remote, "eks:index:Cluster is a remote component")
		assert.Equal(t, "eks-demo", eks.Inputs["name"].StringValue())
		assert.Equal(t, "1.36", eks.Inputs["version"].StringValue())
		assert.Equal(t, "vpc-0de0", eks.Inputs["vpcId"].StringValue())
		assert.ElementsMatch(t, []string{"subnet-private-a", "subnet-private-b", "subnet-private-c"},
			stringsOf(t, eks.Inputs["privateSubnetIds"]), "the control plane uses the private subnets")
		assert.Equal(t, true, eks.Inputs["createOidcProvider"].V, "IRSA needs the OIDC provider")
		assert.Equal(t, true, eks.Inputs["endpointPublicAccess"].V)
		assert.Equal(t, true, eks.Inputs["endpointPrivateAccess"].V)
		assert.Equal(t, []string{"0.0.0.0/0"}, stringsOf(t, eks.Inputs["publicAccessCidrs"]), "the dev stack as shipped: open, since it cannot know the deployer's range")
	})

	t.Run("authentication mode is API", func(t *testing.T) {
		assert.Equal(t, "API", eks.Inputs["authenticationMode"].StringValue(),
			"CONFIG_MAP mode rewrites aws-auth and drops the Fargate role mapping")
	})

	t.Run("pulumi-eks add-ons are off", func(t *testing.T) {
		coredns := eks.Inputs["corednsAddonOptions"]
		require.True(t, coredns.IsObject(), "corednsAddonOptions must be sent; an absent struct defaults to enabled")
		assert.Equal(t, false, coredns.ObjectValue()["enabled"].V, "CoreDNS is ours, on Karpenter nodes")
		kubeProxy := eks.Inputs["kubeProxyAddonOptions"]
		require.True(t, kubeProxy.IsObject())
		assert.Equal(t, false, kubeProxy.ObjectValue()["enabled"].V, "pulumi-eks's kube-proxy would delay its outputs")
		assert.Equal(t, true, eks.Inputs["useDefaultVpcCni"].V, "pulumi-eks's vpc-cni would delay its outputs")
	})

	t.Run("the fargate profile selects exactly the karpenter namespace on private subnets", func(t *testing.T) {
		selectors := fargate.Inputs["selectors"].ArrayValue()
		require.Len(t, selectors, 1, "one selector")
		sel := selectors[0].ObjectValue()
		assert.Equal(t, "karpenter", sel["namespace"].StringValue())
		assert.NotContains(t, sel, resource.PropertyKey("labels"), "every pod of the namespace runs on Fargate")
		assert.ElementsMatch(t, []string{"subnet-private-a", "subnet-private-b", "subnet-private-c"},
			stringsOf(t, fargate.Inputs["subnetIds"]), "Fargate takes private subnets only")
		assert.Equal(t, "eks-demo", fargate.Inputs["clusterName"].StringValue())
		rec.RequireDependsOn(t, fargate, eks)
	})

	t.Run("the fargate pod execution role trusts only this cluster's profiles", func(t *testing.T) {
		role := rec.Get(t, typeRole, "eks-demo-fargate-pod-execution")
		var doc struct {
			Statement []struct {
				Effect    string
				Action    string
				Principal map[string]string
				Condition map[string]map[string]string
			}
		}
		require.NoError(t, json.Unmarshal([]byte(role.Inputs["assumeRolePolicy"].StringValue()), &doc))
		require.Len(t, doc.Statement, 1)
		st := doc.Statement[0]
		assert.Equal(t, "sts:AssumeRole", st.Action)
		assert.Equal(t, "eks-fargate-pods.amazonaws.com", st.Principal["Service"])
		assert.Equal(t, "arn:aws:eks:eu-west-1:"+testAccount+":fargateprofile/eks-demo/*", st.Condition["ArnLike"]["aws:SourceArn"])
		rec.RequireNotDependsOn(t, role, eks)
		attachment := rec.Get(t, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "eks-demo-fargate-pod-execution")
		assert.Equal(t, "arn:aws:iam::aws:policy/AmazonEKSFargatePodExecutionRolePolicy", attachment.Inputs["policyArn"].StringValue())
		rec.RequireDependsOn(t, fargate, attachment)
	})

	t.Run("vpc-cni has one ENIConfig per pod-subnet AZ with prefix delegation", func(t *testing.T) {
		var cfg struct {
			Env       map[string]string `json:"env"`
			EniConfig struct {
				Create  bool   `json:"create"`
				Region  string `json:"region"`
				Subnets map[string]struct {
					ID             string   `json:"id"`
					SecurityGroups []string `json:"securityGroups"`
				} `json:"subnets"`
			} `json:"eniConfig"`
		}
		require.NoError(t, json.Unmarshal([]byte(vpcCni.Inputs["configurationValues"].StringValue()), &cfg))
		assert.Equal(t, "true", cfg.Env["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"])
		assert.Equal(t, "topology.kubernetes.io/zone", cfg.Env["ENI_CONFIG_LABEL_DEF"], "ENIConfigs are named by AZ")
		assert.Equal(t, "true", cfg.Env["ENABLE_PREFIX_DELEGATION"])
		assert.True(t, cfg.EniConfig.Create)
		assert.Equal(t, "eu-west-1", cfg.EniConfig.Region)
		got := map[string]string{}
		for az, s := range cfg.EniConfig.Subnets {
			got[az] = s.ID
			assert.Equal(t, []string{"sg-eks-demo-node"}, s.SecurityGroups, "pods in %s join the node security group", az)
		}
		assert.Equal(t, map[string]string{
			"eu-west-1a": "subnet-pod-a", "eu-west-1b": "subnet-pod-b", "eu-west-1c": "subnet-pod-c",
		}, got)
		assert.Equal(t, "vpc-cni", vpcCni.Inputs["addonName"].StringValue())
		assert.Equal(t, "eks-demo", vpcCni.Inputs["clusterName"].StringValue())
		assert.Equal(t, "OVERWRITE", vpcCni.Inputs["resolveConflictsOnCreate"].StringValue(), "EKS installs a self-managed vpc-cni first")
	})

	t.Run("vpc-cni takes the EKS default version, never the most recent", func(t *testing.T) {
		assert.Equal(t, fakeaws.DefaultVpcCniVersion, vpcCni.Inputs["addonVersion"].StringValue())
		var asked []mock.Invocation
		for _, inv := range rec.Invocations() {
			if inv.Token == "aws:eks/getAddonVersion:getAddonVersion" && inv.Args["addonName"].StringValue() == "vpc-cni" {
				asked = append(asked, inv)
			}
		}
		require.Len(t, asked, 1, "one lookup of vpc-cni's default version")
		assert.Equal(t, "1.36", asked[0].Args["kubernetesVersion"].StringValue())
		assert.Equal(t, false, asked[0].Args["mostRecent"].V)
	})

	t.Run("vpc-cni waits for the cluster but not for the fargate profile", func(t *testing.T) {
		rec.RequireDependsOn(t, vpcCni, eks)
		rec.RequireNotDependsOn(t, vpcCni, fargate)
		for _, reg := range rec.OfType("aws:iam/role:Role") {
			rec.RequireNotDependsOn(t, vpcCni, reg)
		}
	})

	t.Run("the node security group carries the discovery tag and talks to the cluster", func(t *testing.T) {
		sg := rec.Get(t, typeSecurityGroup, "eks-demo-node")
		assert.Equal(t, "eks-demo", sg.Inputs["tags"].ObjectValue()["karpenter.sh/discovery"].StringValue())
		assert.Equal(t, "dev", sg.Inputs["tags"].ObjectValue()["environment"].StringValue(), "stack tags apply")
		rule := rec.Get(t, "aws:ec2/securityGroupRule:SecurityGroupRule", "eks-demo-cluster-from-node")
		assert.Equal(t, "sg-eks-cluster", rule.Inputs["securityGroupId"].StringValue())
		assert.Equal(t, "sg-eks-demo-node", rule.Inputs["sourceSecurityGroupId"].StringValue())
		self := rec.Get(t, "aws:ec2/securityGroupRule:SecurityGroupRule", "eks-demo-node-from-node")
		assert.Equal(t, true, self.Inputs["self"].V, "nodes and pods reach each other")
		assert.Equal(t, "ingress", self.Inputs["type"].StringValue())
		back := rec.Get(t, "aws:ec2/securityGroupRule:SecurityGroupRule", "eks-demo-node-from-cluster")
		assert.Equal(t, "sg-eks-cluster", back.Inputs["sourceSecurityGroupId"].StringValue())
		rec.RequireNotDependsOn(t, sg, eks)
	})

	t.Run("nothing is tagged that the stack does not own", func(t *testing.T) {
		assert.Empty(t, rec.OfType("aws:ec2/tag:Tag"), "the VPC and its subnets belong to someone else")
	})

	t.Run("the kubernetes provider is built from the cluster's kubeconfig, as a secret", func(t *testing.T) {
		providers := rec.OfType(typeK8sProvider)
		require.Len(t, providers, 1)
		kubeconfig := providers[0].Inputs["kubeconfig"]
		assert.True(t, kubeconfig.ContainsSecrets(), "the engine must see the kubeconfig as a secret")
		rec.RequireDependsOn(t, providers[0], eks)
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

func TestVpcCniVersionFromConfig(t *testing.T) {
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	cfg[testProject+":addonVersions"] = `{"vpcCni":"v1.20.4-eksbuild.1"}`
	run := runProgram(t, cfg, fakeaws.DevVpc())
	require.NoError(t, run.err)
	addon := run.rec.Get(t, typeAddon, "eks-demo-vpc-cni")
	assert.Equal(t, "v1.20.4-eksbuild.1", addon.Inputs["addonVersion"].StringValue())
	for _, inv := range run.rec.Invocations() {
		if inv.Token == "aws:eks/getAddonVersion:getAddonVersion" {
			assert.NotEqual(t, "vpc-cni", inv.Args["addonName"].StringValue(), "a pinned version needs no lookup")
		}
	}
}

func TestVpcLookupFailures(t *testing.T) {
	oneAZ := fakeaws.DevVpc()
	oneAZ.Subnets = filterSubnets(oneAZ.Subnets, func(s fakeaws.Subnet) bool { return s.AZ == "eu-west-1a" })
	twoPodsInA := fakeaws.DevVpc()
	twoPodsInA.Subnets = append(twoPodsInA.Subnets, fakeaws.Subnet{ID: "subnet-pod-a2", AZ: "eu-west-1a", Name: "eks-demo-vpc-podsubnet-eu-west-1a-2"})
	noPodInC := fakeaws.DevVpc()
	noPodInC.Subnets = filterSubnets(noPodInC.Subnets, func(s fakeaws.Subnet) bool { return s.ID != "subnet-pod-c" })
	otherVpc := fakeaws.DevVpc()
	otherVpc.Name = "someone-elses-vpc"

	tests := []struct {
		name string
		vpc  fakeaws.Vpc
		set  map[string]string
		want []string
	}{
		{"the VPC does not exist", otherVpc, nil,
			[]string{`looking up VPC with Name tag "eks-demo-vpc" (config vpcName)`}},
		{"the private pattern matches nothing", fakeaws.DevVpc(), map[string]string{"privateSubnetNamePattern": "eks-demo-vpc-privat-*"},
			[]string{"config privateSubnetNamePattern", `no subnet of vpc-0de0 has a Name tag matching "eks-demo-vpc-privat-*"`}},
		{"the pod pattern matches nothing", fakeaws.DevVpc(), map[string]string{"podSubnetNamePattern": "pods-*"},
			[]string{"config podSubnetNamePattern", `matching "pods-*"`}},
		{"private subnets in one AZ", oneAZ, nil,
			[]string{"span 1 availability zone(s); EKS needs at least 2"}},
		{"two pod subnets in one AZ", twoPodsInA, nil,
			[]string{"pod subnets subnet-pod-a and subnet-pod-a2 are both in eu-west-1a"}},
		{"an AZ without a pod subnet", noPodInC, nil,
			[]string{"no pod subnet in eu-west-1c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := stackConfig(t, "Pulumi.dev.yaml")
			for k, v := range tt.set {
				cfg[testProject+":"+k] = v
			}
			run := runProgram(t, cfg, tt.vpc)
			require.Error(t, run.err)
			for _, want := range tt.want {
				assert.Contains(t, run.err.Error(), want)
			}
			for _, reg := range programRegistrations(run.rec) {
				assert.Falsef(t, reg.Custom, "no cloud resource may be registered when the lookup fails; got %s::%s", reg.Type, reg.Name)
			}
		})
	}
}

func filterSubnets(subnets []fakeaws.Subnet, keep func(fakeaws.Subnet) bool) []fakeaws.Subnet {
	var out []fakeaws.Subnet
	for _, s := range subnets {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// stringsOf returns a property that holds a list of strings.
func stringsOf(t *testing.T, v resource.PropertyValue) []string {
	t.Helper()
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	require.True(t, v.IsArray(), "want a list, got %v", v)
	out := make([]string, 0, len(v.ArrayValue()))
	for _, e := range v.ArrayValue() {
		out = append(out, e.StringValue())
	}
	return out
}
