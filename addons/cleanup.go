package addons

import (
	"fmt"
	"slices"
	"time"

	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Bounds of the destroy cleanup's steps besides the nodes' (which is
// Args.CleanupNodeTimeout): the LB controller deletes a load balancer in a
// minute or two, and the EBS CSI driver detaches and deletes a volume in
// about as long once its pod is gone.
const (
	loadBalancerCleanupTimeout = 15 * time.Minute
	volumeCleanupTimeout       = 15 * time.Minute
)

// newDestroyCleanup registers a command that runs only on delete: `go run
// ./cmd/destroy-cleanup` (internal/cleanup) removes what workloads created
// and the stack does not know of: load balancers, EBS volumes, and node
// pools and classes without the stack's label. It depends on everything it
// needs (the controllers that remove the AWS resources, the add-ons their
// pods need, the access entries of whoever runs destroy, and the stack's
// own pools and classes), so destroy runs it before any of them goes; on
// `up` it does nothing. Its name must stay stable, and it has no create or
// update step: a replacement would run the cleanup against a live cluster.
func newDestroyCleanup(ctx *pulumi.Context, name string, args *Args, needs []pulumi.Resource,
	parent pulumi.ResourceOption) (pulumi.Resource, error) {
	prerequisites := slices.Concat([]pulumi.Resource{args.KarpenterRelease, args.VpcCni}, needs,
		args.AccessEntries, args.NodeClasses, args.NodePools)
	budget := cleanup.Budget(loadBalancerCleanupTimeout, volumeCleanupTimeout, args.CleanupNodeTimeout)
	cmd, err := local.NewCommand(ctx, name+"-destroy-cleanup", &local.CommandArgs{
		// Go is on every machine that runs this program; the repository is
		// checked out wherever `pulumi destroy` runs. The command uses only
		// the standard library, which the program's own build compiled.
		Delete: pulumi.String("go run ./cmd/destroy-cleanup"),
		Environment: pulumi.StringMap{
			cleanup.EnvKubeconfig:          args.Kubeconfig,
			cleanup.EnvOwnLabel:            pulumi.String(names.StackSelector(args.StackLabel)),
			cleanup.EnvLoadBalancerTimeout: pulumi.String(loadBalancerCleanupTimeout.String()),
			cleanup.EnvVolumeTimeout:       pulumi.String(volumeCleanupTimeout.String()),
			cleanup.EnvNodeTimeout:         pulumi.String(args.CleanupNodeTimeout.String()),
		},
	},
		parent,
		// Deleted first: before the controllers, add-ons and access it needs,
		// and before the stack's own pools and classes.
		pulumi.DependsOn(prerequisites),
		// The delete's custom timeout; the command also keeps its own
		// deadline (internal/cleanup.Main), so it ends within this whether
		// or not the provider enforces it.
		pulumi.Timeouts(&pulumi.CustomTimeouts{Delete: budget.String()}),
		// Pulumi checks protection when it reaches a delete, not before
		// the destroy starts, and then goes on with what the protected
		// resource does not depend on (pulumi/pulumi step.go and
		// deployment_executor.go): the protected cluster alone would have
		// let this step delete the workloads' data. Everything the running
		// cluster needs is among its dependencies.
		pulumi.Protect(args.Protect),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the destroy cleanup: %w", err)
	}
	return cmd, nil
}
