package karpenter

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Fargate bills a pod for its requests plus FargateOverheadMiB, rounded up
// to the next vCPU/memory combination it offers
// (https://docs.aws.amazon.com/eks/latest/userguide/fargate-pod-configuration.html).

// FargateOverheadMiB is what Fargate adds to a pod's memory for the
// Kubernetes components it runs beside the pod.
const FargateOverheadMiB = 256

// MinControllerMemoryMiB is the least memory the controller is given: it
// caches every instance type and offering of the region.
const MinControllerMemoryMiB = 512

// fargateSizes are the vCPU/memory combinations Fargate offers, per vCPU:
// the smallest and largest memory in GiB and the step between them.
var fargateSizes = []struct {
	vCPU                    float64
	minGiB, maxGiB, stepGiB float64
}{
	{0.25, 0.5, 2, 0.5}, // 0.5, 1, 2 (1.5 is not offered; see FargateSize)
	{0.5, 1, 4, 1},
	{1, 2, 8, 1},
	{2, 4, 16, 1},
	{4, 8, 30, 1},
	{8, 16, 60, 4},
	{16, 32, 120, 8},
}

// FargateSize is the size Fargate bills for a pod that requests cpu vCPU
// and memMiB of memory: the smallest combination that holds cpu and
// memMiB + 256 MiB.
func FargateSize(cpu float64, memMiB int) (vCPU, memGiB float64, err error) {
	needGiB := float64(memMiB+FargateOverheadMiB) / 1024
	for _, s := range fargateSizes {
		if cpu > s.vCPU {
			continue
		}
		for m := s.minGiB; m <= s.maxGiB; m += s.stepGiB {
			if s.vCPU == 0.25 && m == 1.5 {
				continue
			}
			if m >= needGiB {
				return s.vCPU, m, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no Fargate size holds %g vCPU and %d MiB (+%d MiB)", cpu, memMiB, FargateOverheadMiB)
}

// ControllerResources are the controller's requests, equal to its limits.
type ControllerResources struct {
	// CPU is a Kubernetes quantity of whole or milli cores: "1", "0.5", "250m".
	CPU string `json:"cpu,omitempty" pulumi:"cpu,optional"`
	// Memory is a quantity in Mi or Gi: "768Mi", "2Gi".
	Memory string `json:"memory,omitempty" pulumi:"memory,optional"`
}

// Controller sizes: the small one serves dev and test clusters, the
// upstream-recommended one production clusters.
var (
	// SmallController fills Fargate's 0.25 vCPU / 1 GB size:
	// 768 MiB + 256 MiB = 1024 MiB.
	SmallController = ControllerResources{CPU: "250m", Memory: "768Mi"}
	// ProductionController fills the 1 vCPU / 2 GB size:
	// 1792 MiB + 256 MiB = 2048 MiB.
	ProductionController = ControllerResources{CPU: "1", Memory: "1792Mi"}
)

var (
	cpuRe    = regexp.MustCompile(`^(\d+)m$|^(\d+(\.\d+)?)$`)
	memoryRe = regexp.MustCompile(`^(\d+)(Mi|Gi)$`)
)

// Parse returns the resources as vCPU and MiB.
func (r ControllerResources) Parse() (vCPU float64, memMiB int, err error) {
	m := cpuRe.FindStringSubmatch(r.CPU)
	switch {
	case m == nil:
		return 0, 0, fmt.Errorf("cpu %q: want cores such as \"1\" or \"0.5\", or millicores such as \"250m\"", r.CPU)
	case m[1] != "":
		milli, _ := strconv.Atoi(m[1])
		vCPU = float64(milli) / 1000
	default:
		vCPU, _ = strconv.ParseFloat(m[2], 64)
	}
	mm := memoryRe.FindStringSubmatch(r.Memory)
	if mm == nil {
		return 0, 0, fmt.Errorf("memory %q: want Mi or Gi such as \"768Mi\"", r.Memory)
	}
	memMiB, _ = strconv.Atoi(mm[1])
	if mm[2] == "Gi" {
		memMiB *= 1024
	}
	return vCPU, memMiB, nil
}

// Validate accepts resources that fill a Fargate size exactly: Fargate
// would bill the rest of the size anyway, unused.
func (r ControllerResources) Validate() error {
	cpu, mem, err := r.Parse()
	if err != nil {
		return err
	}
	if cpu <= 0 {
		return fmt.Errorf("cpu %q: want more than 0", r.CPU)
	}
	if mem < MinControllerMemoryMiB {
		return fmt.Errorf("memory %q: the controller needs at least %dMi; it caches every instance type and offering of the region", r.Memory, MinControllerMemoryMiB)
	}
	vCPU, gib, err := FargateSize(cpu, mem)
	if err != nil {
		return err
	}
	billedMiB := int(math.Round(gib * 1024))
	if waste := billedMiB - mem - FargateOverheadMiB; waste > 0 || vCPU > cpu {
		return fmt.Errorf("cpu %q and memory %q are billed as Fargate's %g vCPU / %g GB size and leave part of it unused; "+
			"ask for cpu %q and memory %dMi (%d MiB + %d MiB Fargate overhead = %g GB) to use all of it",
			r.CPU, r.Memory, vCPU, gib, strconv.FormatFloat(vCPU, 'f', -1, 64), billedMiB-FargateOverheadMiB, billedMiB-FargateOverheadMiB, FargateOverheadMiB, gib)
	}
	return nil
}

// MonthlyCostUSD is what Fargate bills for replicas of a pod of this size
// for 730 hours, at the given per-vCPU-hour and per-GB-hour prices.
func (r ControllerResources) MonthlyCostUSD(replicas int, vCPUHour, gbHour float64) (float64, error) {
	cpu, mem, err := r.Parse()
	if err != nil {
		return 0, err
	}
	vCPU, gib, err := FargateSize(cpu, mem)
	if err != nil {
		return 0, err
	}
	return float64(replicas) * (vCPU*vCPUHour + gib*gbHour) * 730, nil
}
