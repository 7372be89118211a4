// Package nodepool owns the Karpenter EC2NodeClasses and NodePools that the
// stack configures. It needs the Karpenter release (the CRDs and the
// controller that reconciles them), the node role and its access entry, the
// subnets and security group of the nodes, and the vpc-cni add-on that must
// be in place before the first EC2 node.
package nodepool

import (
	"fmt"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/names"
	"nodeless-eks/nodepool/spec"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const typeToken = "nodeless-eks:nodepool:NodePools"

// AwaitReady makes the kubernetes provider wait, on create and update,
// until an object's Ready condition is True (pulumi-kubernetes 4.18 and
// later; without it a custom resource is not awaited at all: pulumi-kubernetes
// provider/pkg/await, https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/await-logic/),
// so that a
// class or pool that cannot work fails `pulumi up` at itself, within its
// bound, instead of at CoreDNS, whose own bound comes later.
const AwaitReady = "condition=Ready"

// Args configures the node pools. Pools and Classes have their defaults
// applied and are validated (spec.Validate) before New is called.
type Args struct {
	// ClusterName is the discovery tag value. Required.
	ClusterName string
	// StackLabel is the value of the names.StackLabelKey label on every
	// pool and class: the destroy cleanup leaves what carries it to
	// Pulumi. Required.
	StackLabel string
	// Pools and Classes by name; every pool's NodeClass is a key of
	// Classes. At least one pool is required.
	Pools   map[string]spec.Pool
	Classes map[string]spec.NodeClass
	// NodeRoleName is the role of every node. Required.
	NodeRoleName pulumi.StringInput
	// SubnetIDs are where nodes launch (the private subnets). Required.
	SubnetIDs pulumi.StringArrayInput
	// SecurityGroupID is the node security group. Required.
	SecurityGroupID pulumi.StringInput
	// Provider deploys the objects. Required.
	Provider *kubernetes.Provider
	// KarpenterRelease serves the CRDs and reconciles the objects; node
	// classes wait for it. Required.
	KarpenterRelease pulumi.Resource
	// NodePrerequisites let nodes join and work (the node role's policy
	// attachments and access entry); node classes wait for them. Required.
	NodePrerequisites []pulumi.Resource
	// VpcCni must be ACTIVE before the first node; pools wait for it.
	// Required.
	VpcCni pulumi.Resource
}

// NodePools is the set of configured pools and classes.
type NodePools struct {
	pulumi.ResourceState

	// NodePoolNames are the NodePools' names.
	NodePoolNames pulumi.StringArrayOutput `pulumi:"nodePoolNames"`
	// NodeClassNames are the EC2NodeClasses' names.
	NodeClassNames pulumi.StringArrayOutput `pulumi:"nodeClassNames"`

	// Pools are the NodePool objects; whatever needs EC2 capacity waits for them.
	Pools []pulumi.Resource
	// Classes are the EC2NodeClass objects.
	Classes []pulumi.Resource
}

// New creates one EC2NodeClass per class and one NodePool per pool.
func New(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*NodePools, error) {
	if err := args.validate(); err != nil {
		return nil, fmt.Errorf("nodepool %q: %w", name, err)
	}
	n := &NodePools{}
	if err := ctx.RegisterComponentResource(typeToken, name, n, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(n)
	provider := pulumi.Provider(args.Provider)
	labels := pulumi.StringMap{names.StackLabelKey: pulumi.String(args.StackLabel)}
	// waitFor holds each object until Karpenter marks it Ready. patchForce:
	// the declared value wins. A field the program sets and someone edited
	// (kubectl patch makes the editor its manager) is taken back by the
	// next `up --refresh`, where the apply would otherwise fail on the
	// field's conflict (pulumi-kubernetes v4.25.0, as the Kubernetes engine
	// tier runs it). Fields others set, such as Karpenter's hash
	// annotations, stay theirs.
	annotations := pulumi.StringMap{"pulumi.com/waitFor": pulumi.String(AwaitReady), "pulumi.com/patchForce": pulumi.String("true")}

	classes := map[string]*apiextensions.CustomResource{}
	classNames := spec.SortedNames(args.Classes)
	for _, className := range classNames {
		class := args.Classes[className]
		classSpec := pulumi.All(args.NodeRoleName, args.SecurityGroupID, args.SubnetIDs).ApplyT(func(v []any) map[string]any {
			return spec.EC2NodeClass(className, class, spec.Nodes{
				ClusterName: args.ClusterName, NodeRoleName: v[0].(string),
				SubnetIDs: v[2].([]string), SecurityGroupIDs: []string{v[1].(string)},
			})["spec"].(map[string]any)
		}).(pulumi.MapOutput)
		cr, err := apiextensions.NewCustomResource(ctx, name+"-class-"+className, &apiextensions.CustomResourceArgs{
			ApiVersion: pulumi.String(spec.EC2NodeClassAPIVersion),
			Kind:       pulumi.String("EC2NodeClass"),
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(className), Labels: labels,
				Annotations: annotations},
			OtherFields: kubernetes.UntypedArgs{"spec": classSpec},
		},
			parent, provider,
			// Karpenter must serve the CRD, and nodes must be able to join,
			// before it launches anything for this class.
			pulumi.DependsOn(append([]pulumi.Resource{args.KarpenterRelease}, args.NodePrerequisites...)),
			pulumi.Timeouts(&pulumi.CustomTimeouts{Create: bounds.NodeClass.String(), Update: bounds.NodeClass.String(),
				Delete: bounds.NodeClassDelete.String()}),
		)
		if err != nil {
			return nil, fmt.Errorf("creating EC2NodeClass %s: %w", className, err)
		}
		classes[className] = cr
		n.Classes = append(n.Classes, cr)
	}

	poolNames := spec.SortedNames(args.Pools)
	for _, poolName := range poolNames {
		pool := args.Pools[poolName]
		obj := spec.NodePool(poolName, pool)
		cr, err := apiextensions.NewCustomResource(ctx, name+"-pool-"+poolName, &apiextensions.CustomResourceArgs{
			ApiVersion: pulumi.String(spec.NodePoolAPIVersion),
			Kind:       pulumi.String("NodePool"),
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(poolName), Labels: labels,
				Annotations: annotations},
			OtherFields: kubernetes.UntypedArgs{"spec": obj["spec"]},
		},
			parent, provider,
			// The pool names its class only by name, and its first node
			// needs custom networking in place.
			pulumi.DependsOn([]pulumi.Resource{classes[pool.NodeClass], args.VpcCni}),
			pulumi.Timeouts(&pulumi.CustomTimeouts{Create: bounds.NodePool.String(), Update: bounds.NodePool.String(),
				Delete: poolDeleteTimeout(pool)}),
		)
		if err != nil {
			return nil, fmt.Errorf("creating NodePool %s: %w", poolName, err)
		}
		n.Pools = append(n.Pools, cr)
	}

	n.NodePoolNames = pulumi.ToStringArray(poolNames).ToStringArrayOutput()
	n.NodeClassNames = pulumi.ToStringArray(classNames).ToStringArrayOutput()
	if err := ctx.RegisterResourceOutputs(n, pulumi.Map{
		"nodePoolNames":  n.NodePoolNames,
		"nodeClassNames": n.NodeClassNames,
	}); err != nil {
		return nil, err
	}
	return n, nil
}

// poolDeleteTimeout covers Karpenter draining and terminating the pool's
// nodes on delete: at most the pool's terminationGracePeriod, plus time to
// terminate the instances.
func poolDeleteTimeout(p spec.Pool) string {
	return (p.Drain() + bounds.NodeTermination).String()
}

func (a *Args) validate() error {
	switch {
	case a == nil:
		return fmt.Errorf("args are required")
	case a.ClusterName == "" || a.StackLabel == "" || a.NodeRoleName == nil || a.Provider == nil:
		return fmt.Errorf("ClusterName, StackLabel, NodeRoleName and Provider are required")
	case a.SubnetIDs == nil || a.SecurityGroupID == nil:
		return fmt.Errorf("SubnetIDs and SecurityGroupID are required")
	case a.KarpenterRelease == nil || len(a.NodePrerequisites) == 0 || a.VpcCni == nil:
		return fmt.Errorf("KarpenterRelease, NodePrerequisites and VpcCni are required")
	case len(a.Pools) == 0:
		return fmt.Errorf("Pools: at least one pool is required")
	}
	for name, p := range a.Pools {
		if _, ok := a.Classes[p.NodeClass]; !ok {
			return fmt.Errorf("pool %s: node class %q is not among Classes", name, p.NodeClass)
		}
	}
	return nil
}
