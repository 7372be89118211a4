// Command nodeless-eks is a Pulumi program that bootstraps an EKS cluster
// with no node groups: one Fargate profile runs the Karpenter controller, and
// Karpenter launches every EC2 node. One `pulumi up` converges.
package main

import (
	"nodeless-eks/cluster"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(program)
}

// program is the whole stack, in bootstrap order.
func program(ctx *pulumi.Context) error {
	cfg, err := loadConfig(ctx)
	if err != nil {
		return err
	}

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
		VpcID:                 vpc.VpcId,
		PrivateSubnetIDs:      vpc.PrivateSubnetIDs,
		PodSubnetIDsByAZ:      vpc.PodSubnetIDsByAZ,
		FargateNamespace:      karpenterNamespace,
		EndpointPublicAccess:  cfg.EndpointPublicAccess,
		EndpointPrivateAccess: cfg.EndpointPrivateAccess,
		PublicAccessCidrs:     cfg.PublicAccessCidrs,
		VpcCniVersion:         cfg.AddonVersions.VpcCni,
		Tags:                  cfg.Tags,
	})
	if err != nil {
		return err
	}

	ctx.Export("clusterName", eks.ClusterName)
	ctx.Export("clusterEndpoint", eks.ClusterEndpoint)
	ctx.Export("kubeconfig", eks.Kubeconfig)
	ctx.Export("oidcProviderArn", eks.OidcProviderArn)
	ctx.Export("vpcId", vpc.VpcId)
	ctx.Export("privateSubnetIds", vpc.PrivateSubnetIds)
	ctx.Export("podSubnetIds", vpc.PodSubnetIds)
	return nil
}
