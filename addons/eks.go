package addons

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/eksaddon"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type eksAddons struct {
	kubeProxy, podIdentityAgent, coreDNS *awseks.Addon
	// optional are the node monitoring agent and metrics-server, when on.
	optional []pulumi.Resource
}

// newEKSAddons creates kube-proxy, the Pod Identity Agent and the node
// monitoring agent, which are
// DaemonSets that become ACTIVE with no node at all and so wait only for the
// cluster, and CoreDNS, a Deployment that turns ACTIVE only once Karpenter
// has launched a node for its pending pods, and so waits for the NodePools.
func newEKSAddons(ctx *pulumi.Context, name string, args *Args, parent pulumi.ResourceOrInvokeOption) (*eksAddons, error) {
	out := &eksAddons{}
	var err error
	if out.kubeProxy, err = newAddon(ctx, name, args, addonSpec{addon: "kube-proxy", pinned: args.Versions.KubeProxy}, parent); err != nil {
		return nil, err
	}
	if out.podIdentityAgent, err = newAddon(ctx, name, args, addonSpec{addon: "eks-pod-identity-agent", pinned: args.Versions.PodIdentityAgent}, parent); err != nil {
		return nil, err
	}
	// A DaemonSet too: it reports kernel, network, storage and runtime
	// failures as node conditions for Karpenter's node repair.
	if args.NodeMonitoringAgent {
		agent, err := newAddon(ctx, name, args, addonSpec{addon: "eks-node-monitoring-agent", pinned: args.Versions.NodeMonitoringAgent}, parent)
		if err != nil {
			return nil, err
		}
		out.optional = append(out.optional, agent)
	}
	config, err := CoreDNSConfiguration(args.CoreDNSReplicas)
	if err != nil {
		return nil, err
	}
	if args.MetricsServer {
		// A Deployment: it needs EC2 capacity like CoreDNS, and runs beside
		// it. It gets no configuration values: the add-on's schema is
		// published only through DescribeAddonConfiguration, and a key EKS
		// does not know fails the create (see docs/configuration.md).
		metrics, err := newAddon(ctx, name, args, addonSpec{
			addon: "metrics-server", pinned: args.Versions.MetricsServer, dependsOn: args.NodePools,
		}, parent)
		if err != nil {
			return nil, err
		}
		out.optional = append(out.optional, metrics)
	}
	// CoreDNS pods need EC2 capacity; the pools let Karpenter provide it.
	if out.coreDNS, err = newAddon(ctx, name, args, addonSpec{
		addon: "coredns", pinned: args.Versions.CoreDNS, configuration: config, dependsOn: args.NodePools,
	}, parent); err != nil {
		return nil, err
	}
	return out, nil
}

// addonSpec is one EKS add-on.
type addonSpec struct {
	// addon is the EKS add-on name; pinned its version, "" for the EKS
	// default of the cluster's Kubernetes version.
	addon, pinned string
	// configuration is the add-on's configuration values (JSON), or "".
	configuration string
	// associations give the add-on's service accounts their IAM roles.
	associations awseks.AddonPodIdentityAssociationArray
	// dependsOn must exist before the add-on can turn ACTIVE; an add-on
	// that waits for the NodePools needs a node Karpenter launches.
	dependsOn []pulumi.Resource
}

// addonTimeouts bound an add-on's wait to turn ACTIVE: those whose pods
// need a node Karpenter launches get bounds.FirstNode, the DaemonSets
// bounds.DaemonSetAddon, instead of pulumi-aws's 20 minutes (the default
// create timeout of aws_eks_addon, terraform-provider-aws
// internal/service/eks/addon.go, which pulumi-aws wraps).
func addonTimeouts(needsNodes bool) pulumi.ResourceOption {
	bound := bounds.DaemonSetAddon
	if needsNodes {
		bound = bounds.FirstNode
	}
	return pulumi.Timeouts(&pulumi.CustomTimeouts{Create: bound.String(), Update: bound.String()})
}

func newAddon(ctx *pulumi.Context, name string, args *Args, spec addonSpec, parent pulumi.ResourceOrInvokeOption) (*awseks.Addon, error) {
	version, err := eksaddon.Version(ctx, spec.addon, spec.pinned, args.KubernetesVersion, parent)
	if err != nil {
		return nil, err
	}
	addonArgs := &awseks.AddonArgs{
		ClusterName:              args.CreatedClusterName,
		AddonName:                pulumi.String(spec.addon),
		AddonVersion:             pulumi.String(version),
		ResolveConflictsOnCreate: pulumi.String(eksaddon.ResolveConflicts),
		ResolveConflictsOnUpdate: pulumi.String(eksaddon.ResolveConflicts),
		Tags:                     pulumi.ToStringMap(args.Tags),
	}
	if spec.configuration != "" {
		addonArgs.ConfigurationValues = pulumi.String(spec.configuration)
	}
	if len(spec.associations) > 0 {
		addonArgs.PodIdentityAssociations = spec.associations
	}
	opts := []pulumi.ResourceOption{parent, addonTimeouts(len(spec.dependsOn) > 0)}
	if len(spec.dependsOn) > 0 {
		opts = append(opts, pulumi.DependsOn(spec.dependsOn))
	}
	a, err := awseks.NewAddon(ctx, name+"-"+spec.addon, addonArgs, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating %s add-on: %w", spec.addon, err)
	}
	return a, nil
}

// CoreDNSConfiguration is the CoreDNS add-on's configuration values:
// replicas spread over nodes (required) and zones (preferred), so that one
// node or zone going away leaves DNS up when there are two or more; the
// add-on's own disruption budget (maxUnavailable 1) is on by default. The
// keys are those of the add-on's schema (replicaCount,
// topologySpreadConstraints; a dump of `aws eks describe-addon-configuration
// --addon-name coredns` is in terraform-aws-modules/terraform-aws-eks
// docs/faq.md).
func CoreDNSConfiguration(replicas int) (string, error) {
	selector := map[string]any{"matchLabels": map[string]string{"k8s-app": "kube-dns"}}
	b, err := json.Marshal(map[string]any{
		"replicaCount": replicas,
		"topologySpreadConstraints": []any{
			map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
			map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector},
		},
	})
	if err != nil {
		return "", fmt.Errorf("encoding CoreDNS configuration: %w", err)
	}
	return string(b), nil
}
