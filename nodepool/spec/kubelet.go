package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Kubelet is a node class's kubelet settings: the keys Karpenter itself
// reads and applies on every AMI family (v1.15.2 pkg/apis/v1/
// kubeletconfiguration.go, ParsedKubeletConfig; v1.14.3's typed
// spec.kubelet has the same) but clusterDNS, which CoreDNS's service
// decides. From 1.15 spec.kubelet is open to any KubeletConfiguration
// field, but only al2023 applies the others; Bottlerocket's classes refuse
// them. Unknown keys are refused when the config is read (its decoder
// allows none); ValidateKubelet refuses what Karpenter would.
type Kubelet struct {
	// MaxPods caps the pods on a node.
	MaxPods *int `json:"maxPods,omitempty" pulumi:"maxPods,optional"`
	// PodsPerCore caps the pods per vCPU (AL2023 only: Karpenter does not
	// pass it to Bottlerocket).
	PodsPerCore *int `json:"podsPerCore,omitempty" pulumi:"podsPerCore,optional"`
	// SystemReserved and KubeReserved reserve cpu, memory,
	// ephemeral-storage and pid for the OS and for Kubernetes.
	SystemReserved map[string]string `json:"systemReserved,omitempty" pulumi:"systemReserved,optional"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty" pulumi:"kubeReserved,optional"`
	// EvictionHard and EvictionSoft are eviction thresholds by signal, a
	// quantity or a percentage; each soft one needs its grace period.
	EvictionHard            map[string]string `json:"evictionHard,omitempty" pulumi:"evictionHard,optional"`
	EvictionSoft            map[string]string `json:"evictionSoft,omitempty" pulumi:"evictionSoft,optional"`
	EvictionSoftGracePeriod map[string]string `json:"evictionSoftGracePeriod,omitempty" pulumi:"evictionSoftGracePeriod,optional"`
	// EvictionMaxPodGracePeriod caps, in seconds, a pod's grace period on
	// a soft eviction.
	EvictionMaxPodGracePeriod *int `json:"evictionMaxPodGracePeriod,omitempty" pulumi:"evictionMaxPodGracePeriod,optional"`
	// ImageGCHighThresholdPercent and ImageGCLowThresholdPercent bound the
	// disk use that image garbage collection starts at and goes down to.
	ImageGCHighThresholdPercent *int `json:"imageGCHighThresholdPercent,omitempty" pulumi:"imageGCHighThresholdPercent,optional"`
	ImageGCLowThresholdPercent  *int `json:"imageGCLowThresholdPercent,omitempty" pulumi:"imageGCLowThresholdPercent,optional"`
	// CPUCFSQuota enforces CPU limits with CFS quota.
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty" pulumi:"cpuCFSQuota,optional"`
}

// The keys and values both lines take: karpenter.k8s.aws_ec2nodeclasses.yaml
// at v1.14.3 (the x-kubernetes-validations of each map, and its
// patterns) and pkg/apis/v1/kubeletconfiguration_validation.go at v1.15.2
// (evictionSignals, reservedResources); test/kubecheck holds them to both
// through bad-nodepools.json.
var (
	reservedKeys     = []string{"cpu", "ephemeral-storage", "memory", "pid"}
	evictionSignals  = []string{"imagefs.available", "imagefs.inodesFree", "memory.available", "nodefs.available", "nodefs.inodesFree", "pid.available"}
	quantityRe       = regexp.MustCompile(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)
	percentRe        = regexp.MustCompile(`^(\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%$`)
	decimalPercentRe = regexp.MustCompile(`^(\d+(\.\d*)?|\.\d+)%$`)
)

// ValidateKubelet refuses, naming each key under key, what Karpenter
// 1.karpenterMinor would refuse: up to 1.14 its EC2NodeClass CRD refuses
// it at apply; from 1.15 the CRD takes anything and the controller sets
// ValidationSucceeded=False, so the class never turns Ready, no node
// launches, and `up` waits out its bound. It also refuses what Karpenter
// would drop for the class's AMI family (Bottlerocket has no setting for
// podsPerCore: pkg/providers/amifamily/bottlerocket.go, FeatureFlags) and
// what the kubelet, or Karpenter's capacity arithmetic, would fail on.
func ValidateKubelet(key, family string, k *Kubelet, karpenterMinor int) []error {
	if k == nil {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(key+"."+format, a...)) }
	between := func(field string, v *int, lo, hi int) {
		if v != nil && (*v < lo || *v > hi) {
			bad("%s %d: want %d-%d", field, *v, lo, hi)
		}
	}
	// 0 is the CRD's minimum, and Karpenter's pod capacity of every
	// instance type then (instancetype/types.go, pods): no pod would fit.
	between("maxPods", k.MaxPods, 1, 1<<31-1)
	between("podsPerCore", k.PodsPerCore, 0, 1<<31-1)
	between("evictionMaxPodGracePeriod", k.EvictionMaxPodGracePeriod, 0, 1<<31-1)
	between("imageGCHighThresholdPercent", k.ImageGCHighThresholdPercent, 0, 100)
	between("imageGCLowThresholdPercent", k.ImageGCLowThresholdPercent, 0, 100)
	// The kubelet compares the two with its own defaults, 85 and 80, for
	// the one unset (k8s.io/kubernetes v1.36.3 pkg/kubelet/apis/config:
	// v1beta1 defaults.go and validation.go), and a kubelet that refuses
	// its configuration never registers the node.
	high, low := 85, 80
	if k.ImageGCHighThresholdPercent != nil {
		high = *k.ImageGCHighThresholdPercent
	}
	if k.ImageGCLowThresholdPercent != nil {
		low = *k.ImageGCLowThresholdPercent
	}
	if (k.ImageGCHighThresholdPercent != nil || k.ImageGCLowThresholdPercent != nil) && high <= low {
		bad("imageGCHighThresholdPercent %d: must be greater than imageGCLowThresholdPercent %d (the kubelet's defaults are 85 and 80)", high, low)
	}
	if k.PodsPerCore != nil && family == "bottlerocket" {
		bad("podsPerCore: Karpenter does not pass it to Bottlerocket, whose nodes would ignore it; use maxPods, or an al2023 class")
	}
	for field, m := range map[string]map[string]string{"systemReserved": k.SystemReserved, "kubeReserved": k.KubeReserved} {
		for _, r := range slices.Sorted(maps.Keys(m)) {
			switch q, err := resource.ParseQuantity(m[r]); {
			case !slices.Contains(reservedKeys, r):
				bad("%s %q: want one of %v", field, r, reservedKeys)
			case err != nil || !quantityRe.MatchString(m[r]) || q.Sign() < 0 || strings.HasPrefix(m[r], "-"):
				bad("%s.%s %q: want a quantity that is not negative, such as \"100m\" or \"1Gi\"", field, r, m[r])
			}
		}
	}
	for field, m := range map[string]map[string]string{"evictionHard": k.EvictionHard, "evictionSoft": k.EvictionSoft} {
		for _, s := range slices.Sorted(maps.Keys(m)) {
			// A quantity Karpenter reads with resource.MustParse
			// (instancetype/types.go, evictionThreshold), which panics on
			// what ParseQuantity refuses, and the kubelet refuses one that
			// is not positive (pkg/kubelet/eviction/helpers.go).
			q, err := resource.ParseQuantity(m[s])
			switch {
			case !slices.Contains(evictionSignals, s):
				bad("%s %q: want one of %v", field, s, evictionSignals)
			case isPercentage(m[s], karpenterMinor):
			case err != nil || !quantityRe.MatchString(m[s]) || q.Sign() <= 0:
				bad("%s.%s %q: want a percentage below 100%% such as \"10%%\" or a positive quantity such as \"500Mi\"", field, s, m[s])
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(k.EvictionSoftGracePeriod)) {
		if !slices.Contains(evictionSignals, s) {
			bad("evictionSoftGracePeriod %q: want one of %v", s, evictionSignals)
		} else if d, err := time.ParseDuration(k.EvictionSoftGracePeriod[s]); err != nil || d < 0 {
			bad("evictionSoftGracePeriod.%s %q: want a duration that is not negative, such as \"1m30s\"", s, k.EvictionSoftGracePeriod[s])
		}
		if _, ok := k.EvictionSoft[s]; !ok {
			bad("evictionSoftGracePeriod %q: no evictionSoft threshold of that signal", s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(k.EvictionSoft)) {
		if _, ok := k.EvictionSoftGracePeriod[s]; !ok {
			bad("evictionSoft %q: no evictionSoftGracePeriod of that signal", s)
		}
	}
	return errs
}

// isPercentage reports whether v is an eviction percentage that Karpenter
// 1.karpenterMinor takes and the node honours: up to 1.14 the CRD's
// pattern (two decimals at most); from 1.15 a decimal number with "%"
// (validateEvictionThreshold takes any float from 0 to 100, but NaN then
// panics Karpenter's capacity arithmetic, resource.MustParse in
// pkg/providers/instancetype/types.go computeEvictionSignal, and a hex float or an exponent
// means nothing a reader expects). Either way below 100%: the kubelet
// ignores only the literal "100%" (k8s.io/kubernetes v1.36.3
// pkg/kubelet/eviction/helpers.go, parseThresholdStatement), so "100.0%"
// would evict without end, and "100%" sets nothing.
func isPercentage(v string, karpenterMinor int) bool {
	if karpenterMinor <= 14 && !percentRe.MatchString(v) || !decimalPercentRe.MatchString(v) {
		return false
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	return err == nil && f < 100
}

// kubeletSpec is the EC2NodeClass's spec.kubelet, or nil: the settings
// under the CRD's own names, which are their JSON tags.
func kubeletSpec(k *Kubelet) map[string]any {
	if k == nil {
		return nil
	}
	raw, _ := json.Marshal(k) // ints, strings, bools and their maps: it cannot fail
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
