// Package spec turns the stack's node pool and node class configuration
// into Karpenter NodePool and EC2NodeClass objects, and validates that
// configuration against the rules the Karpenter CRDs enforce. It is plain
// data with no Pulumi imports, so the CRD tests can use it without linking
// the Pulumi SDKs.
package spec

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"nodeless-eks/internal/names"
)

// API groups and versions of the Karpenter objects.
const (
	NodePoolAPIVersion     = "karpenter.sh/v1"
	EC2NodeClassAPIVersion = "karpenter.k8s.aws/v1"
)

// Pool is one NodePool as the stack configures it. Nil fields take the
// defaults of DefaultPool; an empty list means "no requirement".
type Pool struct {
	// NodeClass names an entry of the node classes. Default "default".
	NodeClass string `json:"nodeClass,omitempty" pulumi:"nodeClass,optional"`
	// Requirements is the instance menu.
	Requirements *Requirements `json:"requirements,omitempty" pulumi:"requirements,optional"`
	// Limits caps the pool's total resources, e.g. {"cpu": "50", "memory": "128Gi"}.
	Limits map[string]string `json:"limits,omitempty" pulumi:"limits,optional"`
	// Disruption controls consolidation.
	Disruption *Disruption `json:"disruption,omitempty" pulumi:"disruption,optional"`
	// ExpireAfter replaces nodes after this age ("720h" or "Never").
	ExpireAfter string `json:"expireAfter,omitempty" pulumi:"expireAfter,optional"`
	// TerminationGracePeriod bounds a node's drain, so a destroy cannot
	// hang on a pod that refuses eviction. Default "1h".
	TerminationGracePeriod string `json:"terminationGracePeriod,omitempty" pulumi:"terminationGracePeriod,optional"`
	// Weight orders pools (1-100, higher first); 0 means unset.
	Weight int `json:"weight,omitempty" pulumi:"weight,optional"`
	// Labels go on every node of the pool.
	Labels map[string]string `json:"labels,omitempty" pulumi:"labels,optional"`
	// Taints go on every node of the pool.
	Taints []Taint `json:"taints,omitempty" pulumi:"taints,optional"`
}

// Requirements is the instance menu of a pool. Nil means the default.
type Requirements struct {
	// Arch: kubernetes.io/arch In, of amd64 and arm64.
	Arch []string `json:"arch,omitempty" pulumi:"arch,optional"`
	// CapacityTypes: karpenter.sh/capacity-type In, of spot, on-demand and reserved.
	CapacityTypes []string `json:"capacityTypes,omitempty" pulumi:"capacityTypes,optional"`
	// Categories: karpenter.k8s.aws/instance-category In (c, m, r, ...).
	Categories []string `json:"categories,omitempty" pulumi:"categories,optional"`
	// GenerationGreaterThan: karpenter.k8s.aws/instance-generation Gt.
	GenerationGreaterThan *int `json:"generationGreaterThan,omitempty" pulumi:"generationGreaterThan,optional"`
	// CPUs: karpenter.k8s.aws/instance-cpu In.
	CPUs []int `json:"cpus,omitempty" pulumi:"cpus,optional"`
	// CPUGreaterThan: karpenter.k8s.aws/instance-cpu Gt.
	CPUGreaterThan *int `json:"cpuGreaterThan,omitempty" pulumi:"cpuGreaterThan,optional"`
	// MemoryMiBGreaterThan: karpenter.k8s.aws/instance-memory Gt (MiB).
	MemoryMiBGreaterThan *int `json:"memoryMiBGreaterThan,omitempty" pulumi:"memoryMiBGreaterThan,optional"`
	// Hypervisors: karpenter.k8s.aws/instance-hypervisor In (nitro).
	Hypervisors []string `json:"hypervisors,omitempty" pulumi:"hypervisors,optional"`
	// Extra requirements, as in the NodePool API.
	Extra []Requirement `json:"extra,omitempty" pulumi:"extra,optional"`
}

// Requirement is a NodePool requirement.
type Requirement struct {
	Key       string   `json:"key" pulumi:"key"`
	Operator  string   `json:"operator" pulumi:"operator"`
	Values    []string `json:"values,omitempty" pulumi:"values,optional"`
	MinValues *int     `json:"minValues,omitempty" pulumi:"minValues,optional"`
}

// Disruption is a NodePool's disruption policy.
type Disruption struct {
	// ConsolidationPolicy is WhenEmpty, WhenEmptyOrUnderutilized or Balanced.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty" pulumi:"consolidationPolicy,optional"`
	// ConsolidateAfter is how long a node must be consolidatable ("1m", "Never").
	ConsolidateAfter string `json:"consolidateAfter,omitempty" pulumi:"consolidateAfter,optional"`
	// Budgets limit how many nodes are disrupted at once.
	Budgets []Budget `json:"budgets,omitempty" pulumi:"budgets,optional"`
}

// Budget is a disruption budget.
type Budget struct {
	Nodes    string   `json:"nodes" pulumi:"nodes"`
	Schedule string   `json:"schedule,omitempty" pulumi:"schedule,optional"`
	Duration string   `json:"duration,omitempty" pulumi:"duration,optional"`
	Reasons  []string `json:"reasons,omitempty" pulumi:"reasons,optional"`
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key" pulumi:"key"`
	Value  string `json:"value,omitempty" pulumi:"value,optional"`
	Effect string `json:"effect" pulumi:"effect"`
}

// NodeClass is one EC2NodeClass as the stack configures it.
type NodeClass struct {
	// AMIAlias is "bottlerocket@latest", "bottlerocket@v1.66.0",
	// "al2023@latest" or "al2023@v20250101". Default bottlerocket@latest;
	// production stacks must pin a version that exists for the cluster's
	// Kubernetes minor.
	AMIAlias string `json:"amiAlias,omitempty" pulumi:"amiAlias,optional"`
	// VolumeSize is the data (Bottlerocket) or root (AL2023) volume, e.g. "20Gi".
	VolumeSize string `json:"volumeSize,omitempty" pulumi:"volumeSize,optional"`
	// VolumeType is the EBS type, default gp3.
	VolumeType string `json:"volumeType,omitempty" pulumi:"volumeType,optional"`
	// Tags go on the instances, volumes and network interfaces.
	Tags map[string]string `json:"tags,omitempty" pulumi:"tags,optional"`
	// Kubelet are the nodes' kubelet settings (Karpenter's
	// spec.kubelet); none by default.
	Kubelet *Kubelet `json:"kubelet,omitempty" pulumi:"kubelet,optional"`
}

// Defaults.
const (
	DefaultPoolName      = "general"
	DefaultNodeClassName = "default"
	DefaultAMIAlias      = "bottlerocket@latest"
	defaultVolumeSize    = "20Gi"
	defaultVolumeType    = "gp3"
	defaultExpireAfter   = "720h"
	// DefaultTerminationGracePeriod bounds every drain, including the one
	// `pulumi destroy` waits for, so it is short by default.
	DefaultTerminationGracePeriod = "1h"
)

func intRef(i int) *int { return &i }

// Drain is how long Karpenter may take to drain one of the pool's nodes:
// its terminationGracePeriod, or the default for a pool without a valid one
// (Validate refuses those before anything is registered).
func (p Pool) Drain() time.Duration {
	if d, err := time.ParseDuration(p.TerminationGracePeriod); err == nil {
		return d
	}
	d, _ := time.ParseDuration(DefaultTerminationGracePeriod)
	return d
}

// DefaultPool is a general-purpose pool: amd64 and arm64, spot and
// on-demand, categories c/m/r of generation 5 and later, at least 2 vCPU
// and more than 2 GiB of memory, at most 50 vCPU and 128 GiB in all,
// consolidated when empty or underutilized after a minute.
func DefaultPool() Pool {
	return Pool{
		NodeClass: DefaultNodeClassName,
		Requirements: &Requirements{
			Arch:                  []string{"amd64", "arm64"},
			CapacityTypes:         []string{"spot", "on-demand"},
			Categories:            []string{"c", "m", "r"},
			GenerationGreaterThan: intRef(4),
			CPUGreaterThan:        intRef(1),
			MemoryMiBGreaterThan:  intRef(2048),
		},
		Limits: map[string]string{"cpu": "50", "memory": "128Gi"},
		Disruption: &Disruption{
			ConsolidationPolicy: "WhenEmptyOrUnderutilized",
			ConsolidateAfter:    "1m",
			Budgets:             []Budget{{Nodes: "10%"}},
		},
		ExpireAfter:            defaultExpireAfter,
		TerminationGracePeriod: DefaultTerminationGracePeriod,
	}
}

// DefaultNodeClass is Bottlerocket with a 20 GiB encrypted gp3 data volume.
func DefaultNodeClass() NodeClass {
	return NodeClass{AMIAlias: DefaultAMIAlias, VolumeSize: defaultVolumeSize, VolumeType: defaultVolumeType}
}

// Resolve applies the defaults to configured pools and classes: a nil map
// (the key is not set) becomes the one default entry, and every entry's
// unset fields take the defaults. An empty map stays empty, for Validate
// to reject.
func Resolve(pools map[string]Pool, classes map[string]NodeClass) (map[string]Pool, map[string]NodeClass) {
	if pools == nil {
		pools = map[string]Pool{DefaultPoolName: {}}
	}
	if classes == nil {
		classes = map[string]NodeClass{DefaultNodeClassName: {}}
	}
	resolvedPools := make(map[string]Pool, len(pools))
	for name, p := range pools {
		resolvedPools[name] = p.WithDefaults()
	}
	resolvedClasses := make(map[string]NodeClass, len(classes))
	for name, c := range classes {
		resolvedClasses[name] = c.WithDefaults()
	}
	return resolvedPools, resolvedClasses
}

// WithDefaults fills the unset fields of p from DefaultPool.
func (p Pool) WithDefaults() Pool {
	d := DefaultPool()
	if p.NodeClass == "" {
		p.NodeClass = d.NodeClass
	}
	if p.Requirements == nil {
		p.Requirements = d.Requirements
	} else {
		r := *p.Requirements
		dr := d.Requirements
		if r.Arch == nil {
			r.Arch = dr.Arch
		}
		if r.CapacityTypes == nil {
			r.CapacityTypes = dr.CapacityTypes
		}
		if r.Categories == nil {
			r.Categories = dr.Categories
		}
		if r.GenerationGreaterThan == nil {
			r.GenerationGreaterThan = dr.GenerationGreaterThan
		}
		if r.CPUGreaterThan == nil && r.CPUs == nil {
			r.CPUGreaterThan = dr.CPUGreaterThan
		}
		if r.MemoryMiBGreaterThan == nil {
			r.MemoryMiBGreaterThan = dr.MemoryMiBGreaterThan
		}
		p.Requirements = &r
	}
	if p.Limits == nil {
		p.Limits = d.Limits
	}
	if p.Disruption == nil {
		p.Disruption = d.Disruption
	} else {
		dis := *p.Disruption
		if dis.ConsolidationPolicy == "" {
			dis.ConsolidationPolicy = d.Disruption.ConsolidationPolicy
		}
		if dis.ConsolidateAfter == "" {
			dis.ConsolidateAfter = d.Disruption.ConsolidateAfter
		}
		if dis.Budgets == nil {
			dis.Budgets = d.Disruption.Budgets
		}
		p.Disruption = &dis
	}
	if p.ExpireAfter == "" {
		p.ExpireAfter = d.ExpireAfter
	}
	if p.TerminationGracePeriod == "" {
		p.TerminationGracePeriod = d.TerminationGracePeriod
	}
	return p
}

// WithDefaults fills the unset fields of c from DefaultNodeClass.
func (c NodeClass) WithDefaults() NodeClass {
	d := DefaultNodeClass()
	if c.AMIAlias == "" {
		c.AMIAlias = d.AMIAlias
	}
	if c.VolumeSize == "" {
		c.VolumeSize = d.VolumeSize
	}
	if c.VolumeType == "" {
		c.VolumeType = d.VolumeType
	}
	return c
}

// RequirementList expands the menu into NodePool requirements, in a
// stable order. Nodes are always Linux.
func (r *Requirements) RequirementList() []Requirement {
	out := []Requirement{{Key: "kubernetes.io/os", Operator: "In", Values: []string{"linux"}}}
	in := func(key string, values []string) {
		if len(values) > 0 {
			out = append(out, Requirement{Key: key, Operator: "In", Values: values})
		}
	}
	gt := func(key string, v *int) {
		if v != nil {
			out = append(out, Requirement{Key: key, Operator: "Gt", Values: []string{strconv.Itoa(*v)}})
		}
	}
	in("kubernetes.io/arch", r.Arch)
	in("karpenter.sh/capacity-type", r.CapacityTypes)
	in("karpenter.k8s.aws/instance-category", r.Categories)
	gt("karpenter.k8s.aws/instance-generation", r.GenerationGreaterThan)
	if len(r.CPUs) > 0 {
		cpus := make([]string, len(r.CPUs))
		for i, c := range r.CPUs {
			cpus[i] = strconv.Itoa(c)
		}
		in("karpenter.k8s.aws/instance-cpu", cpus)
	}
	gt("karpenter.k8s.aws/instance-cpu", r.CPUGreaterThan)
	gt("karpenter.k8s.aws/instance-memory", r.MemoryMiBGreaterThan)
	in("karpenter.k8s.aws/instance-hypervisor", r.Hypervisors)
	return append(out, r.Extra...)
}

// NodePool is the NodePool object for pool name (defaults applied).
func NodePool(name string, p Pool) map[string]any {
	reqs := []any{}
	for _, r := range p.Requirements.RequirementList() {
		req := map[string]any{"key": r.Key, "operator": r.Operator}
		if len(r.Values) > 0 {
			req["values"] = toAny(r.Values)
		}
		if r.MinValues != nil {
			req["minValues"] = *r.MinValues
		}
		reqs = append(reqs, req)
	}
	nodeSpec := map[string]any{
		"nodeClassRef":           map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": p.NodeClass},
		"requirements":           reqs,
		"expireAfter":            p.ExpireAfter,
		"terminationGracePeriod": p.TerminationGracePeriod,
	}
	if len(p.Taints) > 0 {
		taints := []any{}
		for _, t := range p.Taints {
			taint := map[string]any{"key": t.Key, "effect": t.Effect}
			if t.Value != "" {
				taint["value"] = t.Value
			}
			taints = append(taints, taint)
		}
		nodeSpec["taints"] = taints
	}
	template := map[string]any{"spec": nodeSpec}
	if len(p.Labels) > 0 {
		template["metadata"] = map[string]any{"labels": toAnyMap(p.Labels)}
	}
	budgets := []any{}
	for _, b := range p.Disruption.Budgets {
		budget := map[string]any{"nodes": b.Nodes}
		if b.Schedule != "" {
			budget["schedule"] = b.Schedule
		}
		if b.Duration != "" {
			budget["duration"] = b.Duration
		}
		if len(b.Reasons) > 0 {
			budget["reasons"] = toAny(b.Reasons)
		}
		budgets = append(budgets, budget)
	}
	spec := map[string]any{
		"template": template,
		"limits":   toAnyMap(p.Limits),
		"disruption": map[string]any{
			"consolidationPolicy": p.Disruption.ConsolidationPolicy,
			"consolidateAfter":    p.Disruption.ConsolidateAfter,
			"budgets":             budgets,
		},
	}
	if p.Weight != 0 {
		spec["weight"] = p.Weight
	}
	return map[string]any{
		"apiVersion": NodePoolAPIVersion,
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}
}

// Nodes is what every node class shares: the cluster, the node role, and
// where nodes go.
type Nodes struct {
	ClusterName, NodeRoleName string
	// SubnetIDs and SecurityGroupIDs are selected by ID: tagging subnets
	// this stack does not own for discovery would fight with any other
	// cluster in the same VPC and with the VPC owner's own tooling.
	SubnetIDs, SecurityGroupIDs []string
}

// EC2NodeClass is the EC2NodeClass object for class name (defaults
// applied): the node role, subnets and security groups by ID, IMDSv2 only
// with a hop limit of 1 (pods cannot reach the node's credentials), and
// encrypted volumes.
func EC2NodeClass(name string, c NodeClass, n Nodes) map[string]any {
	tags := map[string]any{
		"Name":                n.ClusterName + "-" + name,
		names.DiscoveryTagKey: n.ClusterName,
	}
	for k, v := range c.Tags {
		tags[k] = v
	}
	spec := map[string]any{
		"role":                       n.NodeRoleName,
		"amiSelectorTerms":           []any{map[string]any{"alias": c.AMIAlias}},
		"subnetSelectorTerms":        idTerms(n.SubnetIDs),
		"securityGroupSelectorTerms": idTerms(n.SecurityGroupIDs),
		"metadataOptions": map[string]any{
			"httpEndpoint":            "enabled",
			"httpProtocolIPv6":        "disabled",
			"httpPutResponseHopLimit": 1,
			"httpTokens":              "required",
		},
		"blockDeviceMappings": blockDevices(c),
		"tags":                tags,
	}
	if kubelet := kubeletSpec(c.Kubelet); kubelet != nil {
		spec["kubelet"] = kubelet
	}
	return map[string]any{
		"apiVersion": EC2NodeClassAPIVersion,
		"kind":       "EC2NodeClass",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}
}

// blockDevices encrypts every volume. Bottlerocket boots from a small OS
// volume and keeps images and pods on a second, data volume, which is what
// Karpenter counts as the node's ephemeral storage (rootVolume).
func blockDevices(c NodeClass) []any {
	ebs := func(size string) map[string]any {
		return map[string]any{"volumeSize": size, "volumeType": c.VolumeType, "encrypted": true, "deleteOnTermination": true}
	}
	if Family(c.AMIAlias) == "bottlerocket" {
		return []any{
			map[string]any{"deviceName": "/dev/xvda", "ebs": ebs("4Gi")},
			map[string]any{"deviceName": "/dev/xvdb", "ebs": ebs(c.VolumeSize), "rootVolume": true},
		}
	}
	return []any{map[string]any{"deviceName": "/dev/xvda", "ebs": ebs(c.VolumeSize), "rootVolume": true}}
}

// Family is the AMI family of an alias ("bottlerocket" of "bottlerocket@latest").
func Family(alias string) string {
	family, _, _ := strings.Cut(alias, "@")
	return family
}

// idTerms selects exactly the given IDs, in a stable order.
func idTerms(ids []string) []any {
	sorted := slices.Sorted(slices.Values(ids))
	terms := make([]any, len(sorted))
	for i, id := range sorted {
		terms[i] = map[string]any{"id": id}
	}
	return terms
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SortedNames returns the keys of a config map in a stable order.
func SortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
