package main

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const typeAssociation = "aws:eks/podIdentityAssociation:PodIdentityAssociation"

func TestAddonsLayer(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	const prefix = "eks-demo-addons-"
	coreDNS := rec.Get(t, typeAddon, prefix+"coredns")
	kubeProxy := rec.Get(t, typeAddon, prefix+"kube-proxy")
	agent := rec.Get(t, typeAddon, prefix+"eks-pod-identity-agent")
	association := rec.Get(t, typeAssociation, prefix+"lb-controller")
	lbc := rec.Get(t, typeHelmRelease, prefix+"lb-controller")
	lbcRole := rec.Get(t, typeRole, prefix+"lb-controller")
	argocd := rec.Get(t, typeHelmRelease, prefix+"argocd")
	pools := rec.OfType(typeNodePool)
	require.NotEmpty(t, pools)

	t.Run("CoreDNS waits for every NodePool", func(t *testing.T) {
		for _, p := range pools {
			rec.RequireDependsOn(t, coreDNS, p)
		}
		assert.Equal(t, "coredns", coreDNS.Inputs["addonName"].StringValue())
		assert.Equal(t, fakeaws.DefaultCoreDNSVersion, coreDNS.Inputs["addonVersion"].StringValue(), "the EKS default version")
	})

	t.Run("CoreDNS replicas spread over nodes", func(t *testing.T) {
		var cfg struct {
			ReplicaCount              int `json:"replicaCount"`
			TopologySpreadConstraints []struct {
				TopologyKey       string `json:"topologyKey"`
				WhenUnsatisfiable string `json:"whenUnsatisfiable"`
			} `json:"topologySpreadConstraints"`
		}
		require.NoError(t, json.Unmarshal([]byte(coreDNS.Inputs["configurationValues"].StringValue()), &cfg))
		assert.Equal(t, 1, cfg.ReplicaCount, "the dev stack runs one")
		keys := map[string]string{}
		for _, c := range cfg.TopologySpreadConstraints {
			keys[c.TopologyKey] = c.WhenUnsatisfiable
		}
		assert.Equal(t, "DoNotSchedule", keys["kubernetes.io/hostname"])
		assert.Equal(t, "ScheduleAnyway", keys["topology.kubernetes.io/zone"])
	})

	t.Run("kube-proxy and the pod identity and node monitoring agents wait for no Karpenter or node pool resource", func(t *testing.T) {
		karpenterSide := append(rec.OfType(typeNodePool), rec.OfType(typeEC2NodeClass)...)
		karpenterSide = append(karpenterSide, rec.OfType(typeHelmRelease)...)
		karpenterSide = append(karpenterSide, rec.Get(t, typeFargateProfile, "eks-demo-karpenter"))
		monitoring := rec.Get(t, typeAddon, prefix+"eks-node-monitoring-agent")
		for _, a := range []*mock.Registration{kubeProxy, agent, monitoring} {
			for _, k := range karpenterSide {
				rec.RequireNotDependsOn(t, a, k)
			}
			rec.RequireDependsOn(t, a, rec.Get(t, typeEksCluster, "eks-demo"))
		}
	})

	t.Run("the LB controller waits for CoreDNS, the agent, its association and every NodePool", func(t *testing.T) {
		rec.RequireDependsOn(t, lbc, coreDNS)
		rec.RequireDependsOn(t, lbc, agent)
		rec.RequireDependsOn(t, lbc, association)
		rec.RequireDependsOn(t, lbc, rec.Get(t, typeAttachment, prefix+"lb-controller"))
		for _, p := range pools {
			rec.RequireDependsOn(t, lbc, p)
		}
	})

	t.Run("the LB controller gets its role through Pod Identity", func(t *testing.T) {
		trust := iamtest.Parse(t, lbcRole.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		assert.Equal(t, map[string]any{"Service": "pods.eks.amazonaws.com"}, trust[0].Principal)
		assert.ElementsMatch(t, []string{"sts:AssumeRole", "sts:TagSession"}, trust[0].Action)
		assert.Equal(t, map[string]map[string]any{"StringEquals": {
			"aws:RequestTag/eks-cluster-arn":            "arn:aws:eks:eu-west-1:" + testAccount + ":cluster/eks-demo",
			"aws:RequestTag/kubernetes-namespace":       "kube-system",
			"aws:RequestTag/kubernetes-service-account": "aws-load-balancer-controller",
		}}, trust[0].Condition, "only the documented session tags, no aws:SourceArn")
		assert.Equal(t, "kube-system", association.Inputs["namespace"].StringValue())
		assert.Equal(t, "aws-load-balancer-controller", association.Inputs["serviceAccount"].StringValue())
		assert.Equal(t, lbcRole.Inputs["name"].V, nil, "autonamed")
		assert.True(t, strings.HasSuffix(association.Inputs["roleArn"].StringValue(), prefix+"lb-controller-7f3a"))
		rec.RequireNotDependsOn(t, lbcRole, rec.Get(t, typeEksCluster, "eks-demo"))
	})

	t.Run("the LB controller chart is told its cluster, region, VPC and service account", func(t *testing.T) {
		values := lbc.Inputs["values"].ObjectValue().Mappable()
		assert.Equal(t, "eks-demo", values["clusterName"])
		assert.Equal(t, "eu-west-1", values["region"])
		assert.Equal(t, "vpc-0de0", values["vpcId"])
		sa := values["serviceAccount"].(map[string]any)
		assert.Equal(t, association.Inputs["serviceAccount"].StringValue(), sa["name"], "the association names the chart's service account")
		assert.Equal(t, "kube-system", lbc.Inputs["namespace"].StringValue())
		assert.Equal(t, "3.5.0", lbc.Inputs["version"].StringValue())
		assert.Equal(t, "https://aws.github.io/eks-charts", lbc.Inputs["repositoryOpts"].ObjectValue()["repo"].StringValue())
		assert.Equal(t, true, values["keepTLSSecret"], "chart 3.1+ would sign a new webhook certificate on every upgrade")
	})

	t.Run("the LB controller's CRDs of its own version are applied before it, and taken over from Helm", func(t *testing.T) {
		crds := rec.Get(t, "kubernetes:yaml/v2:ConfigGroup", prefix+"lb-controller-crds")
		assert.True(t, crds.Remote, "the kubernetes provider reads the manifests")
		var files []string
		for _, f := range crds.Inputs["files"].ArrayValue() {
			files = append(files, f.StringValue())
		}
		const tag = "https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/v3.5.0/helm/aws-load-balancer-controller/crds/"
		assert.Equal(t, []string{tag + "crds.yaml", tag + "gateway-crds.yaml"}, files, "the CRDs of the chart's own tag")
		assert.Equal(t, true, lbc.Inputs["skipCrds"].V, "Helm would install them once and never upgrade them")
		rec.RequireDependsOn(t, lbc, crds)
		assert.True(t, strings.HasPrefix(crds.Provider, rec.Get(t, typeK8sProvider, "eks-demo-k8s").URN), "applied to this cluster")
		for _, p := range pools {
			rec.RequireNotDependsOn(t, crds, p)
		}

		crd := crds.Transformed["kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"]
		require.False(t, crd.Unchanged, "the group's CRDs must be transformed")
		annotations := crd.Props["metadata"].ObjectValue()["annotations"].ObjectValue()
		assert.Equal(t, "true", annotations["pulumi.com/patchForce"].StringValue(), "server-side apply takes the fields Helm owned")
		assert.Equal(t, "v0.16.5", annotations["controller-gen.kubebuilder.io/version"].StringValue(), "existing annotations stay")
		assert.Equal(t, "targetgroupbindings.elbv2.k8s.aws", crd.Props["metadata"].ObjectValue()["name"].StringValue())
		assert.Equal(t, "elbv2.k8s.aws", crd.Props["spec"].ObjectValue()["group"].StringValue(), "the spec passes unchanged")
		assert.True(t, crds.Transformed["kubernetes:apps/v1:Deployment"].Unchanged, "only CRDs are forced")
	})

	t.Run("the LB controller policy matches the golden file", func(t *testing.T) {
		policy := rec.Get(t, typePolicy, prefix+"lb-controller")
		requireGolden(t, "lb-controller-policy.golden.json", jsonValue(t, policy.Inputs["policy"].StringValue()))
	})

	t.Run("ArgoCD waits for CoreDNS and every NodePool and is not exposed", func(t *testing.T) {
		rec.RequireDependsOn(t, argocd, coreDNS)
		for _, p := range pools {
			rec.RequireDependsOn(t, argocd, p)
		}
		values := argocd.Inputs["values"].ObjectValue().Mappable()
		server := values["server"].(map[string]any)
		assert.Equal(t, "ClusterIP", server["service"].(map[string]any)["type"])
		assert.Equal(t, false, server["ingress"].(map[string]any)["enabled"])
		assert.Equal(t, "10.1.1", argocd.Inputs["version"].StringValue())
	})
}

func TestArgoCDAbsentWhenDisabled(t *testing.T) {
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	cfg[testProject+":argocd"] = "false"
	run := runProgram(t, cfg, fakeaws.DevVpc())
	require.NoError(t, run.err)
	for _, r := range run.rec.OfType(typeHelmRelease) {
		assert.NotContains(t, r.Name, "argocd")
	}
	assert.Equal(t, "", run.exports["argoCdNamespace"])
}

// topologicalOrder returns the program's registrations ordered so that
// every resource comes after what it depends on, or fails on a cycle.
func topologicalOrder(t *testing.T, rec *mock.Recorder) []*mock.Registration {
	t.Helper()
	regs := programRegistrations(rec)
	byURN := map[string]*mock.Registration{}
	for _, r := range regs {
		byURN[r.URN] = r
	}
	indegree := map[string]int{}
	dependents := map[string][]string{}
	for _, r := range regs {
		seen := map[string]bool{}
		for _, dep := range r.Edges() {
			if _, ok := byURN[dep]; !ok || seen[dep] {
				continue
			}
			seen[dep] = true
			indegree[r.URN]++
			dependents[dep] = append(dependents[dep], r.URN)
		}
	}
	var ready, order []string
	for _, r := range regs {
		if indegree[r.URN] == 0 {
			ready = append(ready, r.URN)
		}
	}
	for len(ready) > 0 {
		sort.Strings(ready)
		next := ready[0]
		ready = ready[1:]
		order = append(order, next)
		for _, d := range dependents[next] {
			if indegree[d]--; indegree[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	require.Len(t, order, len(regs), "the dependency graph has a cycle")
	out := make([]*mock.Registration, len(order))
	for i, urn := range order {
		out[i] = byURN[urn]
	}
	return out
}

func TestWholeStackGraph(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	order := topologicalOrder(t, rec) // fails on a cycle

	// Destroy runs the creation order backwards. Each layer below must be
	// gone before the next: add-ons that run on Karpenter's nodes, the
	// NodePools (Karpenter drains and terminates their nodes), the node
	// classes (their finalizer removes the instance profiles), the
	// controller, its IAM, queue and Fargate profile, then the cluster.
	layers := []struct {
		name    string
		members []*mock.Registration
	}{
		{"add-ons on Karpenter nodes", []*mock.Registration{
			rec.Get(t, typeAddon, "eks-demo-addons-coredns"),
			rec.Get(t, typeHelmRelease, "eks-demo-addons-lb-controller"),
			rec.Get(t, typeHelmRelease, "eks-demo-addons-argocd"),
		}},
		{"NodePools", rec.OfType(typeNodePool)},
		{"EC2NodeClasses", rec.OfType(typeEC2NodeClass)},
		{"Karpenter release", []*mock.Registration{rec.Get(t, typeHelmRelease, karpenterName+"-controller")}},
		{"Karpenter IAM, queue and Fargate profile", []*mock.Registration{
			rec.Get(t, typeAttachment, karpenterName+"-controller"),
			rec.Get(t, typeQueue, karpenterName+"-interruption-queue"),
			rec.Get(t, typeFargateProfile, "eks-demo-karpenter"),
		}},
		{"cluster", []*mock.Registration{rec.Get(t, typeEksCluster, "eks-demo")}},
	}

	t.Run("vpc-cni waits for nothing on the Karpenter side", func(t *testing.T) {
		vpcCni := rec.Get(t, typeAddon, "eks-demo-vpc-cni")
		karpenterSide := append(rec.OfType(typeNodePool), rec.OfType(typeEC2NodeClass)...)
		karpenterSide = append(karpenterSide, rec.OfType(typeHelmRelease)...)
		for _, k := range karpenterSide {
			rec.RequireNotDependsOn(t, vpcCni, k)
		}
	})

	t.Run("every layer depends on the next, so any destroy order keeps them apart", func(t *testing.T) {
		for i := 0; i+1 < len(layers); i++ {
			if layers[i].name == "Karpenter IAM, queue and Fargate profile" {
				continue // checked below: only the Fargate profile needs the cluster
			}
			for _, earlier := range layers[i].members {
				for _, later := range layers[i+1].members {
					rec.RequireDependsOn(t, earlier, later)
				}
			}
		}
		// IAM and the queue are created beside the cluster, not after it;
		// only the Fargate profile needs the cluster.
		rec.RequireDependsOn(t, rec.Get(t, typeFargateProfile, "eks-demo-karpenter"), rec.Get(t, typeEksCluster, "eks-demo"))
	})

	t.Run("the reverse topological order removes the layers in turn", func(t *testing.T) {
		position := map[string]int{}
		for i, r := range order {
			position[r.URN] = len(order) - 1 - i // destroy position
		}
		for i := 0; i+1 < len(layers); i++ {
			if layers[i].name == "Karpenter IAM, queue and Fargate profile" {
				continue // IAM and the queue need not wait for the cluster
			}
			for _, earlier := range layers[i].members {
				for _, later := range layers[i+1].members {
					assert.Lessf(t, position[earlier.URN], position[later.URN],
						"destroy must remove %s (%s) before %s (%s)", earlier.Name, layers[i].name, later.Name, layers[i+1].name)
				}
			}
		}
		fargate := rec.Get(t, typeFargateProfile, "eks-demo-karpenter")
		assert.Less(t, position[fargate.URN], position[rec.Get(t, typeEksCluster, "eks-demo").URN])
	})
}

func TestEBSCSIDriver(t *testing.T) {
	rec := runDevStack(t).rec
	const prefix = "eks-demo-addons-"
	addon := rec.Get(t, typeAddon, prefix+"aws-ebs-csi-driver")
	role := rec.Get(t, typeRole, prefix+"ebs-csi")
	attachment := rec.Get(t, typeAttachment, prefix+"ebs-csi")
	class := rec.Get(t, "kubernetes:storage.k8s.io/v1:StorageClass", prefix+"gp3")

	t.Run("the add-on gets its role through an add-on Pod Identity association", func(t *testing.T) {
		assocs := addon.Inputs["podIdentityAssociations"].ArrayValue()
		require.Len(t, assocs, 1)
		a := assocs[0].ObjectValue()
		assert.Equal(t, "ebs-csi-controller-sa", a["serviceAccount"].StringValue())
		assert.Equal(t, "arn:aws:iam::"+testAccount+":role/"+prefix+"ebs-csi-7f3a", a["roleArn"].StringValue())
		assert.Equal(t, fakeaws.DefaultAddonVersions["aws-ebs-csi-driver"], addon.Inputs["addonVersion"].StringValue())
	})

	t.Run("the role trusts only the driver's service account on this cluster and has AWS's policy", func(t *testing.T) {
		trust := iamtest.Parse(t, role.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		assert.Equal(t, map[string]map[string]any{"StringEquals": {
			"aws:RequestTag/eks-cluster-arn":            "arn:aws:eks:eu-west-1:" + testAccount + ":cluster/eks-demo",
			"aws:RequestTag/kubernetes-namespace":       "kube-system",
			"aws:RequestTag/kubernetes-service-account": "ebs-csi-controller-sa",
		}}, trust[0].Condition)
		assert.Equal(t, "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy", attachment.Inputs["policyArn"].StringValue())
		rec.RequireNotDependsOn(t, role, rec.Get(t, typeEksCluster, "eks-demo"))
	})

	t.Run("the add-on waits for nodes and credentials, beside CoreDNS rather than behind it", func(t *testing.T) {
		for _, p := range rec.OfType(typeNodePool) {
			rec.RequireDependsOn(t, addon, p)
		}
		rec.RequireDependsOn(t, addon, rec.Get(t, typeAddon, prefix+"eks-pod-identity-agent"))
		rec.RequireDependsOn(t, addon, attachment)
		rec.RequireNotDependsOn(t, addon, rec.Get(t, typeAddon, prefix+"coredns"))
	})

	t.Run("gp3 is the default class: encrypted, bound where the pod lands", func(t *testing.T) {
		meta := class.Inputs["metadata"].ObjectValue()
		assert.Equal(t, "gp3", meta["name"].StringValue())
		assert.Equal(t, "true", meta["annotations"].ObjectValue()["storageclass.kubernetes.io/is-default-class"].StringValue())
		assert.Equal(t, "ebs.csi.aws.com", class.Inputs["provisioner"].StringValue())
		assert.Equal(t, map[string]any{"type": "gp3", "encrypted": "true"}, class.Inputs["parameters"].ObjectValue().Mappable())
		assert.Equal(t, "WaitForFirstConsumer", class.Inputs["volumeBindingMode"].StringValue())
		for _, p := range rec.OfType(typeNodePool) {
			rec.RequireNotDependsOn(t, class, p)
		}
		rec.RequireDependsOn(t, class, rec.Get(t, typeEksCluster, "eks-demo"))
	})
}

func TestMetricsServer(t *testing.T) {
	tests := []struct {
		name, stackFile, addon string
		set                    map[string]string
		want                   bool
	}{
		{"dev: the add-on", "Pulumi.dev.yaml", "eks-demo-addons-metrics-server", nil, true},
		{"production: the same add-on", "testdata/stack-multipool.yaml", "eks-prod-addons-metrics-server", nil, true},
		{"off", "Pulumi.dev.yaml", "eks-demo-addons-metrics-server", map[string]string{"metricsServer": "false"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := stackWith(t, tt.stackFile, tt.set)
			var addon *mock.Registration
			for _, a := range run.rec.OfType(typeAddon) {
				if a.Name == tt.addon {
					addon = a
				}
			}
			if !tt.want {
				assert.Nil(t, addon)
				return
			}
			require.NotNil(t, addon)
			assert.Equal(t, "metrics-server", addon.Inputs["addonName"].StringValue())
			assert.NotContains(t, addon.Inputs, resource.PropertyKey("configurationValues"),
				"no configuration key of the add-on's unpublished schema is sent")
			for _, p := range run.rec.OfType(typeNodePool) {
				run.rec.RequireDependsOn(t, addon, p)
			}
			for _, c := range run.rec.OfType(typeAddon) {
				if c.Inputs["addonName"].StringValue() == "coredns" {
					run.rec.RequireNotDependsOn(t, addon, c)
				}
			}
		})
	}
}

func TestDestroyCleanup(t *testing.T) {
	run := devStackWith(t, map[string]string{
		"accessEntries": `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"cluster-admin"}}`,
	})
	rec := run.rec
	cleanup := rec.Get(t, typeCommand, "eks-demo-addons-destroy-cleanup")

	t.Run("it runs only on delete", func(t *testing.T) {
		assert.Equal(t, "go run ./cmd/destroy-cleanup", cleanup.Inputs["delete"].StringValue())
		for _, k := range []resource.PropertyKey{"create", "update", "triggers"} {
			assert.NotContains(t, cleanup.Inputs, k, "up must never run it, nor replace it (a replacement would run the delete)")
		}
	})
	t.Run("it knows the stack's own label, its bounds and the cluster", func(t *testing.T) {
		env := cleanup.Inputs["environment"].ObjectValue()
		assert.True(t, env["NODELESS_EKS_KUBECONFIG"].ContainsSecrets(), "the kubeconfig stays a secret in state")
		assert.Equal(t, "nodeless-eks/stack=nodeless-eks.dev", env["NODELESS_EKS_OWN_LABEL"].StringValue())
		for _, reg := range append(rec.OfType(typeNodePool), rec.OfType(typeEC2NodeClass)...) {
			labels := reg.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()
			assert.Equal(t, "nodeless-eks.dev", labels["nodeless-eks/stack"].StringValue(), "%s carries the label the cleanup keeps", reg.Name)
		}
		assert.Equal(t, "15m0s", env["NODELESS_EKS_LB_TIMEOUT"].StringValue())
		assert.Equal(t, "15m0s", env["NODELESS_EKS_VOLUME_TIMEOUT"].StringValue())
		assert.Equal(t, "1h15m0s", env["NODELESS_EKS_NODE_TIMEOUT"].StringValue(), "the longest terminationGracePeriod plus 15 minutes")
		assert.Equal(t, "1h49m0s", cleanup.DeleteTimeout, "2m to reach the API, every step's bound, and 2m to build the command")
	})

	// Destroy deletes in reverse dependency order: the cleanup depends on
	// everything it needs, so it runs while all of it still exists.
	t.Run("destroy runs it while everything it needs still exists", func(t *testing.T) {
		needed := map[string][]*mock.Registration{
			"Karpenter":              {rec.Get(t, typeHelmRelease, karpenterName+"-controller")},
			"the LB controller":      {rec.Get(t, typeHelmRelease, "eks-demo-addons-lb-controller")},
			"the EBS CSI driver":     {rec.Get(t, typeAddon, "eks-demo-addons-aws-ebs-csi-driver")},
			"kube-proxy":             {rec.Get(t, typeAddon, "eks-demo-addons-kube-proxy")},
			"CoreDNS":                {rec.Get(t, typeAddon, "eks-demo-addons-coredns")},
			"the pod identity agent": {rec.Get(t, typeAddon, "eks-demo-addons-eks-pod-identity-agent")},
			"vpc-cni":                {rec.Get(t, typeAddon, "eks-demo-vpc-cni")},
			"the access entries":     append(rec.OfType(typeAccessEntry), rec.OfType(typeAccessPolicyAssociation)...),
			"the stack's NodePools":  rec.OfType(typeNodePool),
			"the stack's classes":    rec.OfType(typeEC2NodeClass),
		}
		for what, regs := range needed {
			require.NotEmptyf(t, regs, "no %s registered", what)
			for _, reg := range regs {
				rec.RequireDependsOn(t, cleanup, reg)
			}
		}
	})

	t.Run("ArgoCD goes before it, so its applications cannot recreate what it removes", func(t *testing.T) {
		rec.RequireDependsOn(t, rec.Get(t, typeHelmRelease, "eks-demo-addons-argocd"), cleanup)
	})

	t.Run("nothing else waits for it", func(t *testing.T) {
		for _, reg := range programRegistrations(rec) {
			if reg == cleanup || reg.Name == "eks-demo-addons-argocd" || !reg.Custom {
				continue
			}
			rec.RequireNotDependsOn(t, reg, cleanup)
		}
	})
}

// longestCreateChain is the number of cloud resources on the longest chain
// of creates that must run in order, skipping those for which skip says
// so. A command with no create step takes no time and does not count.
func longestCreateChain(rec *mock.Recorder, skip func(*mock.Registration) bool) int {
	regs := programRegistrations(rec)
	memo := map[string]int{}
	var depth func(reg *mock.Registration) int
	depth = func(reg *mock.Registration) int {
		if d, ok := memo[reg.URN]; ok {
			return d
		}
		memo[reg.URN] = 0
		longest := 0
		for _, urn := range reg.Edges() {
			if dep, ok := rec.ByURN(urn); ok && !skip(dep) {
				longest = max(longest, depth(dep))
			}
		}
		own := 1
		if !reg.Custom || reg.Type == "command:local:Command" || strings.HasPrefix(reg.Type, "pulumi:providers:") {
			own = 0
		}
		memo[reg.URN] = longest + own
		return memo[reg.URN]
	}
	longest := 0
	for _, reg := range regs {
		if !skip(reg) {
			longest = max(longest, depth(reg))
		}
	}
	return longest
}

func TestDay1AddonsKeepTheBootstrapLength(t *testing.T) {
	rec := runDevStack(t).rec
	added := func(reg *mock.Registration) bool {
		for _, name := range []string{"aws-ebs-csi-driver", "ebs-csi", "gp3", "metrics-server", "eks-node-monitoring-agent", "destroy-cleanup"} {
			if strings.HasSuffix(reg.Name, "-addons-"+name) {
				return true
			}
		}
		return false
	}
	without := longestCreateChain(rec, added)
	with := longestCreateChain(rec, func(*mock.Registration) bool { return false })
	require.Greater(t, without, 5, "the chain runs cluster -> Fargate -> Karpenter -> pools -> CoreDNS -> LB controller -> ArgoCD")
	assert.Equal(t, without, with, "the EBS CSI driver, metrics-server, the node monitoring agent and the destroy cleanup must hang off the bootstrap chain, not lengthen it")
}

// takenBySibling are the modelled children of a remote component that
// another of its children uses, so that the engine deletes them only
// after it: pulumi-eks's EKS cluster takes its service role.
var takenBySibling = map[string]map[string]string{
	"eks:index:Cluster": {"aws:iam/role:Role": "aws:eks/cluster:Cluster"},
}

// deletedBeforeProtection are the resources a destroy deletes although
// some are protected: the engine refuses a protected resource's delete,
// goes on, and skips only what that resource depends on, not those
// dependencies' children (pulumi/pulumi pkg/resource/deploy
// step_executor.go, deployment_executor.go). A resource is deleted only
// after everything that depends on it, is parented to it or uses it as
// provider, so one with a protected dependent, directly or not, is never
// reached. A remote component is reached when one of its modelled
// children (childrenOf, after the transforms) is protected neither
// explicitly nor as what a protected sibling takes: its protection is not
// relied on to reach them.
func deletedBeforeProtection(rec *mock.Recorder) []string {
	regs := programRegistrations(rec)
	dependents := map[string][]*mock.Registration{}
	for _, reg := range regs {
		for _, urn := range append(reg.Edges(), reg.Parent) {
			dependents[urn] = append(dependents[urn], reg)
		}
	}
	memo := map[string]bool{}
	var reached func(*mock.Registration) bool
	reached = func(reg *mock.Registration) bool {
		if d, ok := memo[reg.URN]; ok {
			return d
		}
		memo[reg.URN] = false
		if reg.Remote {
			for typ, child := range reg.Transformed {
				taker, taken := takenBySibling[reg.Type][typ]
				if !child.Protect && !(taken && reg.Transformed[taker].Protect) {
					memo[reg.URN] = true
				}
			}
			return memo[reg.URN]
		}
		ok := !reg.Protect
		for _, d := range dependents[reg.URN] {
			ok = ok && reached(d)
		}
		memo[reg.URN] = ok
		return ok
	}
	var out []string
	for _, reg := range regs {
		if (reg.Custom || reg.Remote) && reached(reg) {
			out = append(out, reg.Type+"::"+reg.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestProductionDestroyStopsBeforeData(t *testing.T) {
	rec := stackWith(t, "testdata/stack-multipool.yaml", map[string]string{"argocd": "true"}).rec
	deleted := deletedBeforeProtection(rec)
	assert.Empty(t, deleted, "a destroy of a production stack must stop before it deletes anything: no volume, "+
		"load balancer, node, security group rule, interruption rule or add-on")
	assert.True(t, rec.Get(t, typeCommand, "eks-prod-addons-destroy-cleanup").Protect, "the cleanup is protected")
	assert.True(t, rec.Get(t, typeHelmRelease, "eks-prod-addons-argocd").Protect, "ArgoCD is protected")

	dev := runDevStack(t).rec
	assert.False(t, dev.Get(t, typeCommand, "eks-demo-addons-destroy-cleanup").Protect, "a dev stack destroys without ceremony")
}
