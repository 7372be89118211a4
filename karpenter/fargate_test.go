package karpenter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fargate list prices (Linux/x86; the same in us-east-1 and eu-west-1) that the
// README's cost table and docs/design.md use.
const (
	usEast1VCPUHour = 0.04048
	usEast1GBHour   = 0.004445
)

func TestFargateSize(t *testing.T) {
	tests := []struct {
		name     string
		cpu      float64
		memMiB   int
		wantVCPU float64
		wantGiB  float64
	}{
		{"a quarter vCPU with 256 MiB fits the smallest size", 0.25, 256, 0.25, 0.5},
		{"1.5 GB is not offered at a quarter vCPU", 0.25, 1100, 0.25, 2},
		{"1 vCPU and 1 GiB round up to 2 GB", 1, 1024, 1, 2},
		{"1 vCPU and 1792 MiB fill 2 GB exactly", 1, 1792, 1, 2},
		{"the overhead can push memory to the next step", 1, 1800, 1, 3},
		{"more cpu than a size offers moves up a size", 1.5, 512, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vcpu, gib, err := FargateSize(tt.cpu, tt.memMiB)
			require.NoError(t, err)
			assert.Equal(t, tt.wantVCPU, vcpu)
			assert.Equal(t, tt.wantGiB, gib)
		})
	}
	_, _, err := FargateSize(32, 1024)
	assert.Error(t, err, "no size has 32 vCPU")
}

func TestControllerSizes(t *testing.T) {
	tests := []struct {
		name              string
		size              ControllerResources
		wantVCPU, wantGiB float64
		maxMonthlyUSD     float64
	}{
		{"the small size fills 0.25 vCPU / 1 GB and two replicas cost at most $22 a month", SmallController, 0.25, 1, 22},
		{"the production size fills 1 vCPU / 2 GB", ProductionController, 1, 2, 72.10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.size.Validate(), "no unused capacity is paid for")
			cpu, mem, err := tt.size.Parse()
			require.NoError(t, err)
			vcpu, gib, err := FargateSize(cpu, mem)
			require.NoError(t, err)
			assert.Equal(t, tt.wantVCPU, vcpu)
			assert.Equal(t, tt.wantGiB, gib)
			cost, err := tt.size.MonthlyCostUSD(ControllerReplicas, usEast1VCPUHour, usEast1GBHour)
			require.NoError(t, err)
			assert.LessOrEqual(t, cost, tt.maxMonthlyUSD, "two replicas for 730 h")
		})
	}
	small, _ := SmallController.MonthlyCostUSD(ControllerReplicas, usEast1VCPUHour, usEast1GBHour)
	prod, _ := ProductionController.MonthlyCostUSD(ControllerReplicas, usEast1VCPUHour, usEast1GBHour)
	assert.InDelta(t, 21.26, small, 0.005, "the README's and docs/design.md's figure: 2 × (0.25 × 0.04048 + 1 × 0.004445) × 730")
	assert.InDelta(t, 72.08, prod, 0.005, "docs/design.md's figure: 2 × (1 × 0.04048 + 2 × 0.004445) × 730")
}

func TestControllerResourcesRejectWaste(t *testing.T) {
	tests := []struct {
		name string
		size ControllerResources
		want string
	}{
		{"1 GiB on 1 vCPU pays for 2 GB", ControllerResources{CPU: "1", Memory: "1Gi"}, `ask for cpu "1" and memory 1792Mi`},
		{"512Mi on a quarter vCPU pays for 1 GB", ControllerResources{CPU: "250m", Memory: "512Mi"}, `ask for cpu "0.25" and memory 768Mi`},
		{"300m cpu is billed as half a vCPU", ControllerResources{CPU: "300m", Memory: "768Mi"}, "0.5 vCPU / 1 GB size and leave part of it unused"},
		{"too little memory", ControllerResources{CPU: "250m", Memory: "256Mi"}, "at least 512Mi"},
		{"no such size", ControllerResources{CPU: "32", Memory: "64Gi"}, "no Fargate size holds 32 vCPU"},
		{"cpu in a unit Kubernetes does not know", ControllerResources{CPU: "1 core", Memory: "1792Mi"}, `cpu "1 core": want cores`},
		{"memory in bytes", ControllerResources{CPU: "1", Memory: "1879048192"}, `memory "1879048192": want Mi or Gi`},
		{"no cpu", ControllerResources{CPU: "0", Memory: "1792Mi"}, `cpu "0": want more than 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.size.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
