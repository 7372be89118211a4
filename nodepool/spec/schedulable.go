package spec

import (
	"fmt"
	"nodeless-eks/internal/bounds"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// AddonWorkloads are what must find a node in some pool before `pulumi up`
// can finish: none of them tolerates a NoSchedule or NoExecute taint.
const AddonWorkloads = "CoreDNS and the cluster's controllers (AWS Load Balancer Controller, ArgoCD)"

// validateCapacity rejects a pool whose limits no instance it allows can
// fit in: Karpenter would never launch a node for it. Each problem names
// its key.
func validateCapacity(key string, p Pool) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	r := p.Requirements
	if cpu, ok := p.Limits["cpu"]; ok {
		q, err := resource.ParseQuantity(cpu)
		smallest := smallestVCPU(r)
		switch {
		case err != nil: // reported with the limit's syntax
		case q.Sign() <= 0:
			bad("%s.limits.cpu %q: leaves no room for any node; Karpenter would launch nothing for this pool", key, cpu)
		case q.MilliValue() < int64(smallest)*1000:
			bad("%s.limits.cpu %q: below the pool's smallest instance (%d vCPU), so Karpenter could never launch one; raise the limit or allow smaller instances", key, cpu, smallest)
		}
	}
	if mem, ok := p.Limits["memory"]; ok {
		q, err := resource.ParseQuantity(mem)
		switch {
		case err != nil:
		case q.Sign() <= 0:
			bad("%s.limits.memory %q: leaves no room for any node; Karpenter would launch nothing for this pool", key, mem)
		case r.MemoryMiBGreaterThan != nil && q.Value() <= int64(*r.MemoryMiBGreaterThan)<<20:
			bad("%s.limits.memory %q: not above requirements.memoryMiBGreaterThan (%d MiB), so no instance the pool allows fits; raise the limit", key, mem, *r.MemoryMiBGreaterThan)
		}
	}
	return errs
}

// smallestVCPU is the fewest vCPUs an instance of the pool may have.
func smallestVCPU(r *Requirements) int {
	smallest := 1
	if r.CPUGreaterThan != nil {
		smallest = *r.CPUGreaterThan + 1
	}
	if len(r.CPUs) > 0 {
		smallest = slices.Min(r.CPUs)
	}
	return smallest
}

// whyNoAddons says why the add-ons cannot run on p's nodes, or "" when
// they can.
func whyNoAddons(p Pool) string {
	for _, t := range p.Taints {
		if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
			return fmt.Sprintf("it is tainted %s:%s, which they do not tolerate", taintString(t), t.Effect)
		}
	}
	r := p.Requirements
	if len(r.CapacityTypes) > 0 && !slices.Contains(r.CapacityTypes, "spot") && !slices.Contains(r.CapacityTypes, "on-demand") {
		return "it offers only reserved capacity, which exists only with a capacity reservation"
	}
	for _, req := range r.Extra {
		if req.Key != "kubernetes.io/os" {
			continue
		}
		if (req.Operator == "In" && !slices.Contains(req.Values, "linux")) || (req.Operator == "NotIn" && slices.Contains(req.Values, "linux")) {
			return "its nodes are not Linux"
		}
	}
	if len(validateCapacity("", p)) > 0 {
		return "its limits leave no room for a node"
	}
	return ""
}

func taintString(t Taint) string {
	if t.Value == "" {
		return t.Key
	}
	return t.Key + "=" + t.Value
}

// validateAddonHome rejects a pool set on which the add-ons can never be
// scheduled: the CoreDNS add-on would wait its bound for a node and fail
// `pulumi up` with half the stack created.
func validateAddonHome(pools map[string]Pool) error {
	if len(pools) == 0 {
		return nil // reported as "at least one pool is required"
	}
	var reasons []string
	for _, name := range SortedNames(pools) {
		why := whyNoAddons(pools[name])
		if why == "" {
			return nil
		}
		reasons = append(reasons, fmt.Sprintf("pool %s: %s", name, why))
	}
	return fmt.Errorf("nodePools: no pool can run %s (%s); `pulumi up` would wait "+bounds.Describe(bounds.FirstNode)+" on the CoreDNS add-on and fail "+
		"with half the stack created. Keep one pool without NoSchedule or NoExecute taints, with spot or on-demand capacity "+
		"and limits above its smallest instance", AddonWorkloads, strings.Join(reasons, "; "))
}
