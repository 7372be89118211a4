package addons

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/awscli"
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

// DestroyCleanupCommand is the cleanup's delete step, a POSIX shell script
// (pulumi-command runs it with /bin/sh -c, in its provider's working
// directory when the command names no dir: provider/pkg/provider/local at
// v1.1.0. The engine starts the provider in the project's directory, the
// one it records for the stack, where Pulumi.yaml is, whatever directory
// `pulumi destroy` was started from. On Windows it runs cmd /C, which
// cannot run it: destroy from WSL, Linux or macOS). It honours the
// skip switch before it needs Go or the checkout, so that the way out
// works where `go run` cannot start, and says what is missing otherwise.
// Its lines go to the report file too (cleanup.EnvReport).
const DestroyCleanupCommand = `report="${NODELESS_EKS_CLEANUP_REPORT:-/dev/null}"
if [ "${NODELESS_EKS_SKIP_DESTROY_CLEANUP:-}" = true ]; then
  echo "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true: skipping the destroy cleanup. Load balancers, EBS volumes and nodes that workloads created are left for you to remove" | tee -a "$report"
  exit 0
fi
if [ ! -f cmd/destroy-cleanup/main.go ]; then
  echo "destroy-cleanup: $(pwd) holds no cmd/destroy-cleanup: run pulumi destroy in the nodeless-eks checkout, at a commit that has it, or set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to destroy without the cleanup (docs/troubleshooting.md)" | tee -a "$report" >&2
  exit 1
fi
if ! command -v go >/dev/null 2>&1; then
  echo "destroy-cleanup: no go on PATH, which builds the cleanup as it builds the program: put Go 1.26 on PATH, or set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to destroy without the cleanup (docs/troubleshooting.md)" | tee -a "$report" >&2
  exit 1
fi
exec go run ./cmd/destroy-cleanup`

// destroyCleanupName says, in every plan that shows it, what its delete
// does; the alias keeps the resource of earlier versions (a new URN
// without it would replace the command, and the replacement's delete would
// clean a live cluster).
const (
	destroyCleanupName    = "-destroy-cleanup-of-workload-lbs-and-volumes"
	oldDestroyCleanupName = "-destroy-cleanup"
)

// ReportFile is where a stack's cleanup report goes, next to Pulumi.yaml.
func ReportFile(stackLabel string) string {
	return "destroy-cleanup-" + stackLabel + ".log"
}

// newDestroyCleanup registers a command that runs only on delete:
// DestroyCleanupCommand runs `go run ./cmd/destroy-cleanup`
// (internal/cleanup), which removes what workloads created and the stack
// does not know of: load balancers, EBS volumes, and node pools and
// classes without the stack's label. It depends on everything it needs
// (the controllers that remove the AWS resources, the add-ons their pods
// need, the access entries of whoever runs destroy, and the stack's own
// pools and classes), so destroy runs it before any of them goes; on `up`
// it does nothing. It has no create or update step, and its URN stays (an
// alias): a replacement would run the cleanup against a live cluster, as
// would a targeted destroy that reaches it, which the cleanup refuses
// unless told (internal/cleanup, invocation.go).
func newDestroyCleanup(ctx *pulumi.Context, name string, args *Args, needs []pulumi.Resource,
	parent pulumi.ResourceOption) (pulumi.Resource, error) {
	prerequisites := slices.Concat([]pulumi.Resource{args.KarpenterRelease, args.VpcCni}, needs,
		args.AccessEntries, args.NodeClasses, args.NodePools)
	budget := cleanup.Budget(loadBalancerCleanupTimeout, volumeCleanupTimeout, args.CleanupNodeTimeout)
	settings := pulumi.StringMap{
		cleanup.EnvKubeconfig:          args.Kubeconfig,
		cleanup.EnvClusterArn:          args.ClusterArn,
		cleanup.EnvClusterCreatedAt:    args.ClusterCreatedAt,
		cleanup.EnvOwnLabel:            pulumi.String(names.StackSelector(args.StackLabel)),
		cleanup.EnvOwnNodePools:        joined(args.NodePoolNames),
		cleanup.EnvOwnNodeClasses:      joined(args.NodeClassNames),
		cleanup.EnvLoadBalancerTimeout: pulumi.String(loadBalancerCleanupTimeout.String()),
		cleanup.EnvVolumeTimeout:       pulumi.String(volumeCleanupTimeout.String()),
		cleanup.EnvNodeTimeout:         pulumi.String(args.CleanupNodeTimeout.String()),
		cleanup.EnvReport:              pulumi.String(ReportFile(args.StackLabel)),
	}
	opts := []pulumi.ResourceOption{
		parent,
		// Deleted first: before the controllers, add-ons and access it needs,
		// and before the stack's own pools and classes.
		pulumi.DependsOn(prerequisites),
		// The delete's custom timeout; the cleanup also keeps its own
		// deadline (internal/cleanup.Main), so it ends within this whether
		// or not the provider enforces it.
		pulumi.Timeouts(&pulumi.CustomTimeouts{Delete: budget.String()}),
		// Pulumi checks protection when it reaches a delete, not before
		// the destroy starts, and then goes on with what the protected
		// resource does not depend on (pulumi/pulumi step.go and
		// deployment_executor.go): the protected cluster alone would have
		// let this step delete the workloads' data. Everything the running
		// cluster needs is among its dependencies.
		protectIf(args.Protect),
	}
	register := args.DestroyCleanup
	if register == nil {
		register = commandCleanup
	}
	r, err := register(ctx, name+destroyCleanupName, settings, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the destroy cleanup: %w", err)
	}
	return r, nil
}

// NetworkSweepArgs are what the leftover audit, and the network sweep of
// a VPC the stack made, need (internal/cleanup, audit.go and network.go).
type NetworkSweepArgs struct {
	// VpcArn is the VPC; ClusterName the cluster whose leftovers are the
	// stack's; NodeSecurityGroupID the group Pulumi deletes after it.
	VpcArn, NodeSecurityGroupID pulumi.StringOutput
	ClusterName                 string
	// AuditOnly, for a VPC the stack did not make, audits without the
	// sweep.
	AuditOnly bool
	// AWSAccess is the stack's aws provider's credentials, which the
	// phase's AWS CLI calls use.
	AWSAccess awscli.Access
	// StackLabel names the report file.
	StackLabel string
	// DestroyCleanup registers it (Args.DestroyCleanup); nil is the
	// program's command.
	DestroyCleanup CleanupRegistrar
	// Protect keeps a production stack's destroy from reaching it.
	Protect bool
}

// networkSweepTimeout bounds the sweep: EKS removes its own network
// interfaces within minutes of the cluster's deletion, and the LB
// controller's groups go as soon as nothing refers to them.
const networkSweepTimeout = 15 * time.Minute

// NewNetworkSweep registers the leftover audit and, unless AuditOnly, the
// network sweep: like the destroy cleanup, it does nothing on create and
// update, and its delete runs internal/cleanup.Main, in its network
// phase. What it needs deleted first depends on it (cluster.Args.Sweep),
// and it depends on deps (the VPC, its subnets, when the stack made them),
// so destroy runs it between the two.
func NewNetworkSweep(ctx *pulumi.Context, name string, args NetworkSweepArgs, deps []pulumi.Resource,
	opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	access, err := json.Marshal(args.AWSAccess)
	if err != nil {
		return nil, err
	}
	settings := pulumi.StringMap{
		cleanup.EnvPhase:             pulumi.String(cleanup.PhaseNetwork),
		cleanup.EnvVpcArn:            args.VpcArn,
		cleanup.EnvClusterName:       pulumi.String(args.ClusterName),
		cleanup.EnvNodeSecurityGroup: args.NodeSecurityGroupID,
		cleanup.EnvAWSAccess:         pulumi.String(string(access)),
		cleanup.EnvNetworkTimeout:    pulumi.String(networkSweepTimeout.String()),
		cleanup.EnvOwnLabel:          pulumi.String(names.StackSelector(args.StackLabel)),
		cleanup.EnvReport:            pulumi.String(ReportFile(args.StackLabel)),
	}
	suffix := networkSweepName
	if args.AuditOnly {
		settings[cleanup.EnvAuditOnly] = pulumi.String("true")
		suffix = leftoverAuditName
	}
	register := args.DestroyCleanup
	if register == nil {
		register = commandCleanup
	}
	r, err := register(ctx, name+suffix, settings, append(opts,
		// Deleted before the VPC and its subnets.
		pulumi.DependsOn(deps),
		pulumi.Timeouts(&pulumi.CustomTimeouts{Delete: cleanup.NetworkBudget(networkSweepTimeout).String()}),
		protectIf(args.Protect))...)
	if err != nil {
		return nil, fmt.Errorf("creating the network sweep: %w", err)
	}
	return r, nil
}

// networkSweepName and leftoverAuditName say, in every plan that shows
// them, what their delete does.
const (
	networkSweepName  = "-destroy-sweep-of-vpc-leftovers"
	leftoverAuditName = "-destroy-audit-of-aws-leftovers"
)

// CleanupRegistrar registers the destroy cleanup under name: a resource
// that does nothing on create and update and, on delete, runs
// internal/cleanup.Main with settings (cleanup.Env* names) read as its
// environment. opts order it and bound it; a registrar keeps them all.
type CleanupRegistrar func(ctx *pulumi.Context, name string, settings pulumi.StringMap,
	opts ...pulumi.ResourceOption) (pulumi.Resource, error)

// commandCleanup is the Go program's cleanup: a pulumi-command
// local.Command whose delete runs DestroyCleanupCommand with settings as
// its environment.
func commandCleanup(ctx *pulumi.Context, name string, settings pulumi.StringMap,
	opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	if base, ok := strings.CutSuffix(name, destroyCleanupName); ok {
		opts = append(opts, pulumi.Aliases([]pulumi.Alias{{Name: pulumi.String(base + oldDestroyCleanupName)}}))
	}
	return local.NewCommand(ctx, name, &local.CommandArgs{
		// Go is on every machine that runs this program; the repository is
		// checked out wherever `pulumi destroy` runs. The command uses only
		// the standard library, which the program's own build compiled.
		Delete:      pulumi.String(DestroyCleanupCommand),
		Environment: settings,
	}, opts...)
}

// protectIf protects a resource on a production stack and otherwise sets
// nothing, so that the resource inherits its parent's protection: a
// consumer that protects the Cluster component (provider/) protects the
// cleanup, ArgoCD and the LB controller's CRDs with the cluster, where an
// explicit Protect(false) would let a destroy delete the workloads' data
// before it stops at the protected cluster (the Go SDK takes the parent's
// only when the option is unset: sdk/go/pulumi/context.go, at v3.256.0).
func protectIf(production bool) pulumi.ResourceOption {
	if production {
		return pulumi.Protect(true)
	}
	return pulumi.Composite()
}

// joined is a list as the cleanup reads it, comma-separated; none is "".
func joined(names pulumi.StringArrayInput) pulumi.StringOutput {
	if names == nil {
		return pulumi.String("").ToStringOutput()
	}
	return names.ToStringArrayOutput().ApplyT(func(n []string) string { return strings.Join(n, ",") }).(pulumi.StringOutput)
}
