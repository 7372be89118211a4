package addons

import (
	"fmt"
	"time"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// loadBalancerCleanupTimeout bounds the wait for the LB controller to
// delete the load balancers of the Ingresses and Services it is given.
const loadBalancerCleanupTimeout = 15 * time.Minute

// newDestroyCleanup registers a command that runs only on delete: `go run
// ./cmd/destroy-cleanup` (internal/cleanup) removes every Ingress,
// LoadBalancer Service and NodePool, ours or a workload's, and waits until
// their load balancers and nodes are gone. It depends on the LB controller,
// the NodePools, the node classes and Karpenter, so destroy runs it before
// any of them goes; on `up` it does nothing. Its name and inputs must stay
// stable: renaming it without an alias, or a replacement, would run the
// cleanup against a live cluster.
func newDestroyCleanup(ctx *pulumi.Context, name string, args *Args, lbController pulumi.Resource,
	parent pulumi.ResourceOption) (pulumi.Resource, error) {
	prerequisites := append([]pulumi.Resource{
		// The controllers must still run while the cleanup waits on them.
		lbController, args.KarpenterRelease,
	}, append(args.NodeClasses, args.NodePools...)...)
	timeout := args.CleanupNodeTimeout + loadBalancerCleanupTimeout
	cmd, err := local.NewCommand(ctx, name+"-destroy-cleanup", &local.CommandArgs{
		// Go is on every machine that runs this program; the repository is
		// checked out wherever `pulumi destroy` runs.
		Delete: pulumi.String("go run ./cmd/destroy-cleanup"),
		Environment: pulumi.StringMap{
			"NODELESS_EKS_KUBECONFIG":   args.Kubeconfig,
			"NODELESS_EKS_NODE_TIMEOUT": pulumi.String(args.CleanupNodeTimeout.String()),
			"NODELESS_EKS_LB_TIMEOUT":   pulumi.String(loadBalancerCleanupTimeout.String()),
		},
	},
		parent,
		// Deleted first: before the controllers it needs and the objects it drains.
		pulumi.DependsOn(prerequisites),
		pulumi.Timeouts(&pulumi.CustomTimeouts{Delete: timeout.String()}),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the destroy cleanup: %w", err)
	}
	return cmd, nil
}
