package kubecheck

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/badpools"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegisteredNodeObjectsPassTheCRDs validates every EC2NodeClass and
// NodePool that the program registers under mocks (the main package keeps
// these golden files equal to the registrations).
func TestRegisteredNodeObjectsPassTheCRDs(t *testing.T) {
	v := karpenterValidator(t)
	for _, file := range []string{"nodepools-dev.golden.json", "nodepools-multipool.golden.json"} {
		raw, err := os.ReadFile("../../testdata/" + file)
		require.NoError(t, err)
		var objects []map[string]any
		require.NoError(t, json.Unmarshal(raw, &objects))
		require.NotEmpty(t, objects, file)
		for _, obj := range objects {
			name := obj["kind"].(string) + "/" + obj["metadata"].(map[string]any)["name"].(string)
			t.Run(file+" "+name, func(t *testing.T) {
				res, err := v.Validate(obj)
				require.NoError(t, err)
				assert.Empty(t, res.Pruned, "the API server would drop these fields")
				assert.Empty(t, res.Errors, "the API server would reject the object")
			})
		}
	}
}

// objectsFor builds the objects a configuration would produce.
func objectsFor(t *testing.T, row badpools.Row) (map[string]spec.Pool, map[string]spec.NodeClass, []map[string]any) {
	t.Helper()
	pools, classes, objects, err := ObjectsFor(row)
	require.NoError(t, err)
	return pools, classes, objects
}

// TestCRDsAgreeWithConfigValidation: every pool configuration that config
// validation rejects, the API server would have rejected too, except where
// the row says why a CRD cannot see the problem.
func TestCRDsAgreeWithConfigValidation(t *testing.T) {
	rows, err := badpools.Rows()
	require.NoError(t, err)
	v := karpenterValidator(t)

	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			pools, classes, objects := objectsFor(t, row)
			err := spec.Validate(pools, classes, row.Production)
			require.Error(t, err, "config validation must reject it")
			assert.Contains(t, err.Error(), row.Key)

			var problems []string
			for _, obj := range objects {
				res, err := v.Validate(obj)
				require.NoError(t, err)
				if !res.Valid() {
					problems = append(problems, res.Problems())
				}
			}
			if row.CRDCannotSee != "" {
				assert.Empty(t, problems, "the row says the CRDs cannot see this (%s), but they do; drop crdCannotSee", row.CRDCannotSee)
				return
			}
			assert.NotEmpty(t, problems, "the API server would have accepted what config validation rejects")
			t.Logf("the API server would say: %s", strings.Join(problems, "; "))
		})
	}
}

// TestGoodConfigsPassBoth: the defaults and the documented second pool pass
// config validation and the CRDs alike.
func TestGoodConfigsPassBoth(t *testing.T) {
	v := karpenterValidator(t)
	rows := []badpools.Row{
		{Name: "the defaults"},
		{Name: "an on-demand amd64 nitro pool", NodePools: json.RawMessage(`{"general": {}, "on-demand": {
			"requirements": {"arch": ["amd64"], "capacityTypes": ["on-demand"], "hypervisors": ["nitro"], "cpus": [4, 8, 16, 32]},
			"limits": {"cpu": "1000"}, "weight": 10}}`)},
		{Name: "al2023 with a pinned version", Production: true,
			NodeClasses: json.RawMessage(`{"default": {"amiAlias": "al2023@v20250101", "volumeSize": "40Gi"}}`)},
		{Name: "al2023 with every kubelet setting", NodeClasses: json.RawMessage(`{"default": {"amiAlias": "al2023@latest", "kubelet": {
			"maxPods": 110, "podsPerCore": 10, "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi", "pid": "1000"},
			"kubeReserved": {"cpu": "200m", "memory": "500Mi"}, "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
			"evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "1m30s"},
			"evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80, "cpuCFSQuota": true}}}`)},
		{Name: "bottlerocket with kubelet settings it passes on", NodeClasses: json.RawMessage(`{"default": {"kubelet": {
			"maxPods": 58, "kubeReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"}}}}`)},
	}
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			pools, classes, objects := objectsFor(t, row)
			require.NoError(t, spec.Validate(pools, classes, row.Production))
			for _, obj := range objects {
				res, err := v.Validate(obj)
				require.NoError(t, err)
				assert.True(t, res.Valid(), "%s %v: %s", obj["kind"], obj["metadata"], res.Problems())
			}
		})
	}
}

// TestKubeletKeysTheCRDPrunes: a kubelet key Karpenter's CRD does not
// have, or a known one misspelt, is pruned by the API server, and the
// class is stored without it: nothing says the setting never reached a
// node. The program's config decoder refuses it, naming the key
// (config_test.go, "unknown kubelet key").
func TestKubeletKeysTheCRDPrunes(t *testing.T) {
	v := karpenterValidator(t)
	_, _, objects := objectsFor(t, badpools.Row{Name: "kubelet", NodeClasses: json.RawMessage(`{"default": {"kubelet": {"maxPods": 58}}}`)})
	for _, obj := range objects {
		if obj["kind"] != "EC2NodeClass" {
			continue
		}
		obj["spec"].(map[string]any)["kubelet"].(map[string]any)["maxPod"] = 110
		res, err := v.Validate(obj)
		require.NoError(t, err)
		assert.Empty(t, res.Errors, "the API server refuses nothing")
		assert.Equal(t, []string{"spec.kubelet.maxPod"}, res.Pruned, "it drops the key")
	}
}
