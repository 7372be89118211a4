package addons

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/iamopts"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	prefix      = "eks-demo-addons-"
	testAccount = fakeaws.AccountID
)

// standIns are the resources of other layers the program hands this one.
var standIns = []string{"pool-general", "pool-steady", "class-default", "karpenter-release", "vpc-cni", "access-entry", "cluster", "karpenter"}

// layer is New run alone against the fake account, with stand-ins for the
// other layers' resources.
type layer struct {
	*mock.Recorder
	pools    []*mock.Registration
	provider *mock.Registration
}

// standIn returns the stand-in called name.
func (l layer) standIn(t *testing.T, name string) *mock.Registration {
	return l.Get(t, mock.StandInType, name)
}

// newLayer runs New with what the program hands it on the dev stack
// (Pulumi.dev.yaml) after change.
func newLayer(t *testing.T, change func(*Args)) layer {
	t.Helper()
	rec := (&fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: "eks-demo"}).Recorder("nodeless-eks", "dev")
	err := rec.Run(t, nil, false, func(ctx *pulumi.Context) error {
		r, err := mock.NewStandIns(ctx, standIns...)
		if err != nil {
			return err
		}
		provider, err := kubernetes.NewProvider(ctx, "eks-demo-k8s", &kubernetes.ProviderArgs{})
		if err != nil {
			return err
		}
		args := &Args{
			ClusterName: "eks-demo", Region: fakeaws.Region, KubernetesVersion: "1.36",
			CreatedClusterName:  pulumi.String("eks-demo"),
			VpcID:               pulumi.String("vpc-0de0"),
			Provider:            provider,
			NodePools:           []pulumi.Resource{r["pool-general"], r["pool-steady"]},
			NodeClasses:         []pulumi.Resource{r["class-default"]},
			KarpenterRelease:    r["karpenter-release"],
			VpcCni:              r["vpc-cni"],
			AccessEntries:       []pulumi.Resource{r["access-entry"]},
			Kubeconfig:          pulumi.ToSecret(pulumi.String(`{"apiVersion":"v1","kind":"Config"}`)).(pulumi.StringOutput),
			ClusterArn:          pulumi.String("arn:aws:eks:eu-west-1:123456789012:cluster/eks-demo"),
			ClusterCreatedAt:    pulumi.String("2026-12-01T09:00:00Z"),
			StackLabel:          "nodeless-eks.dev",
			CleanupNodeTimeout:  time.Hour + 15*time.Minute,
			Versions:            Versions{LoadBalancerControllerChart: "3.5.0", ArgoCDChart: "10.1.1"},
			CoreDNSReplicas:     1,
			ArgoCD:              true,
			MetricsServer:       true,
			NodeMonitoringAgent: true,
			Tags:                map[string]string{"environment": "dev"},
			IAM:                 iamopts.Options{Path: "/"},
			Keep:                []pulumi.Resource{r["cluster"], r["karpenter"]},
		}
		if change != nil {
			change(args)
		}
		_, err = New(ctx, "eks-demo-addons", args)
		return err
	}).Err
	require.NoError(t, err)
	l := layer{Recorder: rec, provider: rec.Get(t, tokens.KubernetesProvider, "eks-demo-k8s")}
	l.pools = []*mock.Registration{l.standIn(t, "pool-general"), l.standIn(t, "pool-steady")}
	return l
}

func TestAddonsLayer(t *testing.T) {
	l := newLayer(t, nil)
	rec, pools, provider := l.Recorder, l.pools, l.provider
	coreDNS := rec.Get(t, tokens.Addon, prefix+"coredns")
	kubeProxy := rec.Get(t, tokens.Addon, prefix+"kube-proxy")
	agent := rec.Get(t, tokens.Addon, prefix+"eks-pod-identity-agent")
	association := rec.Get(t, tokens.PodIdentityAssociation, prefix+"lb-controller")
	lbc := rec.Get(t, tokens.HelmRelease, prefix+"lb-controller")
	lbcRole := rec.Get(t, tokens.Role, prefix+"lb-controller")
	argocd := rec.Get(t, tokens.HelmRelease, prefix+"argocd")

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

	t.Run("the LB controller waits for CoreDNS, the agent, its association and every NodePool", func(t *testing.T) {
		rec.RequireDependsOn(t, lbc, coreDNS)
		rec.RequireDependsOn(t, lbc, agent)
		rec.RequireDependsOn(t, lbc, association)
		rec.RequireDependsOn(t, lbc, rec.Get(t, tokens.RolePolicyAttachment, prefix+"lb-controller"))
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
		rec.RequireNotDependsOn(t, lbcRole, provider)
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
		crds := rec.Get(t, tokens.ConfigGroup, prefix+"lb-controller-crds")
		assert.True(t, crds.Remote, "the kubernetes provider reads the manifests")
		var files []string
		for _, f := range crds.Inputs["files"].ArrayValue() {
			files = append(files, f.StringValue())
		}
		const tag = "https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/v3.5.0/helm/aws-load-balancer-controller/crds/"
		assert.Equal(t, []string{tag + "crds.yaml", tag + "gateway-crds.yaml"}, files, "the CRDs of the chart's own tag")
		assert.Equal(t, true, lbc.Inputs["skipCrds"].V, "Helm would install them once and never upgrade them")
		rec.RequireDependsOn(t, lbc, crds)
		assert.Equal(t, provider.URN, crds.ProviderURN(), "applied to this cluster")
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

	t.Run("kube-proxy and the pod identity and node monitoring agents wait for no node pool and no Karpenter", func(t *testing.T) {
		monitoring := rec.Get(t, tokens.Addon, prefix+"eks-node-monitoring-agent")
		for _, a := range []*mock.Registration{kubeProxy, agent, monitoring} {
			for _, k := range append([]*mock.Registration{l.standIn(t, "karpenter-release"), l.standIn(t, "class-default")}, pools...) {
				rec.RequireNotDependsOn(t, a, k)
			}
		}
	})
}

func TestArgoCDAbsentWhenDisabled(t *testing.T) {
	l := newLayer(t, func(a *Args) { a.ArgoCD = false })
	for _, r := range l.OfType(tokens.HelmRelease) {
		assert.NotContains(t, r.Name, "argocd")
	}
	assert.Len(t, l.OfType(tokens.HelmRelease), 1, "the LB controller alone")
}

func TestEBSCSIDriver(t *testing.T) {
	l := newLayer(t, nil)
	rec := l.Recorder
	addon := rec.Get(t, tokens.Addon, prefix+"aws-ebs-csi-driver")
	role := rec.Get(t, tokens.Role, prefix+"ebs-csi")
	attachment := rec.Get(t, tokens.RolePolicyAttachment, prefix+"ebs-csi")
	class := rec.Get(t, tokens.StorageClass, prefix+"gp3")

	t.Run("the add-on gets its role through an add-on Pod Identity association", func(t *testing.T) {
		assocs := addon.Inputs["podIdentityAssociations"].ArrayValue()
		require.Len(t, assocs, 1)
		a := assocs[0].ObjectValue()
		assert.Equal(t, "ebs-csi-controller-sa", a["serviceAccount"].StringValue())
		assert.Equal(t, "arn:aws:iam::"+testAccount+":role/"+prefix+"ebs-csi-7f3a", a["roleArn"].StringValue())
		assert.Equal(t, fakeaws.DefaultAddonVersions["aws-ebs-csi-driver"], addon.Inputs["addonVersion"].StringValue())
	})

	t.Run("every volume the driver makes carries the cluster's tag, which the leftover audit finds", func(t *testing.T) {
		assert.JSONEq(t, `{"controller":{"extraVolumeTags":{"nodeless-eks/cluster":"eks-demo"}}}`, addon.Inputs["configurationValues"].StringValue())
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
		rec.RequireNotDependsOn(t, role, l.provider)
	})

	t.Run("the add-on waits for nodes and credentials, beside CoreDNS rather than behind it", func(t *testing.T) {
		for _, p := range l.pools {
			rec.RequireDependsOn(t, addon, p)
		}
		rec.RequireDependsOn(t, addon, rec.Get(t, tokens.Addon, prefix+"eks-pod-identity-agent"))
		rec.RequireDependsOn(t, addon, attachment)
		rec.RequireNotDependsOn(t, addon, rec.Get(t, tokens.Addon, prefix+"coredns"))
	})

	t.Run("gp3 is the default class: encrypted, tagged for the cluster, bound where the pod lands", func(t *testing.T) {
		meta := class.Inputs["metadata"].ObjectValue()
		assert.Equal(t, "gp3", meta["name"].StringValue())
		assert.Equal(t, "true", meta["annotations"].ObjectValue()["storageclass.kubernetes.io/is-default-class"].StringValue())
		assert.Equal(t, "ebs.csi.aws.com", class.Inputs["provisioner"].StringValue())
		assert.Equal(t, map[string]any{"type": "gp3", "encrypted": "true", "tagSpecification_1": "nodeless-eks/cluster=eks-demo"},
			class.Inputs["parameters"].ObjectValue().Mappable(), "its volumes carry the cluster's tag, so that one left behind is found")
		assert.Equal(t, "WaitForFirstConsumer", class.Inputs["volumeBindingMode"].StringValue())
		for _, p := range l.pools {
			rec.RequireNotDependsOn(t, class, p)
		}
		rec.RequireDependsOn(t, class, l.provider)
	})
}

func TestMetricsServer(t *testing.T) {
	for _, on := range []bool{true, false} {
		l := newLayer(t, func(a *Args) { a.MetricsServer = on })
		addon, found := l.Find(tokens.Addon, prefix+"metrics-server")
		require.Equal(t, on, found, "metrics-server installed: %v", on)
		if !on {
			continue
		}
		assert.Equal(t, "metrics-server", addon.Inputs["addonName"].StringValue())
		assert.NotContains(t, addon.Inputs, resource.PropertyKey("configurationValues"),
			"no configuration key of the add-on's unpublished schema is sent")
		for _, p := range l.pools {
			l.RequireDependsOn(t, addon, p)
		}
		l.RequireNotDependsOn(t, addon, l.Get(t, tokens.Addon, prefix+"coredns"))
	}
}

func TestDestroyCleanup(t *testing.T) {
	l := newLayer(t, nil)
	rec := l.Recorder
	cleanup := rec.Get(t, tokens.Command, prefix+"destroy-cleanup-of-workload-lbs-and-volumes")

	t.Run("it runs only on delete, and keeps the URN of earlier versions", func(t *testing.T) {
		assert.Equal(t, DestroyCleanupCommand, cleanup.Inputs["delete"].StringValue())
		for _, k := range []resource.PropertyKey{"create", "update", "triggers"} {
			assert.NotContains(t, cleanup.Inputs, k, "up must never run it, nor replace it (a replacement would run the delete)")
		}
		assert.Equal(t, []string{prefix + "destroy-cleanup"}, cleanup.Aliases, "renamed without a replacement")
	})
	t.Run("it knows the stack's own label, its bounds and the cluster", func(t *testing.T) {
		env := cleanup.Inputs["environment"].ObjectValue()
		assert.True(t, env["NODELESS_EKS_KUBECONFIG"].ContainsSecrets(), "the kubeconfig stays a secret in state")
		assert.Equal(t, "nodeless-eks/stack=nodeless-eks.dev", env["NODELESS_EKS_OWN_LABEL"].StringValue())
		assert.Equal(t, "15m0s", env["NODELESS_EKS_LB_TIMEOUT"].StringValue())
		assert.Equal(t, "15m0s", env["NODELESS_EKS_VOLUME_TIMEOUT"].StringValue())
		assert.Equal(t, "1h15m0s", env["NODELESS_EKS_NODE_TIMEOUT"].StringValue(), "CleanupNodeTimeout")
		assert.Equal(t, "destroy-cleanup-nodeless-eks.dev.log", env["NODELESS_EKS_CLEANUP_REPORT"].StringValue(), "its report outlives the run")
		assert.Equal(t, "2h6m20s", cleanup.DeleteTimeout, "2m to reach the API, every step's bound (the load balancers' twice: then the LB "+
			"controller's own objects), the 20 s settle after the load balancers, 2m for the last look, and 2m to build the command")
	})
	// Destroy deletes in reverse dependency order: the cleanup depends on
	// everything it needs, so it runs while all of it still exists.
	t.Run("it waits for every add-on and for what it is handed", func(t *testing.T) {
		for _, name := range []string{"lb-controller"} {
			rec.RequireDependsOn(t, cleanup, rec.Get(t, tokens.HelmRelease, prefix+name))
		}
		for _, name := range []string{"aws-ebs-csi-driver", "kube-proxy", "coredns", "eks-pod-identity-agent", "metrics-server", "eks-node-monitoring-agent"} {
			rec.RequireDependsOn(t, cleanup, rec.Get(t, tokens.Addon, prefix+name))
		}
		for _, name := range standIns {
			rec.RequireDependsOn(t, cleanup, l.standIn(t, name))
		}
	})
	t.Run("ArgoCD goes before it, so its applications cannot recreate what it removes", func(t *testing.T) {
		rec.RequireDependsOn(t, rec.Get(t, tokens.HelmRelease, prefix+"argocd"), cleanup)
	})
	t.Run("nothing else waits for it", func(t *testing.T) {
		for _, reg := range rec.All() {
			if reg == cleanup || reg.Name == prefix+"argocd" || !reg.Custom {
				continue
			}
			rec.RequireNotDependsOn(t, reg, cleanup)
		}
	})
	t.Run("with Protect, the cleanup, ArgoCD and the CRDs of the LB controller are protected", func(t *testing.T) {
		p := newLayer(t, func(a *Args) { a.Protect = true })
		assert.True(t, p.Get(t, tokens.Command, prefix+"destroy-cleanup-of-workload-lbs-and-volumes").Protect)
		assert.True(t, p.Get(t, tokens.HelmRelease, prefix+"argocd").Protect)
		crds := p.Get(t, tokens.ConfigGroup, prefix+"lb-controller-crds")
		assert.True(t, crds.Protect)
		assert.True(t, crds.Transformed["kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"].Protect, "each CRD, not only the group")
		assert.False(t, cleanup.Protect, "and not without it")
	})
}
