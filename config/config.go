// Package config is the stack's configuration: the typed Config that
// main.go hands out field by field (components never read config), the
// table of keys it is loaded from, the checks by topic that refuse a value
// AWS or Kubernetes would refuse, and the preflight that reads the account
// before anything is registered. Pulumi.yaml declares the same keys and
// defaults; the tests hold the two together.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"nodeless-eks/cluster"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/iamopts"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumiconfig "github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Defaults for optional keys; Pulumi.yaml declares the same values.
const (
	defaultCoreDNSReplicas = 2
	// The aws-load-balancer-controller chart; from 3.0.0 its version
	// equals the controller's (3.5.0 runs v3.5.0).
	defaultLoadBalancerControllerVersion = "3.5.0"
	// The argo-cd chart 10.1.1 runs Argo CD v3.4.4, a maintained minor
	// (Argo CD supports its three newest minors).
	defaultArgoCDVersion    = "10.1.1"
	defaultLogRetentionDays = 90
	// The primary CIDR of a VPC the stack makes: 65,536 addresses, of which
	// the nodes, Fargate pods and load balancers use few (pods take theirs
	// from cluster.PodCidrBlock).
	defaultVpcCidrBlock = "10.0.0.0/16"
)

// defaultKubernetesVersion is the newest minor EKS and Karpenter support.
var defaultKubernetesVersion = fmt.Sprintf("1.%d", versions.DefaultKubernetesMinor)

var (
	defaultPublicAccessCidrs = []string{"0.0.0.0/0"}
	// A security review asks first for API calls, audit and who logged in.
	defaultClusterLogTypes = []string{"api", "audit", "authenticator"}
)

// Config is the typed stack configuration.
type Config struct {
	// ClusterName is the EKS cluster's physical name, and the start of
	// every AWS name the stack creates.
	ClusterName string
	// KubernetesVersion is "1.NN", within Karpenter's supported range.
	KubernetesVersion string
	// Region is aws:region; the vpc-cni ENIConfigs name it.
	Region string
	// VpcName is the Name tag of an existing VPC; "" makes one.
	VpcName string
	// PrivateSubnetNamePattern matches the Name tags of the private subnets
	// that hold nodes, Fargate pods and the control-plane ENIs (with
	// VpcName only).
	PrivateSubnetNamePattern string
	// PodSubnetNamePattern matches the Name tags of the pod subnets
	// (secondary CIDR), one per availability zone (with VpcName only).
	PodSubnetNamePattern string
	// NatGateways is the NAT layout of the VPC the stack makes:
	// cluster.NatSingle, or cluster.NatPerAz. Default single on
	// non-production stacks, perAz on production ones.
	NatGateways string
	// VpcCidrBlock is the primary CIDR of the VPC the stack makes.
	// Default defaultVpcCidrBlock.
	VpcCidrBlock string
	// ClusterExists is set by the preflight, not by a key: EKS already runs
	// the cluster (an update, not the first `pulumi up`).
	ClusterExists bool
	// SpotRole is set by the preflight, not by a key: the account's EC2
	// Spot service-linked role, when a pool allows spot; nil otherwise.
	SpotRole *karpenter.SpotRole
	// VpcFlowLogs logs the traffic of a production stack's own VPC to
	// CloudWatch Logs. Default true; other stacks log none.
	VpcFlowLogs bool
	// VpcS3Endpoint gives a VPC the stack makes an S3 gateway endpoint.
	// Default true.
	VpcS3Endpoint bool
	// VpcEmptyDefaultSecurityGroup holds a VPC the stack makes' default
	// security group without rules. Default true.
	VpcEmptyDefaultSecurityGroup bool
	// OwnRouteTables are set by the preflight, not by a key: the route
	// tables of the VPC an earlier `pulumi up` made, by Name tag.
	OwnRouteTables map[string]cluster.RouteTable
	// Zones are set by the preflight, not by a key, when the stack makes
	// its VPC: the region's first zones by name that EKS accepts.
	Zones []string
	// EndpointPublicAccess enables the public API endpoint. Default true.
	EndpointPublicAccess bool
	// EndpointPrivateAccess enables the private API endpoint. Default true.
	EndpointPrivateAccess bool
	// PublicAccessCidrs may reach the public endpoint. Default 0.0.0.0/0.
	PublicAccessCidrs []string
	// KarpenterVersion is the version of the karpenter and karpenter-crd
	// charts. Default versions.Karpenter.
	KarpenterVersion string
	// AddonVersions pins EKS add-on versions; empty means the EKS default
	// for KubernetesVersion.
	AddonVersions AddonVersions
	// Tags go on every AWS resource that supports them.
	Tags map[string]string
	// NodePools by name, defaults applied. Default {"general": spec.DefaultPool()}.
	NodePools map[string]spec.Pool
	// NodeClasses by name, defaults applied. Default {"default": spec.DefaultNodeClass()}.
	NodeClasses map[string]spec.NodeClass
	// Production requires pinned versions (Bottlerocket AMI), a chosen
	// SupportType and at least two CoreDNS replicas. Default false.
	Production bool
	// SupportType is the cluster's upgrade policy, cluster.SupportStandard
	// or cluster.SupportExtended. Default STANDARD on non-production
	// stacks; production stacks must choose.
	SupportType string
	// AllowExtendedSupport accepts, on a production stack, a minor past
	// the end of its standard support (billed six times as much).
	AllowExtendedSupport bool
	// CoreDNSReplicas is the CoreDNS replica count. Default 2.
	CoreDNSReplicas int
	// LoadBalancerControllerVersion is the aws-load-balancer-controller
	// chart version.
	LoadBalancerControllerVersion string
	// ArgoCD installs ArgoCD. Default false.
	ArgoCD bool
	// ArgoCDVersion is the argo-cd chart version.
	ArgoCDVersion string

	// AccessEntries grant IAM principals access to the cluster, by entry
	// name. Default none: only the creator is admin.
	AccessEntries map[string]cluster.AccessEntry
	// ClusterLogTypes are sent to CloudWatch. Default api, audit, authenticator.
	ClusterLogTypes []string
	// LogRetentionDays is the control-plane log retention. Default 90.
	LogRetentionDays int
	// KmsKeyArn encrypts Secrets with an existing key; "" creates one.
	KmsKeyArn string
	// AllowPublicEndpointFromInternet accepts, on a production stack, a
	// public endpoint open to 0.0.0.0/0. Default false.
	AllowPublicEndpointFromInternet bool
	// IAM is the path and permissions boundary of every role and policy.
	IAM iamopts.Options
	// KeepPulumiEKSServiceRole is set by the preflight, not by a key: the
	// running cluster was created by an earlier version of the program with
	// pulumi-eks's service role, which it keeps (EKS cannot change a
	// cluster's role). Every cluster created now has the program's own.
	KeepPulumiEKSServiceRole bool
	// MetricsServer installs the metrics-server add-on. Default true.
	MetricsServer bool
	// NodeRepair lets Karpenter replace unhealthy nodes and installs the
	// node monitoring agent. Default true.
	NodeRepair bool
	// ControllerResources size each Karpenter controller replica on
	// Fargate. Default karpenter.SmallController, or
	// karpenter.ProductionController on production stacks.
	ControllerResources karpenter.ControllerResources

	// Warnings are what `pulumi preview` and `up` print about a valid
	// configuration that will cost more or change soon.
	Warnings []string
}

// AddonVersions pins EKS add-on versions (e.g. "v1.20.4-eksbuild.1").
type AddonVersions struct {
	VpcCni              string `json:"vpcCni,omitempty" pulumi:"vpcCni,optional"`
	KubeProxy           string `json:"kubeProxy,omitempty" pulumi:"kubeProxy,optional"`
	CoreDNS             string `json:"coredns,omitempty" pulumi:"coredns,optional"`
	PodIdentityAgent    string `json:"podIdentityAgent,omitempty" pulumi:"podIdentityAgent,optional"`
	NodeMonitoringAgent string `json:"nodeMonitoringAgent,omitempty" pulumi:"nodeMonitoringAgent,optional"`
	EBSCSIDriver        string `json:"ebsCsiDriver,omitempty" pulumi:"ebsCsiDriver,optional"`
	MetricsServer       string `json:"metricsServer,omitempty" pulumi:"metricsServer,optional"`
}

// Load reads the stack configuration, applies defaults, validates it and
// reads the account (preflight) with the EKS support calendar read on
// today. Every problem is reported at once, before any resource is
// registered.
func Load(ctx *pulumi.Context, today time.Time) (*Config, error) {
	project := pulumiconfig.New(ctx, "")
	return loadWith(ctx, today, "invalid stack configuration", func(name string) string {
		if strings.Contains(name, ":") {
			return pulumiconfig.Get(ctx, name)
		}
		return project.Get(name)
	})
}

// FromInputs is Load for the inputs of a component (provider/'s Cluster):
// values holds each input that is set, by the key's name, as its stack
// config value would read (a string as is; a bool, a number, a list or an
// object as JSON). Keys of another namespace (aws:region) come from the
// stack's configuration, as the default providers' settings do. The
// checks and their messages are Load's; what refers to them is named.
func FromInputs(ctx *pulumi.Context, today time.Time, what string, values map[string]string) (*Config, error) {
	for name := range values {
		if !isKey(name) {
			return nil, fmt.Errorf("%s:\n%s: not an input (want one of %s)", what, name, strings.Join(InputNames(), ", "))
		}
	}
	return loadWith(ctx, today, what, func(name string) string {
		if strings.Contains(name, ":") {
			return pulumiconfig.Get(ctx, name)
		}
		return values[name]
	})
}

// InputNames are the keys of the project's namespace, in their order:
// the inputs of the component, which are the stack config keys.
func InputNames() []string {
	var names []string
	for _, k := range (&Config{}).keys(nil, nil) {
		if !strings.Contains(k.name, ":") {
			names = append(names, k.name)
		}
	}
	return names
}

func isKey(name string) bool { return slices.Contains(InputNames(), name) }

// loadWith is Load with each key's raw value from get ("" for unset); what
// heads the error.
func loadWith(ctx *pulumi.Context, today time.Time, what string, get func(name string) string) (*Config, error) {
	c := defaults(ctx.Project(), ctx.Stack())
	var pools map[string]spec.Pool
	var classes map[string]spec.NodeClass
	errs := readKeys(get, c.keys(&pools, &classes))
	c.ControllerResources = controllerResourcesOr(c.ControllerResources, c.Production)
	c.NodePools, c.NodeClasses = spec.Resolve(pools, classes)
	if err := c.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s:\n%w", what, err)
	}
	if c.SupportType == "" && !c.Production {
		c.SupportType = cluster.SupportStandard
	}
	if c.VpcName == "" {
		c.NatGateways = cmp.Or(c.NatGateways, map[bool]string{false: cluster.NatSingle, true: cluster.NatPerAz}[c.Production])
		c.VpcCidrBlock = cmp.Or(c.VpcCidrBlock, defaultVpcCidrBlock)
	}
	if err := preflight(ctx, c, today); err != nil {
		return nil, fmt.Errorf("%s:\n%w", what, err)
	}
	return c, nil
}

// CleanupNodeTimeout bounds how long the destroy cleanup waits for the
// nodes of the pools the stack did not create: their terminationGracePeriod
// is unknown to the program, so the stack's own longest stands for it, plus
// bounds.NodeTermination; halfway through, the cleanup deletes the pods
// whose drain is still blocked, so the bound holds either way.
func (c *Config) CleanupNodeTimeout() time.Duration {
	longest := spec.Pool{}.Drain() // the default's
	for _, p := range c.NodePools {
		longest = max(longest, p.Drain())
	}
	return longest + bounds.NodeTermination
}

// controllerResourcesOr fills the unset fields from the stack class's size:
// small on dev and test stacks, upstream's recommendation on production.
func controllerResourcesOr(r karpenter.ControllerResources, production bool) karpenter.ControllerResources {
	def := karpenter.SmallController
	if production {
		def = karpenter.ProductionController
	}
	if r.CPU == "" && r.Memory == "" {
		return def
	}
	return r
}
