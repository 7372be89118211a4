package cluster

import (
	"encoding/json"
	"testing"

	"nodeless-eks/internal/iamopts"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakeaws/pulumieks"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testAccount = fakeaws.AccountID
)

// devArgs are what the program hands the layer on the dev stack
// (Pulumi.dev.yaml), the VPC lookup's results aside.
func devArgs() *Args {
	return &Args{
		ClusterName:           "eks-demo",
		KubernetesVersion:     "1.36",
		Region:                fakeaws.Region,
		FargateNamespace:      "karpenter",
		EndpointPublicAccess:  true,
		EndpointPrivateAccess: true,
		PublicAccessCidrs:     []string{"0.0.0.0/0"},
		Tags:                  map[string]string{"environment": "dev", "owner": "platform-team"},
		LogTypes:              []string{"api", "audit", "authenticator"},
		LogRetentionDays:      90,
		AccessEntries:         map[string]AccessEntry{},
		IAM:                   iamopts.Options{Path: "/"},
		SupportType:           SupportStandard,
	}
}

// layer is the VPC lookup and the cluster, run alone against the fake
// account as the program runs them.
type layer struct {
	rec *mock.Recorder
	err error
}

// newLayer runs NewVpc against vpc and New with devArgs after change.
func newLayer(t *testing.T, vpc fakeaws.Vpc, change func(*Args)) layer {
	t.Helper()
	rec := (&fakeaws.Account{Vpc: vpc, ClusterName: "eks-demo"}).Recorder("nodeless-eks", "dev")
	err := rec.Run(t, nil, false, pulumieks.WithStandIn(func(ctx *pulumi.Context) error {
		v, err := NewVpc(ctx, "eks-demo", &VpcArgs{VpcName: vpc.Name,
			PrivateSubnetNamePattern: "eks-demo-vpc-private-*", PodSubnetNamePattern: "eks-demo-vpc-podsubnet-*"})
		if err != nil {
			return err
		}
		args := devArgs()
		args.VpcID, args.PrivateSubnetIDs, args.PodSubnetIDsByAZ = v.ID, v.PrivateSubnetIDs, v.PodSubnetIDsByAZ
		if change != nil {
			change(args)
		}
		_, err = New(ctx, "eks-demo", args)
		return err
	})).Err
	return layer{rec: rec, err: err}
}

// devLayer is the layer with devArgs in the dev VPC.
func devLayer(t *testing.T, change func(*Args)) *mock.Recorder {
	t.Helper()
	l := newLayer(t, fakeaws.DevVpc(), change)
	require.NoError(t, l.err)
	return l.rec
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

func TestClusterLayer(t *testing.T) {
	rec := devLayer(t, nil)
	eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
	fargate := rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter")
	vpcCni := rec.Get(t, tokens.Addon, "eks-demo-vpc-cni")

	t.Run("pulumi-eks creates no node group", func(t *testing.T) {
		assert.Equal(t, true, eks.Inputs["skipDefaultNodeGroup"].V, "pulumi-eks must skip its default node group")
		assert.NotContains(t, eks.Inputs, resource.PropertyKey("fargate"),
			"a pulumi-eks fargate input would hold every output until the profile exists")
	})

	t.Run("the cluster is a pulumi-eks remote component named by its arguments", func(t *testing.T) {
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
		role := rec.Get(t, tokens.Role, "eks-demo-fargate-pod-execution")
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
		attachment := rec.Get(t, tokens.RolePolicyAttachment, "eks-demo-fargate-pod-execution")
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
		assert.JSONEq(t, `{"nodeless-eks/cluster":"eks-demo"}`, cfg.Env["ADDITIONAL_ENI_TAGS"], "its interfaces carry the cluster, for the destroy's sweep")
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
		for _, reg := range rec.OfType(tokens.Role) {
			if reg.Name == "eks-demo-service" {
				continue // the cluster's own service role, which the cluster waits for
			}
			rec.RequireNotDependsOn(t, vpcCni, reg)
		}
	})

	t.Run("the node security group carries the discovery tag and talks to the cluster", func(t *testing.T) {
		sg := rec.Get(t, tokens.SecurityGroup, "eks-demo-node")
		assert.Equal(t, "eks-demo", sg.Inputs["tags"].ObjectValue()["karpenter.sh/discovery"].StringValue())
		assert.Equal(t, "dev", sg.Inputs["tags"].ObjectValue()["environment"].StringValue(), "stack tags apply")
		rule := rec.Get(t, tokens.SecurityGroupRule, "eks-demo-cluster-from-node")
		assert.Equal(t, "sg-eks-cluster", rule.Inputs["securityGroupId"].StringValue())
		assert.Equal(t, "sg-eks-demo-node", rule.Inputs["sourceSecurityGroupId"].StringValue())
		self := rec.Get(t, tokens.SecurityGroupRule, "eks-demo-node-from-node")
		assert.Equal(t, true, self.Inputs["self"].V, "nodes and pods reach each other")
		assert.Equal(t, "ingress", self.Inputs["type"].StringValue())
		back := rec.Get(t, tokens.SecurityGroupRule, "eks-demo-node-from-cluster")
		assert.Equal(t, "sg-eks-cluster", back.Inputs["sourceSecurityGroupId"].StringValue())
		rec.RequireNotDependsOn(t, sg, eks)
	})

	t.Run("nothing is tagged that the stack does not own", func(t *testing.T) {
		assert.Empty(t, rec.OfType("aws:ec2/tag:Tag"), "the VPC and its subnets belong to someone else")
	})

	t.Run("the kubernetes provider is built from the cluster's kubeconfig, as a secret", func(t *testing.T) {
		providers := rec.OfType(tokens.KubernetesProvider)
		require.Len(t, providers, 1)
		kubeconfig := providers[0].Inputs["kubeconfig"]
		assert.True(t, kubeconfig.ContainsSecrets(), "the engine must see the kubeconfig as a secret")
		rec.RequireDependsOn(t, providers[0], eks)
	})
}

func TestVpcCniVersionPinned(t *testing.T) {
	rec := devLayer(t, func(a *Args) { a.VpcCniVersion = "v1.20.4-eksbuild.1" })
	addon := rec.Get(t, tokens.Addon, "eks-demo-vpc-cni")
	assert.Equal(t, "v1.20.4-eksbuild.1", addon.Inputs["addonVersion"].StringValue())
	for _, inv := range rec.Invocations() {
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
	anotherStacks := fakeaws.DevVpc()
	anotherStacks.Tags = map[string]string{names.ClusterTagKey: "billing"}

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
		// Its destroy sweeps it; a stack that names it would be swept.
		{"a VPC another stack made", anotherStacks, nil,
			[]string{`vpcName "eks-demo-vpc": VPC vpc-0de0 was made by the stack of cluster billing (tag nodeless-eks/cluster=billing)`,
				"name a VPC no stack made"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := (&fakeaws.Account{Vpc: tt.vpc}).Recorder("nodeless-eks", "dev")
			private, pods := "eks-demo-vpc-private-*", "eks-demo-vpc-podsubnet-*"
			if p, ok := tt.set["privateSubnetNamePattern"]; ok {
				private = p
			}
			if p, ok := tt.set["podSubnetNamePattern"]; ok {
				pods = p
			}
			err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
				_, err := NewVpc(ctx, "eks-demo", &VpcArgs{VpcName: "eks-demo-vpc", PrivateSubnetNamePattern: private, PodSubnetNamePattern: pods})
				return err
			}).Err
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
			for _, reg := range rec.All() {
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

func TestAccessEntries(t *testing.T) {
	rec := devLayer(t, func(a *Args) {
		a.AccessEntries = map[string]AccessEntry{
			"platform": {PrincipalArn: "arn:aws:iam::111122223333:role/platform-admins", Policy: "cluster-admin"},
			"team-a":   {PrincipalArn: "arn:aws:iam::123456789012:role/teams/team-a", Policy: "edit", Namespaces: []string{"team-a", "team-a-ci"}},
		}
	})
	eks := rec.Get(t, tokens.EKSCluster, "eks-demo")

	tests := []struct {
		name, entry, principal, policy, scope string
		namespaces                            []string
	}{
		{"a cluster-admin entry is cluster-wide", "platform", "arn:aws:iam::111122223333:role/platform-admins", "AmazonEKSClusterAdminPolicy", "cluster", nil},
		{"an edit entry is limited to its namespaces", "team-a", "arn:aws:iam::123456789012:role/teams/team-a", "AmazonEKSEditPolicy", "namespace", []string{"team-a", "team-a-ci"}},
	}
	t.Run("no entry is registered without one configured", func(t *testing.T) {
		dev := devLayer(t, nil)
		assert.Empty(t, dev.OfType(tokens.AccessEntry))
		assert.Empty(t, dev.OfType(tokens.AccessPolicyAssociation))
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := rec.Get(t, tokens.AccessEntry, "eks-demo-access-"+tt.entry)
			assert.Equal(t, tt.principal, entry.Inputs["principalArn"].StringValue())
			assert.Equal(t, "STANDARD", entry.Inputs["type"].StringValue())
			assert.Equal(t, "eks-demo", entry.Inputs["clusterName"].StringValue())
			rec.RequireDependsOn(t, entry, eks)

			assoc := rec.Get(t, tokens.AccessPolicyAssociation, "eks-demo-access-"+tt.entry)
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
}

func TestControlPlaneLogging(t *testing.T) {
	t.Run("the log group exists before the cluster, with a retention", func(t *testing.T) {
		rec := devLayer(t, nil)
		group := rec.Get(t, tokens.LogGroup, "eks-demo-control-plane")
		assert.Equal(t, "/aws/eks/eks-demo/cluster", group.Inputs["name"].StringValue(), "the name EKS writes to")
		assert.Equal(t, 90.0, group.Inputs["retentionInDays"].NumberValue())
		eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
		rec.RequireDependsOn(t, eks, group)
		assert.Equal(t, []string{"api", "audit", "authenticator"}, stringsOf(t, eks.Inputs["enabledClusterLogTypes"]))
		rec.RequireNotDependsOn(t, group, eks)
	})
	t.Run("retention and log types come from config", func(t *testing.T) {
		rec := devLayer(t, func(a *Args) { a.LogRetentionDays, a.LogTypes = 30, []string{"audit"} })
		assert.Equal(t, 30.0, rec.Get(t, tokens.LogGroup, "eks-demo-control-plane").Inputs["retentionInDays"].NumberValue())
		assert.Equal(t, []string{"audit"}, stringsOf(t, rec.Get(t, tokens.EKSCluster, "eks-demo").Inputs["enabledClusterLogTypes"]))
	})
	t.Run("no log types means no log group", func(t *testing.T) {
		rec := devLayer(t, func(a *Args) { a.LogTypes = nil })
		assert.Empty(t, rec.OfType(tokens.LogGroup))
		assert.Empty(t, stringsOf(t, rec.Get(t, tokens.EKSCluster, "eks-demo").Inputs["enabledClusterLogTypes"]))
	})
}

func TestSecretsEncryption(t *testing.T) {
	t.Run("a rotated key of our own encrypts Secrets", func(t *testing.T) {
		rec := devLayer(t, nil)
		key := rec.Get(t, tokens.KMSKey, "eks-demo-secrets")
		assert.Equal(t, true, key.Inputs["enableKeyRotation"].V)
		eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
		assert.Equal(t, "arn:aws:kms:eu-west-1:"+testAccount+":key/eks-demo-secrets-0000", eks.Inputs["encryptionConfigKeyArn"].StringValue())
		rec.RequireDependsOn(t, eks, key)
		assert.False(t, key.Protect, "dev stacks can be destroyed")
		tags := key.Inputs["tags"].ObjectValue()
		assert.Equal(t, "eks-demo", tags["nodeless-eks/cluster"].StringValue(), "the deploy role reaches only keys tagged for its clusters")
		assert.Equal(t, "platform-team", tags["owner"].StringValue(), "the stack's tags too")
	})
	t.Run("a configured key is used and none is created", func(t *testing.T) {
		arn := "arn:aws:kms:eu-west-1:" + testAccount + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"
		rec := devLayer(t, func(a *Args) { a.KmsKeyArn = arn })
		assert.Empty(t, rec.OfType(tokens.KMSKey))
		assert.Equal(t, arn, rec.Get(t, tokens.EKSCluster, "eks-demo").Inputs["encryptionConfigKeyArn"].StringValue())
	})
}

func TestProtect(t *testing.T) {
	rec := devLayer(t, func(a *Args) { a.Protect = true })
	eks := rec.Get(t, tokens.EKSCluster, "eks-demo")

	t.Run("the cluster and its key are protected", func(t *testing.T) {
		assert.True(t, eks.Protect, "the pulumi-eks component is protected")
		assert.True(t, rec.Get(t, tokens.KMSKey, "eks-demo-secrets").Protect)
	})
	t.Run("the transform protects pulumi-eks's EKS cluster and nothing else", func(t *testing.T) {
		child := eks.Transformed["aws:eks/cluster:Cluster"]
		assert.True(t, child.Protect, "the transform protects the EKS cluster itself, not relying on the component's protection reaching it")
		assert.True(t, eks.Transformed["aws:iam/role:Role"].Unchanged, "other children of pulumi-eks pass unchanged")
	})
	t.Run("without Protect nothing is protected", func(t *testing.T) {
		dev := devLayer(t, nil).Get(t, tokens.EKSCluster, "eks-demo")
		assert.False(t, dev.Protect)
		assert.False(t, dev.Transformed["aws:eks/cluster:Cluster"].Protect)
	})
}

func TestUpgradePolicy(t *testing.T) {
	for _, want := range []string{SupportStandard, SupportExtended} {
		t.Run(want, func(t *testing.T) {
			rec := devLayer(t, func(a *Args) { a.SupportType = want })
			eks := rec.OfType(tokens.EKSCluster)
			require.Len(t, eks, 1)
			child, ok := eks[0].Transformed["aws:eks/cluster:Cluster"]
			require.True(t, ok, "the EKS cluster must carry a transform for its child")
			policy := child.Props["upgradePolicy"]
			require.Truef(t, policy.IsObject(), "upgradePolicy must be set on the child; got %v", child.Props)
			assert.Equal(t, want, policy.ObjectValue()["supportType"].StringValue())
			assert.Equal(t, "1.36", child.Props["version"].StringValue(), "the child's other inputs pass through")
		})
	}
}
