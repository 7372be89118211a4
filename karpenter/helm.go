package karpenter

import (
	"fmt"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/helmrelease"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ChartRepository holds the karpenter and karpenter-crd charts. They are
// pulled anonymously: logging in with a fresh ECR token on every run would
// change the release's inputs and make every `pulumi up` an upgrade.
const ChartRepository = "oci://public.ecr.aws/karpenter"

// ControllerReplicas run in different zones; the PDB keeps one up.
const ControllerReplicas = 2

// KubernetesVersionAnnotation on the controller's pods carries the
// cluster's minor: a new minor changes the pod template, so the Deployment
// replaces its pods. Fargate runs a pod on a kubelet of the control plane's
// version when the pod starts and keeps it until the pod is deleted
// (https://docs.aws.amazon.com/eks/latest/userguide/fargate-pod-patching.html).
const KubernetesVersionAnnotation = "nodeless-eks/kubernetes-version"

// ValuesInput is what the controller's Helm values are made of.
type ValuesInput struct {
	ClusterName, ClusterEndpoint, InterruptionQueue, ControllerRoleArn string
	// Region is the cluster's, given to the controller as AWS_REGION.
	Region string
	// KubernetesVersion is the cluster's "1.NN", set on the pods.
	KubernetesVersion string
	// Resources are requests and limits both (Guaranteed QoS), sized to
	// fill a Fargate size (see ControllerResources.Validate).
	Resources ControllerResources
	// NodeRepair turns on the NodeRepair feature gate (alpha since
	// Karpenter 1.1, off by default in the chart's settings.featureGates;
	// from 1.15 a disruption method that rides the pools' budgets).
	NodeRepair bool
}

// ControllerValues are the karpenter chart's values.
func ControllerValues(in ValuesInput) map[string]any {
	resources := map[string]any{"cpu": in.Resources.CPU, "memory": in.Resources.Memory}
	return map[string]any{
		// CoreDNS runs on Karpenter's nodes, so the controller resolves
		// AWS endpoints through the VPC resolver instead.
		"dnsPolicy": "Default",
		"serviceAccount": map[string]any{
			"name":        ServiceAccount,
			"annotations": map[string]any{"eks.amazonaws.com/role-arn": in.ControllerRoleArn},
		},
		"settings": map[string]any{
			"clusterName":       in.ClusterName,
			"clusterEndpoint":   in.ClusterEndpoint,
			"interruptionQueue": in.InterruptionQueue,
			// With VPC CNI custom networking the primary ENI holds no pod
			// addresses; Karpenter must not count it when sizing max pods.
			"reservedENIs": "1",
			// Replace nodes whose kubelet is not Ready for 30 minutes, or
			// whose node monitoring agent reports a failed condition
			// (RepairPolicies in pkg/cloudprovider of the pinned module).
			"featureGates": map[string]any{"nodeRepair": in.NodeRepair},
		},
		"podAnnotations":      map[string]any{KubernetesVersionAnnotation: in.KubernetesVersion},
		"replicas":            ControllerReplicas,
		"podDisruptionBudget": map[string]any{"name": "karpenter", "maxUnavailable": 1},
		"topologySpreadConstraints": []any{map[string]any{
			"maxSkew":           1,
			"topologyKey":       "topology.kubernetes.io/zone",
			"whenUnsatisfiable": "DoNotSchedule",
		}},
		"controller": map[string]any{
			"resources": map[string]any{"requests": resources, "limits": resources},
			// The controller asks IMDS for its region when the AWS SDK has
			// none (pkg/operator/operator.go, NewOperator, at the pinned
			// module), and Fargate has no IMDS (karpenter-provider-aws
			// #5677): the region is given, not left to a webhook's defaults.
			"env": []any{map[string]any{"name": "AWS_REGION", "value": in.Region}},
		},
	}
}

// releaseInputs are the outputs of the other children the releases use.
type releaseInputs struct {
	controllerRoleArn, queueName pulumi.StringOutput
	// prerequisites must exist before the controller's pods start.
	prerequisites []pulumi.Resource
	// fargateReady, when set, holds the controller's release back until
	// pods may be scheduled on a new Fargate profile.
	fargateReady pulumi.StringInput
}

// NewCRDRelease registers the karpenter-crd release of chart at version:
// ChartRepository + "/karpenter-crd" in the program; the Kubernetes engine
// tier (provider/kube_engine_test.go) gives the chart's directory in the
// karpenter-provider-aws module, and no version.
func NewCRDRelease(ctx *pulumi.Context, name, chart, version string, opts ...pulumi.ResourceOption) (*helmrelease.Release, error) {
	args := &helmrelease.ReleaseArgs{
		Name:            pulumi.String("karpenter-crd"),
		Chart:           pulumi.String(chart),
		Namespace:       pulumi.String(Namespace),
		CreateNamespace: pulumi.Bool(true),
		// Helm's timeout bounds install, upgrade and uninstall alike;
		// pulumi-kubernetes reads no custom timeout for a release
		// (provider/pkg/provider/helm_release.go).
		Timeout: pulumi.Int(bounds.Seconds(bounds.KarpenterCRDs)),
	}
	if version != "" {
		args.Version = pulumi.String(version)
	}
	release, err := helmrelease.New(ctx, name, args, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating karpenter-crd release: %w", err)
	}
	return release, nil
}

// newReleases installs karpenter-crd, then karpenter with skipCrds.
func newReleases(ctx *pulumi.Context, name string, args *Args, in releaseInputs,
	parent pulumi.ResourceOption) (crds, controller *helmrelease.Release, err error) {
	provider := pulumi.Provider(args.Provider)

	// CRDs are API objects: they need the API server, not a node, so this
	// release does not wait for the Fargate profile.
	crds, err = NewCRDRelease(ctx, name+"-crd", ChartRepository+"/karpenter-crd", args.ChartVersion, parent, provider)
	if err != nil {
		return nil, nil, err
	}

	values := pulumi.All(args.ClusterEndpoint, in.controllerRoleArn, in.queueName).ApplyT(
		func(v []any) map[string]any {
			return ControllerValues(ValuesInput{
				ClusterName:       args.ClusterName,
				KubernetesVersion: args.KubernetesVersion,
				Region:            args.Region,
				ClusterEndpoint:   v[0].(string),
				ControllerRoleArn: v[1].(string),
				InterruptionQueue: v[2].(string),
				Resources:         args.ControllerResources,
				NodeRepair:        args.NodeRepair,
			})
		}).(pulumi.MapOutput)
	namespace := pulumi.StringInput(pulumi.String(Namespace))
	if in.fargateReady != nil {
		// The same namespace, once the profile has settled: a release is
		// registered when its inputs resolve.
		namespace = in.fargateReady.ToStringOutput().ApplyT(func(string) string { return Namespace }).(pulumi.StringOutput)
	}
	release, err := helmrelease.New(ctx, name+"-controller", &helmrelease.ReleaseArgs{
		// The release name is the chart's fullname, hence the service
		// account name that the controller role trusts.
		Name:            pulumi.String("karpenter"),
		Chart:           pulumi.String(ChartRepository + "/karpenter"),
		Version:         pulumi.String(args.ChartVersion),
		Namespace:       namespace,
		CreateNamespace: pulumi.Bool(true),
		SkipCrds:        pulumi.Bool(true),
		Values:          values,
		Timeout:         pulumi.Int(bounds.Seconds(bounds.KarpenterController)),
	},
		parent, provider,
		// The CRDs must be served before the controller watches them; the
		// other prerequisites are the Fargate profile and IAM permissions.
		pulumi.DependsOn(append([]pulumi.Resource{crds}, in.prerequisites...)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("creating karpenter release: %w", err)
	}
	return crds, release, nil
}
