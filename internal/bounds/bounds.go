// Package bounds states, in one place, how long each wait of the bootstrap,
// of destroy and of the recovery of an interrupted run may take. A create bound is the step's modelled time
// (docs/design.md, "Bootstrap time") with a margin of a few minutes, so a
// step that cannot succeed fails in minutes, at the resource that is wrong,
// instead of at a provider default of 15 to 20 minutes further on; the
// bootstrap watcher (internal/bootwatch) stops watching a step at the same
// bound. A Helm release takes its bound as Helm's timeout, which
// pulumi-kubernetes applies to install, upgrade and uninstall and in place
// of any custom timeout (provider/pkg/provider/helm_release.go); the others
// take theirs as custom timeouts.
package bounds

import (
	"fmt"
	"time"
)

// Create bounds, by step.
const (
	// FargateProfile: EKS creates a profile in 2-5 minutes and says nothing
	// sooner when it cannot; the same as pulumi-aws's default (its
	// terraform-provider-aws resource, internal/service/eks/fargate_profile.go).
	FargateProfile = 10 * time.Minute
	// KarpenterCRDs: API objects, applied in seconds.
	KarpenterCRDs = 5 * time.Minute
	// LoadBalancerControllerCRDs: API objects, Established in seconds
	// (pulumi-kubernetes awaits a CRD's Established condition, 10 minutes
	// by default).
	LoadBalancerControllerCRDs = 5 * time.Minute
	// KarpenterController: a Fargate pod gets its node in 1-2 minutes and
	// pulls the image in under one.
	KarpenterController = 8 * time.Minute
	// NodeClass: Karpenter resolves the AMIs, subnets, security groups and
	// instance profile of a class within a minute of seeing it.
	NodeClass = 4 * time.Minute
	// NodePool: Ready as soon as its class is.
	NodePool = 4 * time.Minute
	// FirstNode is the add-ons that turn ACTIVE only once their pods run on
	// a node Karpenter launches (CoreDNS, the EBS CSI driver,
	// metrics-server): a node in 1-2 minutes, the pods in another.
	FirstNode = 10 * time.Minute
	// DaemonSetAddon is the add-ons that are ACTIVE without any node
	// (vpc-cni, kube-proxy, the Pod Identity and node monitoring agents).
	DaemonSetAddon = 10 * time.Minute
	// ChartOnNodes is a release whose pods run on Karpenter's nodes (the LB
	// controller, ArgoCD): images pulled and pods Ready in 1-3 minutes, a
	// new node in 2 more if the existing ones are full.
	ChartOnNodes = 10 * time.Minute
)

// Delete bounds. A Helm release's uninstall is bounded by its create
// bound: Helm's timeout is one value for every operation.
const (
	// NodeClassDelete covers the EC2NodeClass finalizer, which waits for the
	// class's nodes to go and then removes its instance profiles.
	NodeClassDelete = 30 * time.Minute
	// NodeTermination is what Karpenter needs to terminate a node after its
	// drain, on top of the pool's terminationGracePeriod.
	NodeTermination = 15 * time.Minute
)

// Recovery bounds: how long cmd/recover-pending (internal/recovery) waits
// for what an interrupted run left. It waits for a Fargate profile still
// CREATING up to FargateProfile, as long as the create it replaces would.
const (
	// RecoverySettle is how long after the state's last write the recovery
	// starts to look: AWS's describe and list calls are eventually
	// consistent (the EC2 API reference, "Eventual consistency"; IAM's user
	// guide, "Changes that I make are not always immediately visible").
	RecoverySettle = 2 * time.Minute
	// RecoveryCluster: EKS creates a control plane in about 10 minutes; the
	// recovery waits for one still CREATING as long as pulumi-aws's create
	// would (terraform-provider-aws internal/service/eks/cluster.go, its
	// 30-minute create timeout; the program sets none).
	RecoveryCluster = 30 * time.Minute
	// Recovery bounds a whole recovery: the settle, its longest wait, and
	// minutes of reads.
	Recovery = 45 * time.Minute
)

// Seconds is d in whole seconds, for Helm's timeout input.
func Seconds(d time.Duration) int { return int(d / time.Second) }

// Describe says a bound in words, for messages.
func Describe(d time.Duration) string { return fmt.Sprintf("%d minutes", int(d.Minutes())) }
