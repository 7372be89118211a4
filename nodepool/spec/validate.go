package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/versions"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Patterns of the NodePool CRD (karpenter.sh_nodepools.yaml).
var (
	durationOrNeverRe = regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)
	durationRe        = regexp.MustCompile(`^([0-9]+(s|m|h))+$`)
	budgetNodesRe     = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)
	categoryRe        = regexp.MustCompile(`^[a-z]+$`)
	// Karpenter accepts Bottlerocket versions with or without the "v" and
	// uses AL2023's as written, in a parameter name that has the "v".
	aliasRe = regexp.MustCompile(`^(bottlerocket@(latest|v?[0-9]+\.[0-9]+\.[0-9]+)|al2023@(latest|v[0-9]{8}))$`)
)

var (
	operators     = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}
	archs         = []string{"amd64", "arm64"}
	capacityTypes = []string{"spot", "on-demand", "reserved"}
	hypervisors   = []string{"nitro", "xen"}
	taintEffects  = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	policies      = []string{"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"}
	budgetReasons = []string{"Underutilized", "Empty", "Drifted"}
	// Karpenter 1.15 repairs nodes as a disruption method that rides the
	// budgets under the reason Unhealthy (sigs.k8s.io/karpenter v1.15.0
	// pkg/controllers/disruption/repair.go); 1.14's NodePool CRD has no
	// such reason in its enum.
	budgetReasons115 = append(slices.Clone(budgetReasons), "Unhealthy")
	volumeTypes      = []string{"gp3", "gp2", "io1", "io2", "st1", "sc1", "standard"}
	restrictedTags   = []string{"eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass"}
	// Label keys under karpenter.k8s.aws that pools may use (the CRD's list).
	awsWellKnownLabels = []string{
		"karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/capacity-reservation-type",
		"karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-interruptible",
		"karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
		"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor",
		"karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
		"karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size",
		"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer",
		"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-memory",
		"karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
		"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer",
		"karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-memory",
		"karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
		"karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex",
		"karpenter.k8s.aws/placement-group-id", "karpenter.k8s.aws/placement-group-partition",
	}
)

// RestrictedLabel says why a NodePool may not use key as a requirement or
// label, or "" if it may. These are the CEL rules of the NodePool CRD.
func RestrictedLabel(key string) string {
	domain, _, _ := strings.Cut(key, "/")
	switch {
	case key == "karpenter.sh/nodepool":
		return "Karpenter sets it to the pool's name"
	case key == "kubernetes.io/hostname":
		return "it is unique to each node"
	case strings.HasSuffix(domain, "karpenter.sh") && key != "karpenter.sh/capacity-type":
		return "the karpenter.sh domain is reserved"
	case strings.HasSuffix(domain, "karpenter.k8s.aws") && !slices.Contains(awsWellKnownLabels, key):
		return "the karpenter.k8s.aws domain is reserved except for its well-known labels"
	}
	return ""
}

// Validate checks pools and classes (defaults applied) under the config
// keys nodePools and nodeClasses. production requires pinned AMI versions.
// It reports every problem at once.
func Validate(pools map[string]Pool, classes map[string]NodeClass, production bool, karpenterMinor int) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if len(pools) == 0 {
		bad("nodePools: at least one pool is required; with no node group, Karpenter launches every node")
	}
	for _, name := range SortedNames(classes) {
		key := fmt.Sprintf("nodeClasses.%s", name)
		c := classes[name]
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			bad("%s: name %q: %s", key, name, msg)
		}
		if !aliasRe.MatchString(c.AMIAlias) {
			bad("%s.amiAlias %q: want bottlerocket@latest, bottlerocket@vX.Y.Z (e.g. %q), al2023@latest or al2023@vYYYYMMDD",
				key, c.AMIAlias, "bottlerocket@v"+versions.SuggestedBottlerocket)
		} else if production && strings.HasSuffix(c.AMIAlias, "@latest") {
			bad("%s.amiAlias %q: production stacks pin the AMI version, e.g. %q, so that a new AMI reaches nodes only when you choose",
				key, c.AMIAlias, suggestedPin(Family(c.AMIAlias)))
		}
		if q, err := resource.ParseQuantity(c.VolumeSize); err != nil || q.Cmp(resource.MustParse("1Gi")) < 0 || !strings.HasSuffix(c.VolumeSize, "Gi") {
			bad("%s.volumeSize %q: want a size in Gi of at least 1Gi, e.g. \"20Gi\"", key, c.VolumeSize)
		}
		if !slices.Contains(volumeTypes, c.VolumeType) {
			bad("%s.volumeType %q: want one of %v", key, c.VolumeType, volumeTypes)
		}
		errs = append(errs, ValidateKubelet(key+".kubelet", Family(c.AMIAlias), c.Kubelet, karpenterMinor)...)
		for _, k := range SortedNames(c.Tags) {
			switch {
			case k == "" || c.Tags[k] == "":
				bad("%s.tags: keys and values must not be empty (%q)", key, k)
			case slices.Contains(restrictedTags, k) || strings.HasPrefix(k, "kubernetes.io/cluster"):
				bad("%s.tags %q: Karpenter sets this tag itself", key, k)
			}
		}
	}

	for _, name := range SortedNames(pools) {
		p := pools[name]
		key := fmt.Sprintf("nodePools.%s", name)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			bad("%s: name %q: %s", key, name, msg)
		}
		if len(name) > validation.LabelValueMaxLength {
			bad("%s: name longer than %d characters; it becomes the karpenter.sh/nodepool label", key, validation.LabelValueMaxLength)
		}
		if _, ok := classes[p.NodeClass]; !ok {
			bad("%s.nodeClass %q: no such node class; defined: %v", key, p.NodeClass, SortedNames(classes))
		}
		errs = append(errs, validateRequirements(key+".requirements", p.Requirements)...)
		errs = append(errs, validateCapacity(key, p)...)
		for _, r := range SortedNames(p.Limits) {
			if r != "cpu" && r != "memory" && r != "nodes" && !strings.Contains(r, "/") {
				bad("%s.limits.%s: want cpu, memory, nodes or an extended resource name", key, r)
			}
			if _, err := resource.ParseQuantity(p.Limits[r]); err != nil {
				bad("%s.limits.%s %q: want a quantity such as \"50\" or \"128Gi\"", key, r, p.Limits[r])
			}
		}
		d := p.Disruption
		if !slices.Contains(policies, d.ConsolidationPolicy) {
			bad("%s.disruption.consolidationPolicy %q: want one of %v", key, d.ConsolidationPolicy, policies)
		}
		if !durationOrNeverRe.MatchString(d.ConsolidateAfter) {
			bad("%s.disruption.consolidateAfter %q: want a duration such as \"1m\" or \"Never\"", key, d.ConsolidateAfter)
		}
		for i, b := range d.Budgets {
			bk := fmt.Sprintf("%s.disruption.budgets[%d]", key, i)
			if !budgetNodesRe.MatchString(b.Nodes) {
				bad("%s.nodes %q: want a count or a percentage such as \"10%%\"", bk, b.Nodes)
			}
			if (b.Schedule == "") != (b.Duration == "") {
				bad("%s: schedule and duration go together", bk)
			}
			if b.Schedule != "" && len(strings.Fields(b.Schedule)) != 5 && !strings.HasPrefix(b.Schedule, "@") {
				bad("%s.schedule %q: want a cron expression of five fields", bk, b.Schedule)
			}
			if b.Duration != "" && !durationRe.MatchString(b.Duration) {
				bad("%s.duration %q: want a duration such as \"8h\"", bk, b.Duration)
			}
			reasons := budgetReasons
			if karpenterMinor >= 15 {
				reasons = budgetReasons115
			}
			for _, r := range b.Reasons {
				if !slices.Contains(reasons, r) {
					bad("%s.reasons: %q is not one of %v", bk, r, reasons)
				}
			}
		}
		if !durationOrNeverRe.MatchString(p.ExpireAfter) {
			bad("%s.expireAfter %q: want a duration such as \"720h\" or \"Never\"", key, p.ExpireAfter)
		}
		if !durationRe.MatchString(p.TerminationGracePeriod) {
			bad("%s.terminationGracePeriod %q: want a duration such as \"48h\"; it bounds every drain, including the one on destroy", key, p.TerminationGracePeriod)
		}
		if p.Weight < 0 || p.Weight > 100 {
			bad("%s.weight %d: want 1-100, or leave it unset", key, p.Weight)
		}
		for _, k := range SortedNames(p.Labels) {
			for _, msg := range validation.IsQualifiedName(k) {
				bad("%s.labels %q: %s", key, k, msg)
			}
			for _, msg := range validation.IsValidLabelValue(p.Labels[k]) {
				bad("%s.labels[%q]: %s", key, k, msg)
			}
			if why := RestrictedLabel(k); why != "" {
				bad("%s.labels %q: restricted, %s", key, k, why)
			}
		}
		for i, t := range p.Taints {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				bad("%s.taints[%d].key %q: %s", key, i, t.Key, msg)
			}
			if !slices.Contains(taintEffects, t.Effect) {
				bad("%s.taints[%d].effect %q: want one of %v", key, i, t.Effect, taintEffects)
			}
		}
	}
	if err := validateAddonHome(pools); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateRequirements(key string, r *Requirements) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	oneOf := func(field string, got, allowed []string) {
		for _, v := range got {
			if !slices.Contains(allowed, v) {
				bad("%s.%s: %q is not one of %v", key, field, v, allowed)
			}
		}
	}
	nonNegative := func(field string, v *int) {
		if v != nil && *v < 0 {
			bad("%s.%s %d: must not be negative", key, field, *v)
		}
	}
	oneOf("arch", r.Arch, archs)
	oneOf("capacityTypes", r.CapacityTypes, capacityTypes)
	oneOf("hypervisors", r.Hypervisors, hypervisors)
	for _, c := range r.Categories {
		if !categoryRe.MatchString(c) {
			bad("%s.categories: %q is not an instance category such as \"c\" or \"m\"", key, c)
		}
	}
	for _, c := range r.CPUs {
		if c <= 0 {
			bad("%s.cpus: %d is not a vCPU count", key, c)
		}
	}
	nonNegative("generationGreaterThan", r.GenerationGreaterThan)
	nonNegative("cpuGreaterThan", r.CPUGreaterThan)
	nonNegative("memoryMiBGreaterThan", r.MemoryMiBGreaterThan)
	if len(r.CPUs) > 0 && r.CPUGreaterThan != nil {
		bad("%s: cpus and cpuGreaterThan exclude each other", key)
	}
	for i, x := range r.Extra {
		xk := fmt.Sprintf("%s.extra[%d]", key, i)
		for _, msg := range validation.IsQualifiedName(x.Key) {
			bad("%s.key %q: %s", xk, x.Key, msg)
		}
		if why := RestrictedLabel(x.Key); why != "" {
			bad("%s.key %q: restricted, %s", xk, x.Key, why)
		}
		switch x.Operator {
		case "In", "NotIn":
			if x.Operator == "In" && len(x.Values) == 0 {
				bad("%s: operator In needs at least one value", xk)
			}
		case "Exists", "DoesNotExist":
			if len(x.Values) > 0 {
				bad("%s: operator %s takes no values", xk, x.Operator)
			}
		case "Gt", "Lt", "Gte", "Lte":
			if len(x.Values) != 1 {
				bad("%s: operator %s takes exactly one value", xk, x.Operator)
			} else if n, err := strconv.Atoi(x.Values[0]); err != nil || n < 0 {
				bad("%s: operator %s needs a non-negative integer, got %q", xk, x.Operator, x.Values[0])
			}
		default:
			bad("%s.operator %q: want one of %v", xk, x.Operator, operators)
		}
		if x.MinValues != nil && (*x.MinValues < 1 || *x.MinValues > 50 || (x.Operator == "In" && len(x.Values) < *x.MinValues)) {
			bad("%s.minValues %d: want 1-50 and no more than the values listed", xk, *x.MinValues)
		}
	}
	return errs
}

// suggestedPin is a pinned alias of family that exists for the default
// Kubernetes minor.
func suggestedPin(family string) string {
	if family == "al2023" {
		return "al2023@v<release date, YYYYMMDD, of an EKS-optimized AL2023 AMI>"
	}
	return "bottlerocket@v" + versions.SuggestedBottlerocket
}
