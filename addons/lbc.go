package addons

import (
	"context"
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/helmrelease"
	"nodeless-eks/internal/k8syaml"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Where the AWS Load Balancer Controller runs; the Pod Identity
// association and the chart's service account must agree.
const (
	LoadBalancerControllerNamespace      = "kube-system"
	LoadBalancerControllerServiceAccount = "aws-load-balancer-controller"
	eksChartsRepository                  = "https://aws.github.io/eks-charts"
)

type lbcInputs struct {
	account                   awsaccount.Account
	coreDNS, podIdentityAgent *awseks.Addon
}

type lbcResources struct {
	role    *iam.Role
	release *helmrelease.Release
}

// newLoadBalancerController gives the controller an IAM role through EKS
// Pod Identity (its agent runs on the EC2 nodes, unlike on Fargate) and
// installs the chart.
func newLoadBalancerController(ctx *pulumi.Context, name string, args *Args, in lbcInputs,
	parent pulumi.ResourceOption) (*lbcResources, error) {
	tags := pulumi.ToStringMap(args.Tags)
	trust, err := PodIdentityTrustPolicy(clusterArn(in.account, args), LoadBalancerControllerNamespace, LoadBalancerControllerServiceAccount)
	if err != nil {
		return nil, err
	}
	role, err := iam.NewRole(ctx, name+"-lb-controller", args.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("AWS Load Balancer Controller (Pod Identity) of EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: pulumi.String(trust),
		Tags:             tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller role: %w", err)
	}
	permissions, err := LoadBalancerControllerPolicy(in.account.Partition)
	if err != nil {
		return nil, err
	}
	policy, err := iam.NewPolicy(ctx, name+"-lb-controller", args.IAM.Policy(&iam.PolicyArgs{
		Description: pulumi.Sprintf("AWS Load Balancer Controller of EKS cluster %s", args.ClusterName),
		Policy:      pulumi.String(permissions),
		Tags:        tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller policy: %w", err)
	}
	attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-lb-controller", &iam.RolePolicyAttachmentArgs{
		Role:      role.Name,
		PolicyArn: policy.Arn,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("attaching load balancer controller policy: %w", err)
	}
	association, err := awseks.NewPodIdentityAssociation(ctx, name+"-lb-controller", &awseks.PodIdentityAssociationArgs{
		ClusterName:    args.CreatedClusterName,
		Namespace:      pulumi.String(LoadBalancerControllerNamespace),
		ServiceAccount: pulumi.String(LoadBalancerControllerServiceAccount),
		RoleArn:        role.Arn,
		Tags:           tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller pod identity association: %w", err)
	}

	// API objects: they need the API server, not a node, so they are
	// served long before the controller's pods can start.
	crds, err := NewLoadBalancerControllerCRDs(ctx, name+"-lb-controller-crds",
		LoadBalancerControllerCRDs(args.Versions.LoadBalancerControllerChart), args.Protect, parent, pulumi.Provider(args.Provider))
	if err != nil {
		return nil, err
	}

	values := args.VpcID.ToStringOutput().ApplyT(func(vpcID string) map[string]any {
		return LoadBalancerControllerValues(args.ClusterName, args.Region, vpcID)
	}).(pulumi.MapOutput)
	prerequisites := append([]pulumi.Resource{crds, in.coreDNS, in.podIdentityAgent, association, attachment}, args.NodePools...)
	release, err := helmrelease.New(ctx, name+"-lb-controller", &helmrelease.ReleaseArgs{
		Name:           pulumi.String("aws-load-balancer-controller"),
		Chart:          pulumi.String("aws-load-balancer-controller"),
		RepositoryOpts: &helmrelease.RepositoryOptsArgs{Repo: pulumi.String(eksChartsRepository)},
		Version:        pulumi.String(args.Versions.LoadBalancerControllerChart),
		Namespace:      pulumi.String(LoadBalancerControllerNamespace),
		// The CRDs come from the group above, which also upgrades them.
		SkipCrds: pulumi.Bool(true),
		Values:   values,
		Timeout:  pulumi.Int(bounds.Seconds(bounds.ChartOnNodes)),
	},
		parent, pulumi.Provider(args.Provider),
		// Its CRDs must be served at the chart's version before it starts
		// (the controller's upgrade notes); its pods need nodes (the pools),
		// DNS (CoreDNS) and credentials (the agent, the association and
		// the permissions behind it).
		pulumi.DependsOn(prerequisites),
	)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller release: %w", err)
	}
	return &lbcResources{role: role, release: release}, nil
}

// LoadBalancerControllerCRDs are the manifests of the controller's CRDs at
// the tag of chartVersion (from chart 3.0.0 on, chart and controller
// versions are equal). Helm installs a chart's crds/ only on first install
// and never upgrades them, while controller 3.x adds kinds and fields
// (ALBTargetControlConfig, GlobalAccelerator, v1 of the gateway
// configurations); the controller's installation guide at v3.5.0 says to
// apply crds.yaml before upgrading the chart (docs/deploy/installation.md).
func LoadBalancerControllerCRDs(chartVersion string) []string {
	base := "https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/v" + chartVersion +
		"/helm/aws-load-balancer-controller/crds/"
	return []string{base + "crds.yaml", base + "gateway-crds.yaml"}
}

// NewLoadBalancerControllerCRDs registers the controller's CRDs from files
// (LoadBalancerControllerCRDs in the program; manifests of the Kubernetes
// engine tier, which cannot reach GitHub) as a ConfigGroup whose CRDs take
// over the fields an earlier Helm install owns (TakeOverCRDs).
func NewLoadBalancerControllerCRDs(ctx *pulumi.Context, name string, files []string, protect bool,
	opts ...pulumi.ResourceOption) (*k8syaml.ConfigGroup, error) {
	opts = append(opts, pulumi.Transforms([]pulumi.ResourceTransform{TakeOverCRDs(protect)}), protectIf(protect))
	crds, err := k8syaml.NewConfigGroup(ctx, name, &k8syaml.ConfigGroupArgs{Files: pulumi.ToStringArray(files)}, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller CRDs: %w", err)
	}
	return crds, nil
}

// crdType is the Pulumi type of a CustomResourceDefinition.
const crdType = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"

// TakeOverCRDs marks the CRDs of a ConfigGroup pulumi.com/patchForce, so
// that the provider's server-side apply takes over the fields that an
// earlier Helm install of the chart owns (field manager "helm") instead of
// failing on the conflict when a new version changes them
// (https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/).
// Each CRD is awaited within bounds.LoadBalancerControllerCRDs. With
// protect, it protects each of the group's children itself: a
// destroy reaches them apart from the group (the engine goes on past a protected
// resource and skips only its dependencies, not their children: pulumi/pulumi
// pkg/resource/deploy/deployment_executor.go), and deleting a CRD would
// delete every TargetGroupBinding of a running production cluster.
func TakeOverCRDs(protect bool) pulumi.ResourceTransform {
	return func(ctx context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		return takeOverCRD(ctx, args, protect)
	}
}

func takeOverCRD(_ context.Context, args *pulumi.ResourceTransformArgs, protect bool) *pulumi.ResourceTransformResult {
	opts := args.Opts
	if protect {
		opts.Protect = true
	}
	if args.Type != crdType {
		if protect {
			return &pulumi.ResourceTransformResult{Props: args.Props, Opts: opts}
		}
		return nil
	}
	// Awaited until Established within the bootstrap's bound, not the
	// provider's 10 minutes.
	bound := bounds.LoadBalancerControllerCRDs.String()
	opts.CustomTimeouts = &pulumi.CustomTimeouts{Create: bound, Update: bound}
	meta, _ := args.Props["metadata"].(pulumi.Map)
	annotations, _ := meta["annotations"].(pulumi.Map)
	newAnnotations := pulumi.Map{"pulumi.com/patchForce": pulumi.String("true")}
	for k, v := range annotations {
		if k != "pulumi.com/patchForce" {
			newAnnotations[k] = v
		}
	}
	newMeta := pulumi.Map{"annotations": newAnnotations}
	for k, v := range meta {
		if k != "annotations" {
			newMeta[k] = v
		}
	}
	props := pulumi.Map{"metadata": newMeta}
	for k, v := range args.Props {
		if k != "metadata" {
			props[k] = v
		}
	}
	return &pulumi.ResourceTransformResult{Props: props, Opts: opts}
}

// ServiceWebhookSkips are the namespaces the controller's Service webhook
// leaves alone: kube-system, where the EKS add-ons (metrics-server among
// them) create their Services, and karpenter, whose chart's Service must
// be creatable while no node (so no pod of the controller) runs, or a
// reinstall of Karpenter would wait for the controller, which waits for
// Karpenter's nodes. The chart's mservice.elbv2.k8s.aws webhook
// sees every Service create in every namespace and refuses it with
// failurePolicy Fail while the controller's pods are not serving
// (templates/webhook.yaml and values.yaml at v3.5.0), so an add-on created
// during the controller's install, or upgraded while it restarts, would
// fail. The price: a LoadBalancer Service created in these namespaces is not
// given the controller's loadBalancerClass, and goes to EKS's in-tree
// controller unless it names the class itself (docs/deploy/installation.md
// at v3.5.0, "enableServiceMutatorWebhook").
var ServiceWebhookSkips = []string{"kube-system", "karpenter"}

// LoadBalancerControllerValues are the aws-load-balancer-controller chart's
// values: the cluster, region and VPC are given, not discovered through
// IMDS (which the nodes' hop limit of 1 keeps from pods). keepTLSSecret
// reuses the webhook certificate on upgrade: from chart 3.1.0 it defaults to
// false, which signs a new certificate on every render while the running
// pods keep the old one (templates/_helpers.tpl at v3.5.0). The Service
// webhook skips ServiceWebhookSkips, by the label every namespace carries
// with its name (kubernetes.io/metadata.name, Kubernetes 1.22 and later).
func LoadBalancerControllerValues(clusterName, region, vpcID string) map[string]any {
	skips := make([]any, 0, len(ServiceWebhookSkips))
	for _, ns := range ServiceWebhookSkips {
		skips = append(skips, ns)
	}
	return map[string]any{
		"clusterName":   clusterName,
		"region":        region,
		"vpcId":         vpcID,
		"replicaCount":  2,
		"keepTLSSecret": true,
		"serviceMutatorWebhookConfig": map[string]any{
			"namespaceSelectors": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": skips}},
		},
		"serviceAccount": map[string]any{
			"create": true,
			"name":   LoadBalancerControllerServiceAccount,
		},
	}
}

// PodIdentityTrustPolicy lets EKS Pod Identity hand the role to one
// service account of one cluster. The conditions are the session tags Pod
// Identity sets, as AWS documents for this principal
// (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html);
// aws:SourceArn is not documented for it and has been seen to deny
// credentials.
func PodIdentityTrustPolicy(clusterArn, namespace, serviceAccount string) (string, error) {
	b, err := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "pods.eks.amazonaws.com"},
			"Action":    []string{"sts:AssumeRole", "sts:TagSession"},
			"Condition": map[string]any{
				"StringEquals": map[string]any{
					"aws:RequestTag/eks-cluster-arn":            clusterArn,
					"aws:RequestTag/kubernetes-namespace":       namespace,
					"aws:RequestTag/kubernetes-service-account": serviceAccount,
				},
			},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("encoding pod identity trust policy: %w", err)
	}
	return string(b), nil
}
