// Package karpenter owns the Karpenter controller: its IAM (a controller
// role trusted through IRSA, a node role with its EKS access entry), the
// interruption queue with its EventBridge rules, and the karpenter-crd and
// karpenter Helm releases. It needs the cluster's OIDC provider, endpoint,
// Kubernetes provider and Fargate profile.
package karpenter

import (
	"fmt"
	"slices"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/iamopts"

	"nodeless-eks/internal/helmrelease"
	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const typeToken = "nodeless-eks:karpenter:Karpenter"

// Namespace and ServiceAccount are where the controller runs. The Fargate
// profile selects Namespace and the controller role trusts exactly this
// service account, so both come from here.
const (
	Namespace      = "karpenter"
	ServiceAccount = "karpenter"
)

// NodeRoleName is the node role's physical name: deterministic so that
// EC2NodeClasses can name it. It fits IAM's 64 characters for every
// cluster name up to names.MaxClusterNameLength.
func NodeRoleName(clusterName string) string {
	return clusterName + "-karpenter-node"
}

// Args configures the Karpenter layer.
type Args struct {
	// ClusterName is the cluster's name as configured. IAM scoping uses this
	// plain value so that IAM and the queue need not wait for the cluster.
	// Required, at most names.MaxClusterNameLength characters.
	ClusterName string
	// KubernetesVersion is the cluster's "1.NN". The controller's pods carry
	// it, so that a new minor replaces them: Fargate pods keep the kubelet
	// they started with. Required.
	KubernetesVersion string
	// Region scopes the controller's permissions. Required.
	Region string
	// ChartVersion is the version of both charts. Required.
	ChartVersion string
	// ControllerResources size each controller replica; they must fill a
	// Fargate size (ControllerResources.Validate). Required.
	ControllerResources ControllerResources
	// NodeRepair lets Karpenter replace unhealthy nodes.
	NodeRepair bool
	// CreatedClusterName is the cluster's name once the cluster exists; the
	// node access entry takes it. Required.
	CreatedClusterName pulumi.StringInput
	// ClusterEndpoint is the API server URL for the controller. Required.
	ClusterEndpoint pulumi.StringInput
	// OidcProviderArn and OidcIssuer (without https://) establish IRSA.
	// Required.
	OidcProviderArn, OidcIssuer pulumi.StringInput
	// Provider deploys the releases. Required.
	Provider *kubernetes.Provider
	// FargateProfile must exist before the controller's pods are scheduled.
	// Required.
	FargateProfile pulumi.Resource
	// FargateReady, when set, resolves once pods may be scheduled on a new
	// profile (cluster.Cluster.FargateReady); the controller's release is
	// registered only then.
	FargateReady pulumi.StringInput
	// Egress is what the controller's pods need to pull their images from
	// public ECR in a VPC the stack makes (its NAT gateways and routes);
	// the release waits for it. None for a VPC looked up.
	Egress []pulumi.Resource
	// SpotRole is the account's EC2 Spot service-linked role, which the
	// layer ensures before any node class; nil when no pool allows spot.
	SpotRole *SpotRole
	// Tags go on every AWS resource that supports them.
	Tags map[string]string
	// IAM is the path and permissions boundary of every role and policy.
	IAM iamopts.Options
}

// Karpenter is the running controller with everything it needs.
type Karpenter struct {
	pulumi.ResourceState

	// ControllerRoleArn is the IRSA role of the controller.
	ControllerRoleArn pulumi.StringOutput `pulumi:"controllerRoleArn"`
	// NodeRoleName is the role that EC2NodeClasses give their nodes.
	NodeRoleName pulumi.StringOutput `pulumi:"nodeRoleName"`
	// NodeRoleArn is NodeRoleName's ARN.
	NodeRoleArn pulumi.StringOutput `pulumi:"nodeRoleArn"`
	// InterruptionQueueName is the SQS queue Karpenter reads events from.
	InterruptionQueueName pulumi.StringOutput `pulumi:"interruptionQueueName"`
	// KarpenterVersion is the deployed Karpenter chart version.
	KarpenterVersion pulumi.StringOutput `pulumi:"karpenterVersion"`

	// Release is the controller; node classes must wait for it.
	Release *helmrelease.Release
	// NodePrerequisites let a node join and work: the node role's policy
	// attachments and its access entry. Node classes wait for them.
	NodePrerequisites []pulumi.Resource
	// Owned is every resource the component creates, for what must be
	// deleted before any of them (see cluster.Cluster.Owned for why not the
	// component itself).
	Owned []pulumi.Resource
}

// New creates the Karpenter layer.
func New(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Karpenter, error) {
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("karpenter %q: %w", name, err)
	}
	k := &Karpenter{}
	if err := ctx.RegisterComponentResource(typeToken, name, k, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(k)

	account, err := awsaccount.Lookup(ctx, parent)
	if err != nil {
		return nil, err
	}

	queue, queueResources, err := newInterruptionQueue(ctx, name, args, parent)
	if err != nil {
		return nil, err
	}
	iamRes, err := newIAM(ctx, name, args, account, queue.Arn, parent)
	if err != nil {
		return nil, err
	}
	k.NodePrerequisites = append([]pulumi.Resource{iamRes.nodeAccessEntry}, iamRes.nodePolicyAttachments...)
	if args.SpotRole != nil {
		spot, err := newSpotRole(ctx, name, args.SpotRole, parent)
		if err != nil {
			return nil, err
		}
		// EC2 refuses Karpenter's spot launches until the role exists.
		k.NodePrerequisites = append(k.NodePrerequisites, spot)
	}

	crds, release, err := newReleases(ctx, name, args, releaseInputs{
		controllerRoleArn: iamRes.controllerRole.Arn,
		queueName:         queue.Name,
		// Pods must start on Fargate with their permissions in place, and
		// reach public ECR.
		prerequisites: append([]pulumi.Resource{args.FargateProfile, iamRes.controllerPolicyAttachment}, args.Egress...),
		fargateReady:  args.FargateReady,
	}, parent)
	if err != nil {
		return nil, err
	}
	k.Release = release
	k.Owned = slices.Concat(queueResources, iamRes.all(), []pulumi.Resource{crds, release})

	k.ControllerRoleArn = iamRes.controllerRole.Arn
	k.NodeRoleName = iamRes.nodeRole.Name
	k.NodeRoleArn = iamRes.nodeRole.Arn
	k.InterruptionQueueName = queue.Name
	k.KarpenterVersion = pulumi.String(args.ChartVersion).ToStringOutput()
	if err := ctx.RegisterResourceOutputs(k, pulumi.Map{
		"controllerRoleArn":     k.ControllerRoleArn,
		"nodeRoleName":          k.NodeRoleName,
		"nodeRoleArn":           k.NodeRoleArn,
		"interruptionQueueName": k.InterruptionQueueName,
		"karpenterVersion":      k.KarpenterVersion,
	}); err != nil {
		return nil, err
	}
	return k, nil
}

func (a *Args) validate() error {
	if a == nil {
		return fmt.Errorf("args are required")
	}
	if err := a.ControllerResources.Validate(); err != nil {
		return fmt.Errorf("ControllerResources: %w", err)
	}
	switch {
	case a.ClusterName == "", a.Region == "", a.ChartVersion == "", a.KubernetesVersion == "":
		return fmt.Errorf("ClusterName, Region, ChartVersion and KubernetesVersion are required")
	case a.CreatedClusterName == nil, a.ClusterEndpoint == nil, a.OidcProviderArn == nil, a.OidcIssuer == nil:
		return fmt.Errorf("CreatedClusterName, ClusterEndpoint, OidcProviderArn and OidcIssuer are required")
	case a.Provider == nil, a.FargateProfile == nil:
		return fmt.Errorf("Provider and FargateProfile are required")
	case len(a.ClusterName) > names.MaxClusterNameLength:
		return fmt.Errorf("ClusterName %q: longer than %d characters, so some names would not fit AWS's limits", a.ClusterName, names.MaxClusterNameLength)
	}
	return nil
}
