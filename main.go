// Command nodeless-eks is a Pulumi program that bootstraps an EKS cluster
// with no node groups: one Fargate profile runs the Karpenter controller, and
// Karpenter launches every EC2 node. One `pulumi up` converges.
package main

import (
	"slices"
	"time"

	"nodeless-eks/addons"
	"nodeless-eks/cluster"
	"nodeless-eks/config"
	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error { return program(ctx, time.Now().UTC()) })
}

// program is the whole stack, in bootstrap order: network lookup, control
// plane with its Fargate profile, Karpenter on Fargate, node pools, and the
// add-ons that run on the nodes Karpenter launches. today is the day the
// EKS support calendar is read against.
func program(ctx *pulumi.Context, today time.Time) error {
	cfg, err := config.Load(ctx, today)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		if err := ctx.Log.Warn(w, nil); err != nil {
			return err
		}
	}

	// The stack's own NodePools and classes carry it; the destroy cleanup
	// and the bootstrap watch tell them from others' by it.
	stackLabel := names.StackLabel(ctx.Project(), ctx.Stack())

	vpc, err := cluster.NewVpc(ctx, cfg.ClusterName, &cluster.VpcArgs{
		VpcName:                  cfg.VpcName,
		PrivateSubnetNamePattern: cfg.PrivateSubnetNamePattern,
		PodSubnetNamePattern:     cfg.PodSubnetNamePattern,
	})
	if err != nil {
		return err
	}

	eks, err := cluster.New(ctx, cfg.ClusterName, &cluster.Args{
		ClusterName:           cfg.ClusterName,
		KubernetesVersion:     cfg.KubernetesVersion,
		Region:                cfg.Region,
		VpcID:                 pulumi.String(vpc.ID),
		PrivateSubnetIDs:      vpc.PrivateSubnetIDs,
		PodSubnetIDsByAZ:      vpc.PodSubnetIDsByAZ,
		FargateNamespace:      karpenter.Namespace,
		EndpointPublicAccess:  cfg.EndpointPublicAccess,
		EndpointPrivateAccess: cfg.EndpointPrivateAccess,
		PublicAccessCidrs:     cfg.PublicAccessCidrs,
		VpcCniVersion:         cfg.AddonVersions.VpcCni,
		Tags:                  cfg.Tags,
		LogTypes:              cfg.ClusterLogTypes,
		LogRetentionDays:      cfg.LogRetentionDays,
		KmsKeyArn:             cfg.KmsKeyArn,
		AccessEntries:         cfg.AccessEntries,
		IAM:                   cfg.IAM,
		KeepPulumiEKSRole:     cfg.KeepPulumiEKSServiceRole,
		Protect:               cfg.Production,
		SupportType:           cfg.SupportType,
	})
	if err != nil {
		return err
	}

	ctl, err := karpenter.New(ctx, cfg.ClusterName+"-karpenter", &karpenter.Args{
		ClusterName:         cfg.ClusterName,
		Region:              cfg.Region,
		KubernetesVersion:   cfg.KubernetesVersion,
		ChartVersion:        cfg.KarpenterVersion,
		ControllerResources: cfg.ControllerResources,
		NodeRepair:          cfg.NodeRepair,
		CreatedClusterName:  eks.ClusterName,
		ClusterEndpoint:     eks.ClusterEndpoint,
		OidcProviderArn:     eks.OidcProviderArn,
		OidcIssuer:          eks.OidcIssuer,
		Provider:            eks.Provider,
		FargateProfile:      eks.FargateProfile,
		Tags:                cfg.Tags,
		IAM:                 cfg.IAM,
	})
	if err != nil {
		return err
	}

	pools, err := nodepool.New(ctx, cfg.ClusterName+"-nodepools", &nodepool.Args{
		ClusterName:       cfg.ClusterName,
		StackLabel:        stackLabel,
		Pools:             cfg.NodePools,
		Classes:           cfg.NodeClasses,
		NodeRoleName:      ctl.NodeRoleName,
		SubnetIDs:         vpc.PrivateSubnetIDs,
		SecurityGroupID:   eks.NodeSecurityGroupId,
		Provider:          eks.Provider,
		KarpenterRelease:  ctl.Release,
		NodePrerequisites: ctl.NodePrerequisites,
		VpcCni:            eks.VpcCni,
	})
	if err != nil {
		return err
	}

	addOns, err := addons.New(ctx, cfg.ClusterName+"-addons", &addons.Args{
		ClusterName:        cfg.ClusterName,
		Region:             cfg.Region,
		KubernetesVersion:  cfg.KubernetesVersion,
		CreatedClusterName: eks.ClusterName,
		VpcID:              pulumi.String(vpc.ID),
		Provider:           eks.Provider,
		NodePools:          pools.Pools,
		NodeClasses:        pools.Classes,
		KarpenterRelease:   ctl.Release,
		VpcCni:             eks.VpcCni,
		AccessEntries:      eks.AccessEntries,
		StackLabel:         stackLabel,
		Kubeconfig:         eks.Kubeconfig,
		ClusterArn:         eks.ClusterArn,
		ClusterCreatedAt:   eks.ClusterCreatedAt,
		CleanupNodeTimeout: cfg.CleanupNodeTimeout(),
		Versions: addons.Versions{
			KubeProxy:                   cfg.AddonVersions.KubeProxy,
			CoreDNS:                     cfg.AddonVersions.CoreDNS,
			PodIdentityAgent:            cfg.AddonVersions.PodIdentityAgent,
			NodeMonitoringAgent:         cfg.AddonVersions.NodeMonitoringAgent,
			EBSCSIDriver:                cfg.AddonVersions.EBSCSIDriver,
			MetricsServer:               cfg.AddonVersions.MetricsServer,
			LoadBalancerControllerChart: cfg.LoadBalancerControllerVersion,
			ArgoCDChart:                 cfg.ArgoCDVersion,
		},
		CoreDNSReplicas:     cfg.CoreDNSReplicas,
		ArgoCD:              cfg.ArgoCD,
		NodeMonitoringAgent: cfg.NodeRepair,
		MetricsServer:       cfg.MetricsServer,
		Tags:                cfg.Tags,
		IAM:                 cfg.IAM,
		Protect:             cfg.Production,
		// Whatever the running cluster needs goes only after the cleanup.
		Keep: slices.Concat(eks.Owned, ctl.Owned),
	})
	if err != nil {
		return err
	}

	watchBootstrap(ctx, bootstrap{
		kubeconfig: eks.Kubeconfig, fargateProfile: eks.FargateProfile, controller: ctl.Release, coreDNS: addOns.CoreDNS,
		karpenter: ctl, nodePools: pools, addons: addOns,
		ownLabel: names.StackSelector(stackLabel),
	})

	ctx.Export("region", pulumi.String(cfg.Region).ToStringOutput())
	ctx.Export("clusterName", eks.ClusterName)
	ctx.Export("clusterEndpoint", eks.ClusterEndpoint)
	ctx.Export("kubeconfig", eks.Kubeconfig)
	ctx.Export("oidcProviderArn", eks.OidcProviderArn)
	ctx.Export("oidcIssuer", eks.OidcIssuer)
	ctx.Export("clusterSecurityGroupId", eks.ClusterSecurityGroupId)
	ctx.Export("nodeSecurityGroupId", eks.NodeSecurityGroupId)
	ctx.Export("secretsKeyArn", eks.SecretsKeyArn)
	ctx.Export("logGroupName", eks.LogGroupName)
	ctx.Export("vpcId", pulumi.String(vpc.ID).ToStringOutput())
	ctx.Export("privateSubnetIds", pulumi.ToStringArray(vpc.PrivateSubnetIDs).ToStringArrayOutput())
	ctx.Export("podSubnetIds", pulumi.ToStringMap(vpc.PodSubnetIDsByAZ).ToStringMapOutput())
	ctx.Export("controllerRoleArn", ctl.ControllerRoleArn)
	ctx.Export("nodeRoleName", ctl.NodeRoleName)
	ctx.Export("nodeRoleArn", ctl.NodeRoleArn)
	ctx.Export("interruptionQueueName", ctl.InterruptionQueueName)
	ctx.Export("karpenterVersion", ctl.KarpenterVersion)
	ctx.Export("nodePoolNames", pools.NodePoolNames)
	ctx.Export("coreDnsVersion", addOns.CoreDNSVersion)
	ctx.Export("loadBalancerControllerRoleArn", addOns.LoadBalancerControllerRoleArn)
	ctx.Export("argoCdNamespace", addOns.ArgoCDNamespace)
	return nil
}
