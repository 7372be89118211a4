package karpenter

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The Fargate sizing rule, kept with the tests that hold the controller's
// resources to it.

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

func TestFargateSize(t *testing.T) {
	tests := []struct {
		name         string
		cpu          float64
		memMiB       int
		wantVCPU     float64
		wantGiB      float64
		wantWasteMiB int
	}{
		{"a quarter vCPU with 256 MiB fits the smallest size", 0.25, 256, 0.25, 0.5, 0},
		{"1.5 GB is not offered at a quarter vCPU", 0.25, 1100, 0.25, 2, 2048 - 1100 - 256},
		{"1 vCPU and 1 GiB round up to 2 GB", 1, 1024, 1, 2, 768},
		{"1 vCPU and 1792 MiB fill 2 GB exactly", 1, 1792, 1, 2, 0},
		{"the overhead can push memory to the next step", 1, 1800, 1, 3, 3072 - 1800 - 256},
		{"more cpu than a size offers moves up a size", 1.5, 512, 2, 4, 4096 - 512 - 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vcpu, gib, err := FargateSize(tt.cpu, tt.memMiB)
			require.NoError(t, err)
			assert.Equal(t, tt.wantVCPU, vcpu)
			assert.Equal(t, tt.wantGiB, gib)
			waste, err := FargateWasteMiB(tt.cpu, tt.memMiB)
			require.NoError(t, err)
			assert.Equal(t, tt.wantWasteMiB, waste)
		})
	}
	_, _, err := FargateSize(32, 1024)
	assert.Error(t, err, "no size has 32 vCPU")
}

func TestControllerFillsAFargateSize(t *testing.T) {
	cpu := resource.MustParse(ControllerCPU)
	mem := resource.MustParse(ControllerMemory)
	vcpu, gib, err := FargateSize(float64(cpu.MilliValue())/1000, int(mem.Value()/(1<<20)))
	require.NoError(t, err)
	waste, err := FargateWasteMiB(float64(cpu.MilliValue())/1000, int(mem.Value()/(1<<20)))
	require.NoError(t, err)
	assert.Zero(t, waste, "the controller pays for %.2f vCPU / %.1f GB and must use all of it", vcpu, gib)
	assert.Equal(t, 1.0, vcpu)
	assert.Equal(t, 2.0, gib)
}
