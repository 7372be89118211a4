// Package nodeless is the whole nodeless EKS bootstrap, in bootstrap
// order: network lookup, control plane with its Fargate profile, Karpenter
// on Fargate, node pools, and the add-ons that run on the nodes Karpenter
// launches. The Go program (main.go) runs it at the root of its stack; the
// package's Cluster component (provider/) runs it under the component, so
// the two register the same resources from the same config.Config.
package nodeless

import (
	"cmp"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"nodeless-eks/addons"
	"nodeless-eks/cluster"
	"nodeless-eks/config"
	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumiconfig "github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Options say where the layers go and how the parts that run outside
// the engine run.
type Options struct {
	// Parent is the component the layers are children of; nil puts them
	// at the root of the stack.
	Parent pulumi.Resource
	// DestroyCleanup registers the destroy cleanup and the network sweep
	// (addons.Args); nil is the Go program's pulumi-command one.
	DestroyCleanup addons.CleanupRegistrar
	// FargateSettle is cluster.Args.FargateSettle for a new cluster; 0 is
	// DefaultFargateSettle.
	FargateSettle time.Duration
	// Watch reads the cluster during `pulumi up`.
	Watch Watch
}

// DefaultFargateSettle is eksctl's wait between a new Fargate profile
// turning ACTIVE and what runs on it (cluster.Args.FargateSettle).
const DefaultFargateSettle = 30 * time.Second

// Outputs are the stack outputs of the Go program and the outputs of the
// Cluster component, by the same names (Map).
type Outputs struct {
	Region                        pulumi.StringOutput      `pulumi:"region"`
	ClusterName                   pulumi.StringOutput      `pulumi:"clusterName"`
	ClusterEndpoint               pulumi.StringOutput      `pulumi:"clusterEndpoint"`
	Kubeconfig                    pulumi.StringOutput      `pulumi:"kubeconfig"`
	OidcProviderArn               pulumi.StringOutput      `pulumi:"oidcProviderArn"`
	OidcIssuer                    pulumi.StringOutput      `pulumi:"oidcIssuer"`
	ClusterSecurityGroupId        pulumi.StringOutput      `pulumi:"clusterSecurityGroupId"`
	NodeSecurityGroupId           pulumi.StringOutput      `pulumi:"nodeSecurityGroupId"`
	SecretsKeyArn                 pulumi.StringOutput      `pulumi:"secretsKeyArn"`
	LogGroupName                  pulumi.StringOutput      `pulumi:"logGroupName"`
	VpcId                         pulumi.StringOutput      `pulumi:"vpcId"`
	PrivateSubnetIds              pulumi.StringArrayOutput `pulumi:"privateSubnetIds"`
	PodSubnetIds                  pulumi.StringMapOutput   `pulumi:"podSubnetIds"`
	ControllerRoleArn             pulumi.StringOutput      `pulumi:"controllerRoleArn"`
	NodeRoleName                  pulumi.StringOutput      `pulumi:"nodeRoleName"`
	NodeRoleArn                   pulumi.StringOutput      `pulumi:"nodeRoleArn"`
	InterruptionQueueName         pulumi.StringOutput      `pulumi:"interruptionQueueName"`
	KarpenterVersion              pulumi.StringOutput      `pulumi:"karpenterVersion"`
	NodePoolNames                 pulumi.StringArrayOutput `pulumi:"nodePoolNames"`
	CoreDnsVersion                pulumi.StringOutput      `pulumi:"coreDnsVersion"`
	LoadBalancerControllerRoleArn pulumi.StringOutput      `pulumi:"loadBalancerControllerRoleArn"`
	ArgoCdNamespace               pulumi.StringOutput      `pulumi:"argoCdNamespace"`
}

// Map is each output by its pulumi tag, the name the program exports it
// by and the Cluster's output of the same name.
func (o *Outputs) Map() map[string]pulumi.Output {
	v := reflect.ValueOf(o).Elem()
	m := map[string]pulumi.Output{}
	for i := range v.NumField() {
		m[v.Type().Field(i).Tag.Get("pulumi")] = v.Field(i).Interface().(pulumi.Output)
	}
	return m
}

// Deploy registers the cluster cfg describes (config.Load or
// config.FromInputs made it: valid, and checked against the account),
// warns of what cfg.Warnings says, and starts the bootstrap watch.
func Deploy(ctx *pulumi.Context, cfg *config.Config, o Options) (*Outputs, error) {
	var layer []pulumi.ResourceOption
	if o.Parent != nil {
		layer = append(layer, pulumi.Parent(o.Parent))
	}
	for _, w := range cfg.Warnings {
		if err := ctx.Log.Warn(w, &pulumi.LogArgs{Resource: o.Parent}); err != nil {
			return nil, err
		}
	}

	// The stack's own NodePools and classes carry it; the destroy cleanup
	// and the bootstrap watch tell them from others' by it.
	stackLabel := names.StackLabel(ctx.Project(), ctx.Stack())

	vpcArgs := &cluster.VpcArgs{
		VpcName:                  cfg.VpcName,
		PrivateSubnetNamePattern: cfg.PrivateSubnetNamePattern,
		PodSubnetNamePattern:     cfg.PodSubnetNamePattern,
	}
	if cfg.VpcName == "" {
		vpcArgs.Own = &cluster.OwnVpc{
			Prefix: cfg.ClusterName, ClusterName: cfg.ClusterName, CidrBlock: netip.MustParsePrefix(cfg.VpcCidrBlock),
			Zones: cfg.Zones, NatGateways: cfg.NatGateways, Tags: cfg.Tags, Protect: cfg.Production,
			Region: cfg.Region, RouteTables: cfg.OwnRouteTables,
			S3Endpoint: cfg.VpcS3Endpoint, EmptyDefaultSecurityGroup: cfg.VpcEmptyDefaultSecurityGroup,
		}
		if cfg.Production && cfg.VpcFlowLogs {
			vpcArgs.Own.FlowLogs = &cluster.FlowLogs{RetentionDays: cfg.LogRetentionDays, IAM: cfg.IAM}
		}
	}
	// The leftover audit and the sweep run the AWS CLI as the provider
	// does; what they cannot reproduce is refused before anything is
	// registered.
	access, err := awsAccess(ctx)
	if err != nil {
		return nil, err
	}
	vpc, err := cluster.NewVpc(ctx, cfg.ClusterName, vpcArgs, layer...)
	if err != nil {
		return nil, err
	}
	// Every stack audits AWS for what its cluster's controllers left once
	// the cluster is deleted; a stack that made its VPC sweeps it too.
	sweep := func(nodeSG pulumi.StringOutput) (pulumi.Resource, error) {
		return addons.NewNetworkSweep(ctx, cfg.ClusterName, addons.NetworkSweepArgs{
			VpcArn: vpc.Arn, NodeSecurityGroupID: nodeSG, ClusterName: cfg.ClusterName, AuditOnly: !vpc.Made,
			AWSAccess: access, StackLabel: stackLabel,
			DestroyCleanup: o.DestroyCleanup, Protect: cfg.Production,
		}, vpc.Subnets, layer...)
	}
	fargateSettle := time.Duration(0)
	if !cfg.ClusterExists {
		fargateSettle = cmp.Or(o.FargateSettle, DefaultFargateSettle)
	}

	eks, err := cluster.New(ctx, cfg.ClusterName, &cluster.Args{
		ClusterName:           cfg.ClusterName,
		KubernetesVersion:     cfg.KubernetesVersion,
		Region:                cfg.Region,
		VpcID:                 vpc.ID,
		PrivateSubnetIDs:      vpc.PrivateSubnetIDs,
		PodSubnetIDsByAZ:      vpc.PodSubnetIDsByAZ,
		FargateNamespace:      karpenter.Namespace,
		FargateSettle:         fargateSettle,
		Sweep:                 sweep,
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
	}, layer...)
	if err != nil {
		return nil, err
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
		FargateReady:        eks.FargateReady,
		Egress:              vpc.Egress,
		SpotRole:            cfg.SpotRole,
		Tags:                cfg.Tags,
		IAM:                 cfg.IAM,
	}, layer...)
	if err != nil {
		return nil, err
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
	}, layer...)
	if err != nil {
		return nil, err
	}

	addOns, err := addons.New(ctx, cfg.ClusterName+"-addons", &addons.Args{
		ClusterName:        cfg.ClusterName,
		Region:             cfg.Region,
		KubernetesVersion:  cfg.KubernetesVersion,
		CreatedClusterName: eks.ClusterName,
		VpcID:              vpc.ID,
		Provider:           eks.Provider,
		NodePools:          pools.Pools,
		NodeClasses:        pools.Classes,
		NodePoolNames:      pools.NodePoolNames,
		NodeClassNames:     pools.NodeClassNames,
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
		DestroyCleanup:      o.DestroyCleanup,
		// Whatever the running cluster needs goes only after the cleanup.
		Keep: slices.Concat(eks.Owned, ctl.Owned, vpc.Owned),
	}, layer...)
	if err != nil {
		return nil, err
	}

	watchBootstrap(ctx, o.Watch, bootstrap{
		kubeconfig: eks.Kubeconfig, fargateProfile: eks.FargateProfile, controller: ctl.Release, coreDNS: addOns.CoreDNS,
		karpenter: ctl, nodePools: pools, addons: addOns,
		ownLabel: names.StackSelector(stackLabel),
	})

	return &Outputs{
		Region:                        pulumi.String(cfg.Region).ToStringOutput(),
		ClusterName:                   eks.ClusterName,
		ClusterEndpoint:               eks.ClusterEndpoint,
		Kubeconfig:                    eks.Kubeconfig,
		OidcProviderArn:               eks.OidcProviderArn,
		OidcIssuer:                    eks.OidcIssuer,
		ClusterSecurityGroupId:        eks.ClusterSecurityGroupId,
		NodeSecurityGroupId:           eks.NodeSecurityGroupId,
		SecretsKeyArn:                 eks.SecretsKeyArn,
		LogGroupName:                  eks.LogGroupName,
		VpcId:                         vpc.ID,
		PrivateSubnetIds:              vpc.PrivateSubnetIDs,
		PodSubnetIds:                  podSubnetIDs(vpc).ToStringMapOutput(),
		ControllerRoleArn:             ctl.ControllerRoleArn,
		NodeRoleName:                  ctl.NodeRoleName,
		NodeRoleArn:                   ctl.NodeRoleArn,
		InterruptionQueueName:         ctl.InterruptionQueueName,
		KarpenterVersion:              ctl.KarpenterVersion,
		NodePoolNames:                 pools.NodePoolNames,
		CoreDnsVersion:                addOns.CoreDNSVersion,
		LoadBalancerControllerRoleArn: addOns.LoadBalancerControllerRoleArn,
		ArgoCdNamespace:               addOns.ArgoCDNamespace,
	}, nil
}

// podSubnetIDs is the pod subnets by zone, as an output map.
func podSubnetIDs(vpc *cluster.Vpc) pulumi.StringMap {
	m := pulumi.StringMap{}
	for az, id := range vpc.PodSubnetIDsByAZ {
		m[az] = id
	}
	return m
}

// awsAccess is how the stack's aws provider reaches AWS (its aws:profile,
// aws:assumeRole, the settings the CLI reads from variables, and those it cannot
// be given, which are refused naming the key), for the destroy's leftover
// audit and network sweep, which run the AWS CLI as the provider does.
func awsAccess(ctx *pulumi.Context) (awscli.Access, error) {
	settings := map[string]any{}
	for _, key := range awscli.CredentialKeys() {
		if v := pulumiconfig.Get(ctx, "aws:"+key); v != "" {
			settings[key] = v
		}
	}
	return awscli.AccessOf(settings, "aws:")
}
