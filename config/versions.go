package config

import (
	"regexp"
	"strings"

	"nodeless-eks/cluster"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"
)

var (
	k8sVersionRe = regexp.MustCompile(`^1\.(\d{1,2})$`)
	semverRe     = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	addonVerRe   = regexp.MustCompile(`^v\d+\.\d+\.\d+-eksbuild\.\d+$`)
)

// checkKubernetesVersion holds the minor to the range of the stack's
// Karpenter and to the EKS calendar this program knows, and the AMI pins
// to releases that ship it.
func (c *Config) checkKubernetesVersion(p *problems) {
	minor, minorErr := minor(c.KubernetesVersion)
	// The stack's Karpenter's range: 1.15's, or, for the LTS release and
	// the older ones that deploy unvalidated, 1.14's. A malformed
	// karpenterVersion is refused on its own (checkKarpenterVersion).
	karpenter, newest, held := c.KarpenterVersion, versions.MaxKubernetesMinor, ""
	if !semverRe.MatchString(c.KarpenterVersion) {
		karpenter = versions.Karpenter
	} else if versions.KarpenterMinor(c.KarpenterVersion) < versions.KarpenterMinor(versions.Karpenter) {
		newest, held = versions.LTSMaxKubernetesMinor, " (1.14's range, which older versions are held to)"
	}
	switch {
	case minorErr != nil || !k8sVersionRe.MatchString(c.KubernetesVersion):
		p.add("kubernetesVersion %q: want \"1.NN\", e.g. %q", c.KubernetesVersion, defaultKubernetesVersion)
	case minor > newest && minor <= versions.MaxKubernetesMinor:
		// A controller outside its range refuses to start, and with no
		// node group nothing else launches a node.
		p.add("kubernetesVersion %q: karpenterVersion %q supports 1.%d-1.%d%s; Karpenter %s supports up to 1.%d: "+
			"move karpenterVersion first, in an `up` of its own (docs/upgrades.md, \"Karpenter\")",
			c.KubernetesVersion, karpenter, versions.MinKubernetesMinor, newest, held, versions.Karpenter, versions.MaxKubernetesMinor)
	case minor > newest || minor < versions.MinKubernetesMinor:
		p.add("kubernetesVersion %q: karpenterVersion %q supports 1.%d-1.%d%s",
			c.KubernetesVersion, karpenter, versions.MinKubernetesMinor, newest, held)
	default:
		if _, ok := versions.Kubernetes(minor); !ok {
			p.add("kubernetesVersion %q: not in the EKS support calendar this program knows (1.%d-1.%d, versions/kubernetes.go): "+
				"EKS ended its support before that, or has not released it, or its dates could not be cited yet",
				c.KubernetesVersion, versions.EKSCalendar[0].Minor, versions.EKSCalendar[len(versions.EKSCalendar)-1].Minor)
		} else {
			p.addErr(spec.CheckAMIPins(c.NodeClasses, minor))
		}
	}
}

func (c *Config) checkSupportType(p *problems) {
	switch {
	case c.SupportType == "" && c.Production:
		p.add("supportType: production stacks choose the cluster's upgrade policy: %q (EKS upgrades the control plane to the "+
			"next minor when standard support ends; $%.2f an hour) or %q (the cluster keeps its minor for up to 12 more months "+
			"at $%.2f an hour, six times the price)", cluster.SupportStandard, versions.StandardSupportUSDPerHour,
			cluster.SupportExtended, versions.ExtendedSupportUSDPerHour)
	case c.SupportType != "" && c.SupportType != cluster.SupportStandard && c.SupportType != cluster.SupportExtended:
		p.add("supportType %q: want %q or %q", c.SupportType, cluster.SupportStandard, cluster.SupportExtended)
	}
}

func (c *Config) checkKarpenterVersion(p *problems) {
	if !semverRe.MatchString(c.KarpenterVersion) {
		p.add("karpenterVersion %q: want a chart version such as %q", c.KarpenterVersion, versions.Karpenter)
	} else if newerMinor(c.KarpenterVersion, versions.Karpenter) {
		p.add("karpenterVersion %q: newer than %s, whose controller policy and CRDs this program is validated against; "+
			"a newer controller may need permissions the policy lacks. Upgrade the program first (docs/upgrades.md, \"Karpenter\")",
			c.KarpenterVersion, versions.Karpenter)
	}
}

func (c *Config) checkAddonVersions(p *problems) {
	for _, a := range []struct{ key, version string }{
		{"vpcCni", c.AddonVersions.VpcCni}, {"kubeProxy", c.AddonVersions.KubeProxy},
		{"coredns", c.AddonVersions.CoreDNS}, {"podIdentityAgent", c.AddonVersions.PodIdentityAgent},
		{"nodeMonitoringAgent", c.AddonVersions.NodeMonitoringAgent}, {"ebsCsiDriver", c.AddonVersions.EBSCSIDriver},
		{"metricsServer", c.AddonVersions.MetricsServer},
	} {
		if a.version != "" && !addonVerRe.MatchString(a.version) {
			p.add("addonVersions.%s %q: want an EKS add-on version such as \"v1.20.4-eksbuild.1\", or leave it unset for the EKS default", a.key, a.version)
		}
	}
}

// minLoadBalancerControllerVersion is the oldest aws-load-balancer-controller
// chart the program's values work with: serviceMutatorWebhookConfig's
// namespaceSelectors first appears in the chart's values.yaml and
// templates/webhook.yaml at v3.2.0 (absent at v3.0.0 and v3.1.0).
const minLoadBalancerControllerVersion = "3.2.0"

// checkChartVersions: the load balancer controller's and Argo CD's charts.
func (c *Config) checkChartVersions(p *problems) {
	if !semverRe.MatchString(c.LoadBalancerControllerVersion) {
		p.add("loadBalancerControllerVersion %q: want a chart version such as %q", c.LoadBalancerControllerVersion, defaultLoadBalancerControllerVersion)
	} else if newerMinor(minLoadBalancerControllerVersion, c.LoadBalancerControllerVersion) {
		p.add("loadBalancerControllerVersion %q: want chart %s or later (e.g. %q): from 3.0.0 the chart's version is the controller's, "+
			"whose CRDs of tag v<version> the program applies, and the program scopes the controller's Service webhook with "+
			"serviceMutatorWebhookConfig.namespaceSelectors, which the chart has from 3.2.0; with an older chart the webhook would "+
			"refuse every Service created while the controller's pods are not serving",
			c.LoadBalancerControllerVersion, minLoadBalancerControllerVersion, defaultLoadBalancerControllerVersion)
	}
	if !semverRe.MatchString(c.ArgoCDVersion) {
		p.add("argocdVersion %q: want a chart version such as %q", c.ArgoCDVersion, defaultArgoCDVersion)
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
