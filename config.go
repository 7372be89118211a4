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
	"time"

	"nodeless-eks/cluster"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/iamopts"
	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Defaults for optional keys; Pulumi.yaml declares the same values.
const (
	defaultCoreDNSReplicas = 2
	// The aws-load-balancer-controller chart; from 3.0.0 its version
	// equals the controller's (3.5.0 runs v3.5.0).
	defaultLoadBalancerControllerVersion = "3.5.0"
	// The argo-cd chart 10.1.1 runs Argo CD v3.4.4, a maintained minor
	// (Argo CD supports its three newest minors).
	defaultArgoCDVersion = "10.1.1"
)

// defaultKubernetesVersion is the newest minor EKS and Karpenter support.
var defaultKubernetesVersion = fmt.Sprintf("1.%d", versions.DefaultKubernetesMinor)

var (
	defaultPublicAccessCidrs = []string{"0.0.0.0/0"}
	// A security review asks first for API calls, audit and who logged in.
	defaultClusterLogTypes = []string{"api", "audit", "authenticator"}
)

const defaultLogRetentionDays = 90

// Config is the typed stack configuration. Components never read config;
// main.go hands them the fields they need.
type Config struct {
	// ClusterName is the EKS cluster's physical name, and the start of
	// every AWS name the stack creates.
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
	VpcCni              string `json:"vpcCni,omitempty"`
	KubeProxy           string `json:"kubeProxy,omitempty"`
	CoreDNS             string `json:"coredns,omitempty"`
	PodIdentityAgent    string `json:"podIdentityAgent,omitempty"`
	NodeMonitoringAgent string `json:"nodeMonitoringAgent,omitempty"`
	EBSCSIDriver        string `json:"ebsCsiDriver,omitempty"`
	MetricsServer       string `json:"metricsServer,omitempty"`
}

// loadConfig reads the stack configuration, applies defaults and validates
// it. Every problem is reported at once, before any resource is registered.
func loadConfig(ctx *pulumi.Context) (*Config, error) {
	cfg := config.New(ctx, "")
	c := &Config{
		ClusterName:                   stringOr(cfg.Get("clusterName"), names.DefaultClusterName(ctx.Project(), ctx.Stack())),
		KubernetesVersion:             stringOr(cfg.Get("kubernetesVersion"), defaultKubernetesVersion),
		Region:                        config.Get(ctx, "aws:region"),
		VpcName:                       cfg.Get("vpcName"),
		PrivateSubnetNamePattern:      cfg.Get("privateSubnetNamePattern"),
		PodSubnetNamePattern:          cfg.Get("podSubnetNamePattern"),
		KarpenterVersion:              stringOr(cfg.Get("karpenterVersion"), versions.Karpenter),
		LoadBalancerControllerVersion: stringOr(cfg.Get("loadBalancerControllerVersion"), defaultLoadBalancerControllerVersion),
		ArgoCDVersion:                 stringOr(cfg.Get("argocdVersion"), defaultArgoCDVersion),
		// Copies: decoding into a shared default would overwrite it.
		PublicAccessCidrs: append([]string(nil), defaultPublicAccessCidrs...),
		ClusterLogTypes:   append([]string(nil), defaultClusterLogTypes...),
		Tags:              map[string]string{},
		AccessEntries:     map[string]cluster.AccessEntry{},
		KmsKeyArn:         cfg.Get("kmsKeyArn"),
		SupportType:       cfg.Get("supportType"),
		IAM: iamopts.Options{
			Path:                stringOr(cfg.Get("iamPath"), "/"),
			PermissionsBoundary: cfg.Get("iamPermissionsBoundary"),
		},
	}
	r := reader{cfg: cfg}
	c.EndpointPublicAccess = r.bool("endpointPublicAccess", true)
	c.EndpointPrivateAccess = r.bool("endpointPrivateAccess", true)
	r.json("publicAccessCidrs", "a list of CIDR strings", &c.PublicAccessCidrs)
	r.json("addonVersions", "an object with the keys vpcCni, kubeProxy, coredns, podIdentityAgent, nodeMonitoringAgent, ebsCsiDriver, metricsServer", &c.AddonVersions)
	r.json("tags", "an object of string values", &c.Tags)
	c.Production = r.bool("production", false)
	c.AllowExtendedSupport = r.bool("allowExtendedSupport", false)
	c.ArgoCD = r.bool("argocd", false)
	c.CoreDNSReplicas = r.int("corednsReplicas", defaultCoreDNSReplicas, "a whole number")
	r.json("accessEntries", "an object of entries by name, each {principalArn, policy, namespaces}", &c.AccessEntries)
	r.json("clusterLogTypes", "a list of log types", &c.ClusterLogTypes)
	c.LogRetentionDays = r.int("logRetentionDays", defaultLogRetentionDays, "a whole number of days")
	c.MetricsServer = r.bool("metricsServer", true)
	c.NodeRepair = r.bool("nodeRepair", true)
	c.AllowPublicEndpointFromInternet = r.bool("allowPublicEndpointFromInternet", false)
	r.json("controllerResources", `an object {"cpu": "250m", "memory": "768Mi"}`, &c.ControllerResources)
	c.ControllerResources = controllerResourcesOr(c.ControllerResources, c.Production)
	var pools map[string]spec.Pool
	r.json("nodePools", "an object of pools by name (see Pulumi.yaml)", &pools)
	var classes map[string]spec.NodeClass
	r.json("nodeClasses", "an object of node classes by name (see Pulumi.yaml)", &classes)
	errs := r.errs
	c.NodePools, c.NodeClasses = spec.Resolve(pools, classes)
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	if c.SupportType == "" && !c.Production {
		c.SupportType = cluster.SupportStandard
	}
	if err := preflight(ctx, c, today()); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return c, nil
}

// today is the day the support calendar is read against; tests fix it.
var today = func() time.Time { return time.Now().UTC() }

var (
	// EKS: letters, digits, '-' and '_', starting with a letter or digit.
	clusterNameRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`)
	k8sVersionRe  = regexp.MustCompile(`^1\.(\d{1,2})$`)
	regionRe      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)
	semverRe      = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	addonVerRe    = regexp.MustCompile(`^v\d+\.\d+\.\d+-eksbuild\.\d+$`)
	// IAM principals EKS accepts in an access entry: roles (with or
	// without a path) and users, not STS sessions.
	principalArnRe = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]+$`)
	policyArnRe    = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::(\d{12}|aws):policy/[\w+=,.@/-]+$`)
	kmsKeyArnRe    = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]+$`)
	iamPathRe      = regexp.MustCompile(`^/([\x21-\x7e]+/)?$`)
	// Kubernetes namespace names (RFC 1123 labels).
	namespaceRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	entryNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
)

// documentationRanges are the IPv4 blocks reserved for examples (RFC 5737):
// no deployer connects from them.
var documentationRanges = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// Control-plane log types EKS knows, and the retentions CloudWatch accepts.
var (
	clusterLogTypes  = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}
	logRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

// Validate checks every field and joins all problems into one error.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if !clusterNameRe.MatchString(c.ClusterName) {
		bad("clusterName %q: want 1-%d letters, digits, '-' or '_', starting with a letter or digit", c.ClusterName, names.MaxClusterNameLength)
	} else if len(c.ClusterName) > names.MaxClusterNameLength {
		bad("clusterName %q: %d characters, at most %d: every AWS name the stack creates starts with it, and IAM roles and "+
			"EventBridge rules allow 64 characters (\"%s-karpenter-state-change\" plus pulumi's 8-character suffix would be %d)",
			c.ClusterName, len(c.ClusterName), names.MaxClusterNameLength, c.ClusterName,
			len(names.Autoname(c.ClusterName+"-karpenter-state-change")))
	}
	minor, minorErr := minor(c.KubernetesVersion)
	switch {
	case minorErr != nil || !k8sVersionRe.MatchString(c.KubernetesVersion):
		bad("kubernetesVersion %q: want \"1.NN\", e.g. %q", c.KubernetesVersion, defaultKubernetesVersion)
	case minor < versions.MinKubernetesMinor || minor > versions.MaxKubernetesMinor:
		bad("kubernetesVersion %q: karpenter %s supports 1.%d-1.%d",
			c.KubernetesVersion, versions.Karpenter, versions.MinKubernetesMinor, versions.MaxKubernetesMinor)
	default:
		if _, ok := versions.Kubernetes(minor); !ok {
			bad("kubernetesVersion %q: not in the EKS support calendar this program knows (1.%d-1.%d, versions/kubernetes.go): "+
				"EKS ended its support before that, or has not released it", c.KubernetesVersion,
				versions.EKSCalendar[0].Minor, versions.EKSCalendar[len(versions.EKSCalendar)-1].Minor)
		} else if err := spec.CheckAMIPins(c.NodeClasses, minor); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case c.SupportType == "" && c.Production:
		bad("supportType: production stacks choose the cluster's upgrade policy: %q (EKS upgrades the control plane to the "+
			"next minor when standard support ends; $%.2f an hour) or %q (the cluster keeps its minor for up to 12 more months "+
			"at $%.2f an hour, six times the price)", cluster.SupportStandard, versions.StandardSupportUSDPerHour,
			cluster.SupportExtended, versions.ExtendedSupportUSDPerHour)
	case c.SupportType != "" && c.SupportType != cluster.SupportStandard && c.SupportType != cluster.SupportExtended:
		bad("supportType %q: want %q or %q", c.SupportType, cluster.SupportStandard, cluster.SupportExtended)
	}
	if !semverRe.MatchString(c.KarpenterVersion) {
		bad("karpenterVersion %q: want a chart version such as %q", c.KarpenterVersion, versions.Karpenter)
	} else if newerMinor(c.KarpenterVersion, versions.Karpenter) {
		bad("karpenterVersion %q: newer than %s, whose controller policy and CRDs this program is validated against; "+
			"a newer controller may need permissions the policy lacks. Upgrade the program first (see the README's Upgrades section)",
			c.KarpenterVersion, versions.Karpenter)
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
			bad("publicAccessCidrs[%d] %q: want an IPv4 network in CIDR form, e.g. \"81.2.69.0/24\"", i, cidr)
			continue
		}
		for _, doc := range documentationRanges {
			// A wider block that merely holds one is real address space.
			if p.Bits() >= doc.Bits() && doc.Contains(p.Addr()) {
				bad("publicAccessCidrs[%d] %q: %s is a documentation range (RFC 5737) that no deployer has; "+
					"the program's own Kubernetes provider connects from where `pulumi up` runs, so put that egress range here "+
					"(e.g. the output of `curl -s https://checkip.amazonaws.com` with /32), or leave the key unset on a non-production stack", i, cidr, doc)
			}
		}
	}
	for _, a := range []struct{ key, version string }{
		{"vpcCni", c.AddonVersions.VpcCni}, {"kubeProxy", c.AddonVersions.KubeProxy},
		{"coredns", c.AddonVersions.CoreDNS}, {"podIdentityAgent", c.AddonVersions.PodIdentityAgent},
		{"nodeMonitoringAgent", c.AddonVersions.NodeMonitoringAgent}, {"ebsCsiDriver", c.AddonVersions.EBSCSIDriver},
		{"metricsServer", c.AddonVersions.MetricsServer},
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
	} else if newerMinor("3.0.0", c.LoadBalancerControllerVersion) {
		bad("loadBalancerControllerVersion %q: want chart 3.0.0 or later (e.g. %q), whose version is the controller's: the program "+
			"applies the controller's CRDs from the controller's tag v<version>, and chart %s runs a controller of another number",
			c.LoadBalancerControllerVersion, defaultLoadBalancerControllerVersion, c.LoadBalancerControllerVersion)
	}
	if !semverRe.MatchString(c.ArgoCDVersion) {
		bad("argocdVersion %q: want a chart version such as %q", c.ArgoCDVersion, defaultArgoCDVersion)
	}
	c.validateTeamAndProduction(bad)
	if r := c.ControllerResources; r.CPU == "" || r.Memory == "" {
		bad("controllerResources: set both cpu and memory, or neither for the stack class's size")
	} else if err := r.Validate(); err != nil {
		bad("controllerResources: %v", err)
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

// validateTeamAndProduction checks what a team and a production review
// add: access entries, logging, encryption, IAM options and the guards of
// production stacks.
func (c *Config) validateTeamAndProduction(bad func(string, ...any)) {
	principals := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.AccessEntries)) {
		e := c.AccessEntries[name]
		key := "accessEntries." + name
		if !entryNameRe.MatchString(name) {
			bad("accessEntries %q: want an entry name of 1-40 lower-case letters, digits and '-'", name)
		}
		switch {
		case strings.HasPrefix(e.PrincipalArn, "arn:aws:sts:") || strings.Contains(e.PrincipalArn, ":assumed-role/"):
			bad("%s.principalArn %q: an STS session is not a principal EKS accepts; use the role's ARN, arn:aws:iam::<account>:role/<name>", key, e.PrincipalArn)
		case !principalArnRe.MatchString(e.PrincipalArn):
			bad("%s.principalArn %q: want an IAM role or user ARN such as \"arn:aws:iam::111122223333:role/platform-admins\"", key, e.PrincipalArn)
		case principals[e.PrincipalArn] != "":
			bad("%s.principalArn %q: already granted by accessEntries.%s; EKS allows one entry per principal", key, e.PrincipalArn, principals[e.PrincipalArn])
		default:
			principals[e.PrincipalArn] = name
		}
		if _, ok := cluster.AccessPolicies[e.Policy]; !ok {
			bad("%s.policy %q: want one of %s", key, e.Policy, strings.Join(slices.Sorted(maps.Keys(cluster.AccessPolicies)), ", "))
		}
		if e.Policy == "cluster-admin" && len(e.Namespaces) > 0 {
			bad("%s.namespaces: cluster-admin is cluster-wide; use admin or edit to limit a principal to namespaces", key)
		}
		for i, ns := range e.Namespaces {
			if !namespaceRe.MatchString(ns) {
				bad("%s.namespaces[%d] %q: want a Kubernetes namespace name", key, i, ns)
			}
		}
	}
	for i, t := range c.ClusterLogTypes {
		if !slices.Contains(clusterLogTypes, t) {
			bad("clusterLogTypes[%d] %q: want some of %s", i, t, strings.Join(clusterLogTypes, ", "))
		}
	}
	if !slices.Contains(logRetentionDays, c.LogRetentionDays) {
		bad("logRetentionDays %d: want a retention CloudWatch accepts: %s", c.LogRetentionDays, strings.Trim(fmt.Sprint(logRetentionDays), "[]"))
	}
	if c.KmsKeyArn != "" && !kmsKeyArnRe.MatchString(c.KmsKeyArn) {
		bad("kmsKeyArn %q: want a KMS key ARN such as \"arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab\" (not an alias), or leave it unset to create a key", c.KmsKeyArn)
	} else if c.KmsKeyArn != "" && !strings.Contains(c.KmsKeyArn, ":kms:"+c.Region+":") {
		bad("kmsKeyArn %q: EKS needs a key in the cluster's region %s", c.KmsKeyArn, c.Region)
	}
	if !iamPathRe.MatchString(c.IAM.Path) || len(c.IAM.Path) > 512 {
		bad("iamPath %q: want \"/\" or a path that starts and ends with '/', such as \"/eks/\"", c.IAM.Path)
	}
	if c.IAM.PermissionsBoundary != "" && !policyArnRe.MatchString(c.IAM.PermissionsBoundary) {
		bad("iamPermissionsBoundary %q: want a managed policy ARN such as \"arn:aws:iam::111122223333:policy/boundary\"", c.IAM.PermissionsBoundary)
	}
	if c.Production && c.EndpointPublicAccess && !c.AllowPublicEndpointFromInternet {
		for i, cidr := range c.PublicAccessCidrs {
			if p, err := netip.ParsePrefix(cidr); err == nil && p.Bits() == 0 {
				bad("publicAccessCidrs[%d] %q: a production stack would expose its Kubernetes API to the whole internet; "+
					"set publicAccessCidrs to your own egress ranges (those of the people and runners that run pulumi up), "+
					"or turn endpointPublicAccess off, or set allowPublicEndpointFromInternet: true to accept it", i, cidr)
			}
		}
	}
}

// newerMinor reports whether semantic version a has a greater major.minor
// than b.
func newerMinor(a, b string) bool {
	minorOf := func(v string) string {
		parts := strings.SplitN(v, ".", 3)
		return strings.Join(parts[:min(2, len(parts))], ".")
	}
	order, err := versions.Compare(minorOf(a), minorOf(b))
	return err == nil && order > 0
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

// CleanupNodeTimeout bounds how long the destroy cleanup waits for the
// nodes of the pools the stack did not create: their terminationGracePeriod
// is unknown to the program, so the stack's own longest stands for it, plus
// bounds.NodeTermination; halfway through, the cleanup deletes the pods
// whose drain is still blocked, so the bound holds either way.
func (c *Config) CleanupNodeTimeout() time.Duration {
	longest := time.Hour
	for _, p := range c.NodePools {
		if d, err := time.ParseDuration(p.TerminationGracePeriod); err == nil && d > longest {
			longest = d
		}
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

func stringOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// reader reads the project's keys, each with its default, and keeps one
// error per key that does not parse: every problem is reported at once.
type reader struct {
	cfg  *config.Config
	errs []error
}

func (r *reader) bool(key string, def bool) bool {
	v := r.cfg.Get(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %q: want true or false", key, v))
	}
	return b
}

func (r *reader) int(key string, def int, want string) int {
	v := r.cfg.Get(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s %q: want %s", key, v, want))
	}
	return n
}

// json decodes a JSON value into out, which holds the default, refusing
// unknown fields.
func (r *reader) json(key, want string, out any) {
	if raw := r.cfg.Get(key); raw != "" {
		if err := decodeStrict(raw, out); err != nil {
			r.errs = append(r.errs, fmt.Errorf("%s: want %s: %w", key, want, err))
		}
	}
}
