package karpenter

import (
	"fmt"
	"math"
)

// fargateOverheadMiB is what Fargate adds to a pod's memory for the
// Kubernetes components it runs beside the pod.
const fargateOverheadMiB = 256

// fargateSizes are the vCPU/memory combinations Fargate offers, per vCPU:
// the smallest and largest memory in GiB and the step between them.
var fargateSizes = []struct {
	vCPU                    float64
	minGiB, maxGiB, stepGiB float64
}{
	{0.25, 0.5, 2, 0.5}, // 0.5, 1, 2 (1.5 is not offered; see below)
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
	needGiB := float64(memMiB+fargateOverheadMiB) / 1024
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
	return 0, 0, fmt.Errorf("no Fargate size holds %.2f vCPU and %d MiB (+%d MiB)", cpu, memMiB, fargateOverheadMiB)
}

// FargateWasteMiB is the memory a pod pays for and cannot use.
func FargateWasteMiB(cpu float64, memMiB int) (int, error) {
	_, memGiB, err := FargateSize(cpu, memMiB)
	if err != nil {
		return 0, err
	}
	return int(math.Round(memGiB*1024)) - memMiB - fargateOverheadMiB, nil
}
