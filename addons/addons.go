// Package addons owns what runs on Karpenter's nodes once they exist:
// the CoreDNS, kube-proxy, EKS Pod Identity Agent and node monitoring agent
// add-ons, the EBS CSI driver with the default gp3 StorageClass, the AWS
// Load Balancer Controller (IAM through Pod Identity, Helm release) and,
// optionally, ArgoCD. It needs the cluster, its Kubernetes provider and the
// NodePools.
package addons

import (
	"fmt"
	"slices"
	"time"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/iamopts"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const typeToken = "nodeless-eks:addons:Addons"

// Versions pins what the add-ons run. Empty EKS add-on versions mean the
// EKS default for the cluster's Kubernetes version.
type Versions struct {
	KubeProxy, CoreDNS, PodIdentityAgent, NodeMonitoringAgent, EBSCSIDriver, MetricsServer string
	// LoadBalancerControllerChart is the aws-load-balancer-controller
	// chart version. Required.
	LoadBalancerControllerChart string
	// ArgoCDChart is the argo-cd chart version; required when ArgoCD is on.
	ArgoCDChart string
}

// Args configures the add-ons.
type Args struct {
	// ClusterName and Region scope the controller's IAM; KubernetesVersion
	// picks default add-on versions. Required.
	ClusterName, Region, KubernetesVersion string
	// CreatedClusterName is the cluster's name once it exists. Required.
	CreatedClusterName pulumi.StringInput
	// VpcID is where the load balancer controller works. Required.
	VpcID pulumi.StringInput
	// Provider deploys the Helm releases. Required.
	Provider *kubernetes.Provider
	// NodePools provide the EC2 capacity that CoreDNS and the controllers
	// need; those wait for them. Required.
	NodePools []pulumi.Resource
	// NodeClasses, KarpenterRelease, VpcCni, AccessEntries and Kubeconfig
	// serve the destroy cleanup, which must run while they still exist:
	// Karpenter drains what it deletes, vpc-cni networks the pods that
	// work meanwhile, and the access entries let whoever runs `pulumi
	// destroy` reach the cluster. Required, but for AccessEntries.
	NodeClasses []pulumi.Resource
	// NodePoolNames and NodeClassNames are theirs, which the destroy
	// cleanup keeps (with the stack's label) and no other.
	NodePoolNames, NodeClassNames pulumi.StringArrayInput
	KarpenterRelease              pulumi.Resource
	VpcCni                        pulumi.Resource
	AccessEntries                 []pulumi.Resource
	Kubeconfig                    pulumi.StringInput
	// ClusterArn and ClusterCreatedAt name the EKS cluster, so that the
	// destroy cleanup believes EKS's "not found" only from its account and
	// region, and tells it from a cluster recreated under its name.
	ClusterArn, ClusterCreatedAt pulumi.StringInput
	// StackLabel is the value of the names.StackLabelKey label on the
	// stack's own NodePools and EC2NodeClasses, which the cleanup keeps.
	StackLabel string
	// CleanupNodeTimeout bounds the destroy cleanup's wait for the nodes of
	// pools the stack did not create (Config.CleanupNodeTimeout).
	CleanupNodeTimeout time.Duration
	// Versions pins versions.
	Versions Versions
	// CoreDNSReplicas is the CoreDNS replica count, spread over nodes
	// and zones. At least 1; production stacks use 2 or more.
	CoreDNSReplicas int
	// ArgoCD installs ArgoCD when true.
	ArgoCD bool
	// MetricsServer installs metrics-server (kubectl top, HPAs) with the
	// add-on's defaults.
	MetricsServer bool
	// NodeMonitoringAgent installs the EKS node monitoring agent, whose
	// node conditions Karpenter's node repair acts on.
	NodeMonitoringAgent bool
	// Tags go on every AWS resource that supports them.
	Tags map[string]string
	// IAM is the path and permissions boundary of every role and policy.
	IAM iamopts.Options
	// Keep are deleted only after the destroy cleanup (every resource of
	// the cluster and Karpenter layers, not their components, whose
	// expansion by the SDK can miss children): with Protect, a destroy
	// stops at the cleanup before any of them goes.
	Keep []pulumi.Resource
	// DestroyCleanup registers the destroy cleanup; nil registers
	// pulumi-command's local.Command, which runs the cleanup with `go run`
	// in the checkout (the Go program's). provider/ gives its own resource,
	// whose delete runs the cleanup in-process.
	DestroyCleanup CleanupRegistrar
	// Protect keeps `pulumi destroy` from running the destroy cleanup,
	// which deletes workloads' EBS volumes and load balancers, and from
	// deleting ArgoCD, the one release deleted before it, and the LB
	// controller's CRDs, which a destroy reaches apart from their group:
	// a destroy of a protected stack deletes nothing the cluster needs.
	Protect bool
}

// Addons is the set of add-ons.
type Addons struct {
	pulumi.ResourceState

	// CoreDNSVersion is the CoreDNS add-on version.
	CoreDNSVersion pulumi.StringOutput `pulumi:"coreDnsVersion"`
	// LoadBalancerControllerRoleArn is the controller's Pod Identity role.
	LoadBalancerControllerRoleArn pulumi.StringOutput `pulumi:"loadBalancerControllerRoleArn"`
	// ArgoCDNamespace is where ArgoCD runs, or "" when it is off.
	ArgoCDNamespace pulumi.StringOutput `pulumi:"argoCdNamespace"`

	// CoreDNS is the CoreDNS add-on, created once its pods run on a node
	// Karpenter launched: the end of the bootstrap's node step.
	CoreDNS pulumi.CustomResource
}

// New creates the add-ons.
func New(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Addons, error) {
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("addons %q: %w", name, err)
	}
	a := &Addons{}
	if err := ctx.RegisterComponentResource(typeToken, name, a, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(a)

	account, err := awsaccount.Lookup(ctx, parent)
	if err != nil {
		return nil, err
	}

	eksAddons, err := newEKSAddons(ctx, name, args, parent)
	if err != nil {
		return nil, err
	}
	a.CoreDNSVersion = eksAddons.coreDNS.AddonVersion
	a.CoreDNS = eksAddons.coreDNS

	ebsCSI, defaultClass, err := newEBSCSIDriver(ctx, name, args, account, eksAddons.podIdentityAgent, parent)
	if err != nil {
		return nil, err
	}

	lbc, err := newLoadBalancerController(ctx, name, args, lbcInputs{
		account: account,
		coreDNS: eksAddons.coreDNS, podIdentityAgent: eksAddons.podIdentityAgent,
	}, parent)
	if err != nil {
		return nil, err
	}
	a.LoadBalancerControllerRoleArn = lbc.role.Arn

	cleanup, err := newDestroyCleanup(ctx, name, args, slices.Concat([]pulumi.Resource{
		lbc.release, ebsCSI, eksAddons.coreDNS, eksAddons.kubeProxy, eksAddons.podIdentityAgent,
		// Needed by no cleanup step, but deleted after it, as are the
		// optional add-ons: with Protect, a destroy stops at the cleanup
		// before anything goes.
		defaultClass,
	}, eksAddons.optional, args.Keep), parent)
	if err != nil {
		return nil, err
	}

	a.ArgoCDNamespace = pulumi.String("").ToStringOutput()
	if args.ArgoCD {
		if err := newArgoCD(ctx, name, args, eksAddons.coreDNS, lbc.release, cleanup, parent); err != nil {
			return nil, err
		}
		a.ArgoCDNamespace = pulumi.String(argoCDNamespace).ToStringOutput()
	}

	if err := ctx.RegisterResourceOutputs(a, pulumi.Map{
		"coreDnsVersion":                a.CoreDNSVersion,
		"loadBalancerControllerRoleArn": a.LoadBalancerControllerRoleArn,
		"argoCdNamespace":               a.ArgoCDNamespace,
	}); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Args) validate() error {
	switch {
	case a == nil:
		return fmt.Errorf("args are required")
	case a.ClusterName == "" || a.Region == "" || a.KubernetesVersion == "":
		return fmt.Errorf("ClusterName, Region and KubernetesVersion are required")
	case a.CreatedClusterName == nil || a.VpcID == nil || a.Provider == nil:
		return fmt.Errorf("CreatedClusterName, VpcID and Provider are required")
	case a.KarpenterRelease == nil || a.VpcCni == nil || a.Kubeconfig == nil || a.ClusterArn == nil || a.ClusterCreatedAt == nil ||
		a.StackLabel == "" || a.CleanupNodeTimeout <= 0:
		return fmt.Errorf("KarpenterRelease, VpcCni, Kubeconfig, ClusterArn, ClusterCreatedAt, StackLabel and CleanupNodeTimeout are " +
			"required for the destroy cleanup")
	case len(a.NodePools) == 0:
		return fmt.Errorf("NodePools: CoreDNS and the controllers need at least one pool")
	case a.CoreDNSReplicas < 1:
		return fmt.Errorf("CoreDNSReplicas %d: at least 1", a.CoreDNSReplicas)
	case a.Versions.LoadBalancerControllerChart == "":
		return fmt.Errorf("Versions.LoadBalancerControllerChart is required")
	case a.ArgoCD && a.Versions.ArgoCDChart == "":
		return fmt.Errorf("Versions.ArgoCDChart is required when ArgoCD is on")
	}
	return nil
}
