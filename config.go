package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Defaults for optional keys; Pulumi.yaml declares the same values.
const (
	defaultKubernetesVersion             = "1.34"
	defaultCoreDNSReplicas               = 2
	defaultLoadBalancerControllerVersion = "1.14.0"
	defaultArgoCDVersion                 = "9.1.0"
)

var defaultPublicAccessCidrs = []string{"0.0.0.0/0"}

// Config is the typed stack configuration. Components never read config;
// main.go hands them the fields they need.
type Config struct {
	// ClusterName is the EKS cluster's physical name; Karpenter discovers
	// subnets and security groups by the tag karpenter.sh/discovery=<name>.
	ClusterName string
	// KubernetesVersion is "1.NN", within Karpenter's supported range.
	KubernetesVersion string
	// Region is aws:region; the vpc-cni ENIConfigs name it.
	Region string
	// VpcName is the Name tag of the existing VPC.
	VpcName string
	// PrivateSubnetNamePattern matches the Name tags of the private subnets
	// that hold nodes, Fargate pods and the control-plane ENIs.
	PrivateSubnetNamePattern string
	// PodSubnetNamePattern matches the Name tags of the pod subnets
	// (secondary CIDR), one per availability zone.
	PodSubnetNamePattern string
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
	// Production requires pinned versions (Bottlerocket AMI) and at least
	// two CoreDNS replicas. Default false.
	Production bool
	// CoreDNSReplicas is the CoreDNS replica count. Default 2.
	CoreDNSReplicas int
	// LoadBalancerControllerVersion is the aws-load-balancer-controller
	// chart version.
	LoadBalancerControllerVersion string
	// ArgoCD installs ArgoCD. Default false.
	ArgoCD bool
	// ArgoCDVersion is the argo-cd chart version.
	ArgoCDVersion string
}

// AddonVersions pins EKS add-on versions (e.g. "v1.20.4-eksbuild.1").
type AddonVersions struct {
	VpcCni           string `json:"vpcCni,omitempty"`
	KubeProxy        string `json:"kubeProxy,omitempty"`
	CoreDNS          string `json:"coredns,omitempty"`
	PodIdentityAgent string `json:"podIdentityAgent,omitempty"`
}

// loadConfig reads the stack configuration, applies defaults and validates
// it. Every problem is reported at once, before any resource is registered.
func loadConfig(ctx *pulumi.Context) (*Config, error) {
	cfg := config.New(ctx, "")
	c := &Config{
		ClusterName:                   cfg.Get("clusterName"),
		KubernetesVersion:             stringOr(cfg.Get("kubernetesVersion"), defaultKubernetesVersion),
		Region:                        config.Get(ctx, "aws:region"),
		VpcName:                       cfg.Get("vpcName"),
		PrivateSubnetNamePattern:      cfg.Get("privateSubnetNamePattern"),
		PodSubnetNamePattern:          cfg.Get("podSubnetNamePattern"),
		KarpenterVersion:              stringOr(cfg.Get("karpenterVersion"), versions.Karpenter),
		LoadBalancerControllerVersion: stringOr(cfg.Get("loadBalancerControllerVersion"), defaultLoadBalancerControllerVersion),
		ArgoCDVersion:                 stringOr(cfg.Get("argocdVersion"), defaultArgoCDVersion),
		// A copy: decoding into the shared default would overwrite it.
		PublicAccessCidrs: append([]string(nil), defaultPublicAccessCidrs...),
		Tags:              map[string]string{},
	}
	var errs []error
	var err error
	if c.EndpointPublicAccess, err = boolOr(cfg.Get("endpointPublicAccess"), true); err != nil {
		errs = append(errs, fmt.Errorf("endpointPublicAccess: %w", err))
	}
	if c.EndpointPrivateAccess, err = boolOr(cfg.Get("endpointPrivateAccess"), true); err != nil {
		errs = append(errs, fmt.Errorf("endpointPrivateAccess: %w", err))
	}
	if raw := cfg.Get("publicAccessCidrs"); raw != "" {
		if err := decodeStrict(raw, &c.PublicAccessCidrs); err != nil {
			errs = append(errs, fmt.Errorf("publicAccessCidrs: want a list of CIDR strings: %w", err))
		}
	}
	if raw := cfg.Get("addonVersions"); raw != "" {
		if err := decodeStrict(raw, &c.AddonVersions); err != nil {
			errs = append(errs, fmt.Errorf("addonVersions: want an object with the keys vpcCni, kubeProxy, coredns, podIdentityAgent: %w", err))
		}
	}
	if raw := cfg.Get("tags"); raw != "" {
		if err := decodeStrict(raw, &c.Tags); err != nil {
			errs = append(errs, fmt.Errorf("tags: want an object of string values: %w", err))
		}
	}
	if c.Production, err = boolOr(cfg.Get("production"), false); err != nil {
		errs = append(errs, fmt.Errorf("production: %w", err))
	}
	if c.ArgoCD, err = boolOr(cfg.Get("argocd"), false); err != nil {
		errs = append(errs, fmt.Errorf("argocd: %w", err))
	}
	c.CoreDNSReplicas = defaultCoreDNSReplicas
	if raw := cfg.Get("corednsReplicas"); raw != "" {
		if c.CoreDNSReplicas, err = strconv.Atoi(raw); err != nil {
			errs = append(errs, fmt.Errorf("corednsReplicas %q: want a whole number", raw))
		}
	}
	var pools map[string]spec.Pool
	if raw := cfg.Get("nodePools"); raw != "" {
		if err := decodeStrict(raw, &pools); err != nil {
			errs = append(errs, fmt.Errorf("nodePools: want an object of pools by name (see Pulumi.yaml): %w", err))
		}
	}
	var classes map[string]spec.NodeClass
	if raw := cfg.Get("nodeClasses"); raw != "" {
		if err := decodeStrict(raw, &classes); err != nil {
			errs = append(errs, fmt.Errorf("nodeClasses: want an object of node classes by name (see Pulumi.yaml): %w", err))
		}
	}
	c.NodePools, c.NodeClasses = spec.Resolve(pools, classes)
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return c, nil
}

var (
	// EKS: 1–100 characters, starting with a letter or digit.
	clusterNameRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`)
	k8sVersionRe  = regexp.MustCompile(`^1\.(\d{1,2})$`)
	regionRe      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)
	semverRe      = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	addonVerRe    = regexp.MustCompile(`^v\d+\.\d+\.\d+-eksbuild\.\d+$`)
)

// Validate checks every field and joins all problems into one error.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if !clusterNameRe.MatchString(c.ClusterName) {
		bad("clusterName %q: want 1-100 letters, digits, '-' or '_', starting with a letter or digit", c.ClusterName)
	} else if role := karpenter.NodeRoleName(c.ClusterName); len(role) > 64 {
		bad("clusterName %q: at most %d characters, so that the node role name %q fits IAM's 64",
			c.ClusterName, 64-(len(role)-len(c.ClusterName)), role)
	}
	if m := k8sVersionRe.FindStringSubmatch(c.KubernetesVersion); m == nil {
		bad("kubernetesVersion %q: want \"1.NN\", e.g. %q", c.KubernetesVersion, defaultKubernetesVersion)
	} else if minor, _ := strconv.Atoi(m[1]); minor < versions.MinKubernetesMinor || minor > versions.MaxKubernetesMinor {
		bad("kubernetesVersion %q: karpenter %s supports 1.%d-1.%d",
			c.KubernetesVersion, versions.Karpenter, versions.MinKubernetesMinor, versions.MaxKubernetesMinor)
	}
	if !semverRe.MatchString(c.KarpenterVersion) {
		bad("karpenterVersion %q: want a chart version such as %q", c.KarpenterVersion, versions.Karpenter)
	}
	if !regionRe.MatchString(c.Region) {
		bad("aws:region %q: want an AWS region such as \"eu-west-1\"", c.Region)
	}
	if strings.TrimSpace(c.VpcName) == "" {
		bad("vpcName: required, the Name tag of the existing VPC")
	}
	if strings.TrimSpace(c.PrivateSubnetNamePattern) == "" {
		bad("privateSubnetNamePattern: required, a Name-tag pattern such as \"my-vpc-private-*\"")
	}
	if strings.TrimSpace(c.PodSubnetNamePattern) == "" {
		bad("podSubnetNamePattern: required, a Name-tag pattern such as \"my-vpc-podsubnet-*\"")
	}
	if c.PrivateSubnetNamePattern != "" && c.PrivateSubnetNamePattern == c.PodSubnetNamePattern {
		bad("podSubnetNamePattern %q: must differ from privateSubnetNamePattern; pods use their own (secondary CIDR) subnets", c.PodSubnetNamePattern)
	}
	if !c.EndpointPublicAccess && !c.EndpointPrivateAccess {
		bad("endpointPublicAccess and endpointPrivateAccess: at least one must be true")
	}
	if c.EndpointPublicAccess && len(c.PublicAccessCidrs) == 0 {
		bad("publicAccessCidrs: at least one CIDR when endpointPublicAccess is true")
	}
	for i, cidr := range c.PublicAccessCidrs {
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			bad("publicAccessCidrs[%d] %q: want an IPv4 network in CIDR form, e.g. \"203.0.113.0/24\"", i, cidr)
		}
	}
	for _, a := range []struct{ key, version string }{
		{"vpcCni", c.AddonVersions.VpcCni}, {"kubeProxy", c.AddonVersions.KubeProxy},
		{"coredns", c.AddonVersions.CoreDNS}, {"podIdentityAgent", c.AddonVersions.PodIdentityAgent},
	} {
		if a.version != "" && !addonVerRe.MatchString(a.version) {
			bad("addonVersions.%s %q: want an EKS add-on version such as \"v1.20.4-eksbuild.1\", or leave it unset for the EKS default", a.key, a.version)
		}
	}
	switch {
	case c.CoreDNSReplicas < 1 || c.CoreDNSReplicas > 10:
		bad("corednsReplicas %d: want 1-10", c.CoreDNSReplicas)
	case c.Production && c.CoreDNSReplicas < 2:
		bad("corednsReplicas %d: production stacks run at least 2, spread over nodes", c.CoreDNSReplicas)
	}
	if !semverRe.MatchString(c.LoadBalancerControllerVersion) {
		bad("loadBalancerControllerVersion %q: want a chart version such as %q", c.LoadBalancerControllerVersion, defaultLoadBalancerControllerVersion)
	}
	if !semverRe.MatchString(c.ArgoCDVersion) {
		bad("argocdVersion %q: want a chart version such as %q", c.ArgoCDVersion, defaultArgoCDVersion)
	}
	if err := spec.Validate(c.NodePools, c.NodeClasses, c.Production); err != nil {
		errs = append(errs, err)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Tags)) {
		switch {
		case k == "" || len(k) > 128:
			bad("tags key %q: want 1-128 characters", k)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			bad("tags key %q: the aws: prefix is reserved by AWS", k)
		case len(c.Tags[k]) > 256:
			bad("tags[%q]: value longer than 256 characters", k)
		}
	}
	return errors.Join(errs...)
}

// decodeStrict decodes a JSON config value and rejects unknown object keys,
// so a typo in an object value fails instead of silently meaning "default".
func decodeStrict(raw string, out any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the value")
	}
	return nil
}

func stringOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func boolOr(v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q: want true or false", v)
	}
	return b, nil
}
