// Package cluster owns the network (a VPC looked up, which it only reads,
// or one it makes) and the control plane of a nodeless EKS cluster: the pulumi-eks cluster with no node group of any
// kind, its control-plane log group and Secrets encryption key, the access
// entries of the people who operate it, the one Fargate profile that hosts
// the Karpenter controller, the security group that Karpenter's nodes join,
// the vpc-cni add-on with custom networking, and the Kubernetes provider the
// later layers deploy through. It creates nothing on resources it does not
// own: a VPC it did not make, and its subnets, are only read.
package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/iamopts"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-eks/sdk/v3/go/eks"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const clusterTypeToken = "nodeless-eks:cluster:Cluster"

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
	// PrivateSubnetIDs hold the control-plane ENIs, Fargate pods and nodes.
	// A VPC the stack did not make is never tagged. Required, at least two
	// AZs.
	PrivateSubnetIDs pulumi.StringArrayInput
	// PodSubnetIDsByAZ maps each AZ to the pod subnet of its ENIConfig.
	// Required.
	PodSubnetIDsByAZ map[string]pulumi.StringOutput
	// FargateSettle is how long the controller's pods wait after a new
	// Fargate profile is ACTIVE before they are scheduled on it: eksctl
	// waits 30 s there (its fargate task, between "created Fargate profile"
	// and "now schedulable onto Fargate": the log in eksctl-io/eksctl#8357),
	// since pods scheduled at once can miss the Fargate scheduler and stay
	// Pending (eksctl-io/eksctl#3615). 0 for a cluster that already runs.
	FargateSettle time.Duration
	// Sweep registers, when set, what is deleted after the control plane
	// and its Fargate profile and before the node security group (which it
	// is given) and the VPC: the audit of what the cluster's controllers
	// left in AWS, and the sweep of what its parts leave in a VPC the
	// stack made (addons.NewNetworkSweep).
	Sweep func(nodeSecurityGroupID pulumi.StringOutput) (pulumi.Resource, error)
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

	// LogTypes are the control-plane log types sent to CloudWatch
	// ("api", "audit", "authenticator", "controllerManager", "scheduler");
	// empty turns control-plane logging off and creates no log group.
	LogTypes []string
	// LogRetentionDays is how long the log group keeps control-plane logs;
	// required when LogTypes is set.
	LogRetentionDays int
	// KmsKeyArn encrypts Secrets with an existing key; "" creates a key
	// with yearly rotation.
	KmsKeyArn string
	// AccessEntries grant IAM principals access to the cluster, by entry
	// name. The identity that creates the cluster stays its admin.
	AccessEntries map[string]AccessEntry
	// IAM is the path and permissions boundary of every role and policy,
	// the cluster's service role included.
	IAM iamopts.Options
	// KeepPulumiEKSRole keeps the service role pulumi-eks created for a
	// cluster of an earlier version of the program, which EKS cannot
	// swap for another; IAM's boundary reaches it through a transform.
	// Default false: the service role is created here, with IAM, from the
	// first `pulumi up`, so that setting a boundary later is an in-place
	// update of the role, not a new role and with it a new cluster.
	KeepPulumiEKSRole bool
	// Protect keeps `pulumi destroy` from deleting the EKS cluster and the
	// key this component creates.
	Protect bool
	// SupportType is the cluster's upgrade policy: SupportStandard or
	// SupportExtended. Required.
	SupportType string
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
	// SecretsKeyArn is the KMS key that encrypts Secrets.
	SecretsKeyArn pulumi.StringOutput `pulumi:"secretsKeyArn"`
	// LogGroupName is the control-plane log group, "" when logging is off.
	LogGroupName pulumi.StringOutput `pulumi:"logGroupName"`
	// ClusterArn and ClusterCreatedAt name the EKS cluster this stack
	// created, as the destroy cleanup asks EKS about it.
	ClusterArn       pulumi.StringOutput `pulumi:"clusterArn"`
	ClusterCreatedAt pulumi.StringOutput `pulumi:"clusterCreatedAt"`

	// FargateProfile hosts the Karpenter controller; the controller's
	// release must wait for it.
	FargateProfile *awseks.FargateProfile
	// FargateReady resolves FargateSettle after a new profile is ACTIVE
	// (its ID resolves once pulumi-aws saw it ACTIVE); nil when nothing
	// waits (a cluster that runs, a preview).
	FargateReady pulumi.StringInput
	// VpcCni is the vpc-cni add-on; no EC2 node may start before it.
	VpcCni *awseks.Addon
	// AccessEntries are the configured access entries and their policy
	// associations: the destroy cleanup must run while they give the
	// person or pipeline running `pulumi destroy` access to the cluster.
	AccessEntries []pulumi.Resource
	// Provider deploys to this cluster.
	Provider *kubernetes.Provider
	// Owned is every resource this program creates for the component
	// (pulumi-eks's own children are reached only through its component's
	// URN). What must be deleted before any of them depends on these, not
	// on the component: the Go SDK expands a dependency on a component to
	// the children whose registration has begun by then (a child joins its
	// parent in its own registration goroutine: sdk/go/pulumi/context.go,
	// getOpts), which can miss some.
	Owned []pulumi.Resource
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

	account, err := awsaccount.Lookup(ctx, parent)
	if err != nil {
		return nil, err
	}
	audit, err := newAuditPrerequisites(ctx, name, args, account, parent)
	if err != nil {
		return nil, err
	}
	c.SecretsKeyArn = audit.secretsKeyArn
	c.LogGroupName = audit.logGroupName

	nodeSG, err := newNodeSecurityGroup(ctx, name, args, parent)
	if err != nil {
		return nil, err
	}
	c.NodeSecurityGroupId = nodeSG.ID().ToStringOutput()
	clusterOpts := []pulumi.ResourceOption{parent,
		// EKS creates a never-expiring log group unless ours exists first,
		// and the cluster's service role needs its policy from the start.
		pulumi.DependsOn(audit.prerequisites),
	}
	var sweep []pulumi.Resource
	if args.Sweep != nil {
		s, err := args.Sweep(c.NodeSecurityGroupId)
		if err != nil {
			return nil, err
		}
		sweep = []pulumi.Resource{s}
		// Deleted before the sweep, which clears what the cluster leaves in
		// the VPC; created at once, so it holds nothing up.
		clusterOpts = append(clusterOpts, pulumi.DependsOn(sweep))
	}
	if args.Protect {
		clusterOpts = append(clusterOpts, pulumi.Protect(true))
	}
	// pulumi-eks v3.9 does not expose the cluster's upgrade policy
	// (pulumi/pulumi-eks#1776, first in v4.0.0), and a remote component's
	// protect option is sent to its provider, which decides what its
	// children get: a transform, which the engine runs on each child
	// (pulumi/pulumi sdk/go/pulumi/context.go registerTransform), sets both
	// on its aws:eks/cluster:Cluster child, so that the cluster's protection
	// does not rest on the provider.
	transforms := []pulumi.ResourceTransform{EKSClusterTransform(args.Protect, args.SupportType)}
	if args.KeepPulumiEKSRole && args.IAM.PermissionsBoundary != "" {
		transforms = append(transforms, PulumiEKSServiceRoleTransform(name, args.IAM.PermissionsBoundary))
	}
	clusterOpts = append(clusterOpts, pulumi.Transforms(transforms))
	clusterArgs := &eks.ClusterArgs{
		Name:                  pulumi.String(args.ClusterName),
		Version:               pulumi.String(args.KubernetesVersion),
		VpcId:                 args.VpcID.ToStringOutput().ToStringPtrOutput(),
		PrivateSubnetIds:      args.PrivateSubnetIDs,
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
		KubeProxyAddonOptions:  &eks.KubeProxyAddonOptionsArgs{Enabled: pulumi.BoolRef(false)},
		UseDefaultVpcCni:       pulumi.BoolRef(true),
		EnabledClusterLogTypes: pulumi.ToStringArray(args.LogTypes),
		EncryptionConfigKeyArn: audit.secretsKeyArn.ToStringPtrOutput(),
		Tags:                   tags,
	}
	if audit.serviceRole != nil {
		clusterArgs.ServiceRole = audit.serviceRole
	}
	eksCluster, err := eks.NewCluster(ctx, name, clusterArgs, clusterOpts...)
	if err != nil {
		return nil, fmt.Errorf("creating EKS cluster: %w", err)
	}
	c.ClusterName = eksCluster.EksCluster.Name()
	c.ClusterEndpoint = eksCluster.EksCluster.Endpoint()
	c.ClusterArn = eksCluster.EksCluster.Arn()
	c.ClusterCreatedAt = eksCluster.EksCluster.CreatedAt()
	c.ClusterSecurityGroupId = eksCluster.EksCluster.VpcConfig().ClusterSecurityGroupId().Elem()
	c.Kubeconfig = pulumi.ToSecret(eksCluster.KubeconfigJson).(pulumi.StringOutput)
	c.OidcProviderArn = eksCluster.OidcProviderArn
	c.OidcIssuer = eksCluster.OidcIssuer

	c.Owned = slices.Concat(audit.created, []pulumi.Resource{eksCluster})
	var fargate []pulumi.Resource
	if c.FargateProfile, fargate, err = newFargateProfile(ctx, name, args, account, c.ClusterName, parent); err != nil {
		return nil, err
	}
	if settle := args.FargateSettle; settle > 0 && !ctx.DryRun() {
		c.FargateReady = c.FargateProfile.ID().ToStringOutput().ApplyT(func(id string) string {
			_ = ctx.Log.Info(fmt.Sprintf("Fargate profile %s is ACTIVE; the Karpenter controller's pods are scheduled on it in %s "+
				"(eksctl's wait after a new profile, eksctl-io/eksctl#8357)", id, settle), &pulumi.LogArgs{Resource: c})
			time.Sleep(settle)
			return id
		}).(pulumi.StringOutput)
	}
	network, err := newNodeSecurityGroupRules(ctx, name, nodeSG, c.ClusterSecurityGroupId, parent)
	if err != nil {
		return nil, err
	}
	if c.AccessEntries, err = newAccessEntries(ctx, name, args, account, c.ClusterName, parent); err != nil {
		return nil, err
	}
	if c.VpcCni, err = newVpcCni(ctx, name, args, c.ClusterName, c.NodeSecurityGroupId, parent); err != nil {
		return nil, err
	}

	c.Provider, err = kubernetes.NewProvider(ctx, name+"-k8s", KubernetesProviderArgs(c.Kubeconfig), parent)
	if err != nil {
		return nil, fmt.Errorf("creating Kubernetes provider: %w", err)
	}
	c.Owned = slices.Concat(c.Owned, fargate, []pulumi.Resource{nodeSG}, network, sweep, c.AccessEntries, []pulumi.Resource{c.VpcCni, c.Provider})

	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"clusterName":            c.ClusterName,
		"clusterEndpoint":        c.ClusterEndpoint,
		"kubeconfig":             c.Kubeconfig,
		"oidcProviderArn":        c.OidcProviderArn,
		"oidcIssuer":             c.OidcIssuer,
		"clusterSecurityGroupId": c.ClusterSecurityGroupId,
		"nodeSecurityGroupId":    c.NodeSecurityGroupId,
		"secretsKeyArn":          c.SecretsKeyArn,
		"logGroupName":           c.LogGroupName,
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
	case a.SupportType != SupportStandard && a.SupportType != SupportExtended:
		return fmt.Errorf("SupportType %q: want %s or %s", a.SupportType, SupportStandard, SupportExtended)
	case a.PrivateSubnetIDs == nil:
		return fmt.Errorf("PrivateSubnetIDs: the private subnets are required")
	case len(a.PodSubnetIDsByAZ) == 0:
		return fmt.Errorf("PodSubnetIDsByAZ: at least one availability zone is required")
	case !a.EndpointPublicAccess && !a.EndpointPrivateAccess:
		return fmt.Errorf("EndpointPublicAccess and EndpointPrivateAccess: at least one must be true")
	case len(a.LogTypes) > 0 && a.LogRetentionDays <= 0:
		return fmt.Errorf("LogRetentionDays: required when LogTypes is set")
	}
	for entry, e := range a.AccessEntries {
		if _, ok := AccessPolicies[e.Policy]; !ok {
			return fmt.Errorf("AccessEntries[%s]: unknown policy %q", entry, e.Policy)
		}
	}
	return nil
}

// Upgrade policies of an EKS cluster (UpgradePolicyRequest.supportType).
// With STANDARD, EKS upgrades the control plane to the next minor when
// standard support ends; with EXTENDED (the API's default) the cluster
// stays on its minor for up to 12 more months, billed $0.60 instead of
// $0.10 an hour. EKS accepts STANDARD only while the minor is in standard
// support (https://docs.aws.amazon.com/eks/latest/userguide/disable-extended-support.html).
const (
	SupportStandard = "STANDARD"
	SupportExtended = "EXTENDED"
)

// EKSClusterTransform is the transform that reaches pulumi-eks's
// aws:eks/cluster:Cluster child: it sets the upgrade policy, and protect
// when protect is true, so that `pulumi destroy` stops before it deletes
// the control plane. Other children pass unchanged.
func EKSClusterTransform(protect bool, supportType string) pulumi.ResourceTransform {
	return func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if args.Type != "aws:eks/cluster:Cluster" {
			return nil
		}
		props := pulumi.Map{}
		for k, v := range args.Props {
			props[k] = v
		}
		props["upgradePolicy"] = pulumi.Map{"supportType": pulumi.String(supportType)}
		opts := args.Opts
		if protect {
			opts.Protect = true
		}
		return &pulumi.ResourceTransformResult{Props: props, Opts: opts}
	}
}

// PulumiEKSServiceRoleTransform gives the service role that pulumi-eks
// creates ("<name>-eksRole-role", under its "<name>-eksRole" ServiceRole:
// pulumi-eks nodejs/eks/cluster.ts and servicerole.ts) the permissions
// boundary, which IAM sets in place (PutRolePermissionsBoundary). Only
// clusters of earlier versions have that role; its other children pass
// unchanged.
func PulumiEKSServiceRoleTransform(name, boundary string) pulumi.ResourceTransform {
	return func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if args.Type != "aws:iam/role:Role" || args.Name != name+"-eksRole-role" {
			return nil
		}
		props := pulumi.Map{}
		for k, v := range args.Props {
			props[k] = v
		}
		props["permissionsBoundary"] = pulumi.String(boundary)
		return &pulumi.ResourceTransformResult{Props: props, Opts: args.Opts}
	}
}

func publicAccessCidrs(args *Args) pulumi.StringArrayInput {
	if !args.EndpointPublicAccess {
		return nil
	}
	return pulumi.ToStringArray(args.PublicAccessCidrs)
}

// KubernetesProviderArgs are the cluster's Kubernetes provider settings.
// UpsertExistingObjects: from pulumi-kubernetes 4.29.0 a new object is
// created client-side and one that already exists is an error (its
// CHANGELOG, #2926; provider/pkg/await/await.go), where 4.25-4.28 applied
// it server-side over what was there. The program relies on the latter:
// it takes over the LB controller's CRDs that an earlier Helm install left
// (addons.TakeOverCRDs). The loss #2926 guards against, a renamed resource's new
// object deleted with the old, needs a rename without an alias, which the
// program does not make; a named object to replace is deleted first (the
// provider's Diff). The Kubernetes engine tier runs these settings.
func KubernetesProviderArgs(kubeconfig pulumi.StringInput) *kubernetes.ProviderArgs {
	return &kubernetes.ProviderArgs{Kubeconfig: kubeconfig, UpsertExistingObjects: pulumi.BoolPtr(true)}
}
