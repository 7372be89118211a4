package kubecheck

import (
	"testing"

	"nodeless-eks/versions"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
)

func karpenterValidator(t *testing.T) *Validator {
	t.Helper()
	v, err := NewKarpenterValidator()
	require.NoError(t, err, "the embedded Karpenter CRDs must build a validator")
	return v
}

// ltsModule is the karpenter-provider-aws module of the long-term-support
// release a stack may stay on.
func ltsModule(t *testing.T) Module {
	t.Helper()
	m, err := FindModuleAt(KarpenterModule, "v"+versions.KarpenterLTS)
	require.NoError(t, err)
	return m
}

// ltsValidator validates against that release's CRDs.
func ltsValidator(t *testing.T) *Validator {
	t.Helper()
	v, err := NewKarpenterValidatorFrom(ltsModule(t).Dir)
	require.NoError(t, err, "the CRDs of Karpenter %s must build a validator", versions.KarpenterLTS)
	return v
}

// goodNodePool is a minimal NodePool the API server accepts.
func goodNodePool() map[string]any {
	return map[string]any{
		"apiVersion": "karpenter.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": "general"},
		"spec": map[string]any{
			"template": map[string]any{
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
					"requirements": []any{
						map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}},
					},
				},
			},
		},
	}
}

// goodEC2NodeClass is a minimal EC2NodeClass the API server accepts.
func goodEC2NodeClass() map[string]any {
	return map[string]any{
		"apiVersion": "karpenter.k8s.aws/v1",
		"kind":       "EC2NodeClass",
		"metadata":   map[string]any{"name": "default"},
		"spec": map[string]any{
			"role":                       "eks-demo-karpenter-node",
			"amiSelectorTerms":           []any{map[string]any{"alias": "bottlerocket@latest"}},
			"subnetSelectorTerms":        []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": "eks-demo"}}},
			"securityGroupSelectorTerms": []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": "eks-demo"}}},
		},
	}
}

func TestValidatorKnowsKarpenterKinds(t *testing.T) {
	kinds := karpenterValidator(t).Kinds()
	assert.Contains(t, kinds, "karpenter.sh/v1, Kind=NodePool")
	assert.Contains(t, kinds, "karpenter.k8s.aws/v1, Kind=EC2NodeClass")
}

func TestValidatorAcceptsAndDefaults(t *testing.T) {
	v := karpenterValidator(t)
	for _, obj := range []map[string]any{goodNodePool(), goodEC2NodeClass()} {
		res, err := v.Validate(obj)
		require.NoError(t, err)
		assert.True(t, res.Valid(), "%s: %s", obj["kind"], res.Problems())
	}
	res, err := v.Validate(goodNodePool())
	require.NoError(t, err)
	budgets, found, _ := nested(res.Object, "spec", "disruption", "budgets")
	assert.True(t, found, "defaulting fills spec.disruption.budgets")
	assert.NotEmpty(t, budgets)
	consolidateAfter, _, _ := nested(res.Object, "spec", "disruption", "consolidateAfter")
	assert.Equal(t, "0s", consolidateAfter, "defaulting fills consolidateAfter")
}

func TestValidatorRejectsWhatTheAPIServerRejects(t *testing.T) {
	v := karpenterValidator(t)
	tests := []struct {
		name   string
		object func() map[string]any
		want   string // a part of the problem description
	}{
		{"a restricted requirement key", func() map[string]any {
			o := goodNodePool()
			reqs := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			reqs["requirements"] = []any{map[string]any{"key": "karpenter.sh/nodepool", "operator": "In", "values": []any{"x"}}}
			return o
		}, "restricted"},
		{"a malformed duration", func() map[string]any {
			o := goodNodePool()
			o["spec"].(map[string]any)["disruption"] = map[string]any{"consolidateAfter": "one minute"}
			return o
		}, "consolidateAfter"},
		{"an unknown operator", func() map[string]any {
			o := goodNodePool()
			reqs := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			reqs["requirements"] = []any{map[string]any{"key": "kubernetes.io/arch", "operator": "Equals", "values": []any{"amd64"}}}
			return o
		}, "operator"},
		{"an EC2NodeClass without amiSelectorTerms", func() map[string]any {
			o := goodEC2NodeClass()
			delete(o["spec"].(map[string]any), "amiSelectorTerms")
			return o
		}, "amiSelectorTerms"},
		{"an unknown field", func() map[string]any {
			o := goodEC2NodeClass()
			o["spec"].(map[string]any)["instanceProfileName"] = "x"
			return o
		}, "pruned unknown field spec.instanceProfileName"},
		{"an invalid name", func() map[string]any {
			o := goodNodePool()
			o["metadata"] = map[string]any{"name": "General_Pool"}
			return o
		}, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := v.Validate(tt.object())
			require.NoError(t, err)
			assert.False(t, res.Valid(), "the API server would not store this object as sent")
			assert.Contains(t, res.Problems(), tt.want)
		})
	}
}

func TestValidatorDoesNotModifyItsInput(t *testing.T) {
	obj := goodNodePool()
	before := runtime.DeepCopyJSON(obj)
	_, err := karpenterValidator(t).Validate(obj)
	require.NoError(t, err)
	assert.Equal(t, before, obj)
}

func nested(obj map[string]any, path ...string) (any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if cur, ok = m[p]; !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}
