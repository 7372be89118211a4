// Package cluster owns the network lookup and the control plane of a
// nodeless EKS cluster: the pulumi-eks cluster with no node group of any
// kind, the one Fargate profile that hosts the Karpenter controller, the
// security group that Karpenter's nodes join, the vpc-cni add-on with custom
// networking, and the Kubernetes provider the later layers deploy through.
package cluster

import (
	"fmt"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-eks/sdk/v3/go/eks"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const clusterTypeToken = "nodeless-eks:cluster:Cluster"

// DiscoveryTagKey is the tag by which Karpenter's EC2NodeClass selects the
// subnets and security group of its nodes; its value is the cluster name.
const DiscoveryTagKey = "karpenter.sh/discovery"

// Args configures the cluster. Plain fields decide which resources exist;
// Inputs carry data from the VPC lookup.
type Args struct {
	// ClusterName is the physical EKS cluster name. Required.
	ClusterName string
	// KubernetesVersion is "1.NN". Required.
	KubernetesVersion string
	// Region names the ENIConfigs of custom networking. Required.
	Region string
	// VpcID is the cluster's VPC. Required.
	VpcID pulumi.StringInput
	// PrivateSubnetIDs hold the control-plane ENIs, Fargate pods and nodes;
	// each gets the discovery tag. Required, at least two AZs.
	PrivateSubnetIDs []string
	// PodSubnetIDsByAZ maps each AZ to the pod subnet of its ENIConfig.
	// Required.
	PodSubnetIDsByAZ map[string]string
	// FargateNamespace is the only namespace the Fargate profile selects.
	// Required.
	FargateNamespace string
	// EndpointPublicAccess and EndpointPrivateAccess switch the API
	// endpoints; at least one must be true.
	EndpointPublicAccess, EndpointPrivateAccess bool
	// PublicAccessCidrs may reach the public endpoint.
	PublicAccessCidrs []string
	// VpcCniVersion pins the vpc-cni add-on; "" means the EKS default for
	// KubernetesVersion (stable from run to run, unlike "most recent").
	VpcCniVersion string
	// Tags go on every AWS resource that supports them.
	Tags map[string]string
}

// Cluster is a nodeless EKS control plane with its Fargate profile.
type Cluster struct {
	pulumi.ResourceState

	// ClusterName is the EKS cluster's name.
	ClusterName pulumi.StringOutput `pulumi:"clusterName"`
	// ClusterEndpoint is the API server URL.
	ClusterEndpoint pulumi.StringOutput `pulumi:"clusterEndpoint"`
	// Kubeconfig is a secret kubeconfig (JSON) that authenticates through
	// `aws eks get-token`.
	Kubeconfig pulumi.StringOutput `pulumi:"kubeconfig"`
	// OidcProviderArn is the ARN of the cluster's IAM OIDC provider (IRSA).
	OidcProviderArn pulumi.StringOutput `pulumi:"oidcProviderArn"`
	// OidcIssuer is the issuer without "https://", as IRSA conditions need.
	OidcIssuer pulumi.StringOutput `pulumi:"oidcIssuer"`
	// ClusterSecurityGroupId is the EKS-created cluster security group.
	ClusterSecurityGroupId pulumi.StringOutput `pulumi:"clusterSecurityGroupId"`
	// NodeSecurityGroupId is the security group Karpenter's nodes join.
	NodeSecurityGroupId pulumi.StringOutput `pulumi:"nodeSecurityGroupId"`

	// FargateProfile hosts the Karpenter controller; the controller's
	// release must wait for it.
	FargateProfile *awseks.FargateProfile
	// VpcCni is the vpc-cni add-on; no EC2 node may start before it.
	VpcCni *awseks.Addon
	// Provider deploys to this cluster.
	Provider *kubernetes.Provider
}

// New creates the cluster and everything that must exist before the first
// pod: the Fargate profile, the node security group and vpc-cni.
func New(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Cluster, error) {
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	c := &Cluster{}
	if err := ctx.RegisterComponentResource(clusterTypeToken, name, c, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(c)
	tags := pulumi.ToStringMap(args.Tags)
	authMode := eks.AuthenticationModeApi

	eksCluster, err := eks.NewCluster(ctx, name, &eks.ClusterArgs{
		Name:                  pulumi.String(args.ClusterName),
		Version:               pulumi.String(args.KubernetesVersion),
		VpcId:                 args.VpcID.ToStringOutput().ToStringPtrOutput(),
		PrivateSubnetIds:      pulumi.ToStringArray(args.PrivateSubnetIDs),
		EndpointPublicAccess:  pulumi.Bool(args.EndpointPublicAccess),
		EndpointPrivateAccess: pulumi.Bool(args.EndpointPrivateAccess),
		PublicAccessCidrs:     publicAccessCidrs(args),
		// Karpenter launches every node; pulumi-eks creates none.
		SkipDefaultNodeGroup: pulumi.BoolRef(true),
		// Our node security group replaces pulumi-eks's pair; the
		// EKS-created cluster security group still guards the control plane.
		SkipDefaultSecurityGroups: pulumi.BoolRef(true),
		CreateOidcProvider:        pulumi.Bool(true),
		// CONFIG_MAP mode rewrites aws-auth and drops the Fargate role's
		// mapping; API mode uses access entries and keeps the creator admin.
		AuthenticationMode: &authMode,
		// An empty options struct defaults to enabled, and with Fargate it
		// would pin CoreDNS there; CoreDNS is created later on Karpenter nodes.
		CorednsAddonOptions: &eks.CoreDnsAddonOptionsArgs{Enabled: pulumi.BoolRef(false)},
		// pulumi-eks outputs resolve only after all its children exist, so
		// its own kube-proxy and vpc-cni would delay every later layer.
		KubeProxyAddonOptions: &eks.KubeProxyAddonOptionsArgs{Enabled: pulumi.BoolRef(false)},
		UseDefaultVpcCni:      pulumi.BoolRef(true),
		Tags:                  tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating EKS cluster: %w", err)
	}
	c.ClusterName = eksCluster.EksCluster.Name()
	c.ClusterEndpoint = eksCluster.EksCluster.Endpoint()
	c.ClusterSecurityGroupId = eksCluster.EksCluster.VpcConfig().ClusterSecurityGroupId().Elem()
	c.Kubeconfig = pulumi.ToSecret(eksCluster.KubeconfigJson).(pulumi.StringOutput)
	c.OidcProviderArn = eksCluster.OidcProviderArn
	c.OidcIssuer = eksCluster.OidcIssuer

	if c.FargateProfile, err = newFargateProfile(ctx, name, args, c.ClusterName, parent); err != nil {
		return nil, err
	}
	nodeSG, err := newNodeSecurityGroup(ctx, name, args, c.ClusterSecurityGroupId, parent)
	if err != nil {
		return nil, err
	}
	c.NodeSecurityGroupId = nodeSG.ID().ToStringOutput()
	if err := tagSubnetsForDiscovery(ctx, name, args, parent); err != nil {
		return nil, err
	}
	if c.VpcCni, err = newVpcCni(ctx, name, args, c.ClusterName, c.NodeSecurityGroupId, parent); err != nil {
		return nil, err
	}

	c.Provider, err = kubernetes.NewProvider(ctx, name+"-k8s", &kubernetes.ProviderArgs{
		Kubeconfig: c.Kubeconfig,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating Kubernetes provider: %w", err)
	}

	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"clusterName":            c.ClusterName,
		"clusterEndpoint":        c.ClusterEndpoint,
		"kubeconfig":             c.Kubeconfig,
		"oidcProviderArn":        c.OidcProviderArn,
		"oidcIssuer":             c.OidcIssuer,
		"clusterSecurityGroupId": c.ClusterSecurityGroupId,
		"nodeSecurityGroupId":    c.NodeSecurityGroupId,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (a *Args) validate() error {
	switch {
	case a == nil:
		return fmt.Errorf("args are required")
	case a.ClusterName == "", a.KubernetesVersion == "", a.Region == "", a.VpcID == nil, a.FargateNamespace == "":
		return fmt.Errorf("ClusterName, KubernetesVersion, Region, VpcID and FargateNamespace are required")
	case len(a.PrivateSubnetIDs) == 0:
		return fmt.Errorf("PrivateSubnetIDs: at least one subnet is required")
	case len(a.PodSubnetIDsByAZ) == 0:
		return fmt.Errorf("PodSubnetIDsByAZ: at least one availability zone is required")
	case !a.EndpointPublicAccess && !a.EndpointPrivateAccess:
		return fmt.Errorf("EndpointPublicAccess and EndpointPrivateAccess: at least one must be true")
	}
	return nil
}

func publicAccessCidrs(args *Args) pulumi.StringArrayInput {
	if !args.EndpointPublicAccess {
		return nil
	}
	return pulumi.ToStringArray(args.PublicAccessCidrs)
}
