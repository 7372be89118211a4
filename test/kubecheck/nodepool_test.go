package kubecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/badpools"
	"nodeless-eks/versions"

	karpv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
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

// karpenterLine is a Karpenter release a stack may run: its minor (what
// the program's validation is told) and its CRDs.
type karpenterLine struct {
	version string
	minor   int
	crds    *Validator
}

// lines are the pinned release, with the CRDs its module embeds, and the
// long-term-support one, with the CRD files of its module.
func lines(t *testing.T) []karpenterLine {
	return []karpenterLine{{versions.Karpenter, versions.KarpenterMinor(versions.Karpenter), karpenterValidator(t)},
		{versions.KarpenterLTS, versions.KarpenterMinor(versions.KarpenterLTS), ltsValidator(t)}}
}

// TestCRDsAgreeWithConfigValidation: every pool configuration that config
// validation rejects, the API server would have rejected too, except where
// the row says why a CRD cannot see the problem: on 1.14 its CRDs check
// spec.kubelet; from 1.15 they take any, and the controller refuses a bad
// one after the apply (TestKarpenterAgreesOnKubelet).
func TestCRDsAgreeWithConfigValidation(t *testing.T) {
	rows, err := badpools.Rows()
	require.NoError(t, err)
	for _, line := range lines(t) {
		for _, row := range rows {
			t.Run(line.version+" "+row.Name, func(t *testing.T) {
				pools, classes, objects := objectsFor(t, row)
				err := spec.Validate(pools, classes, row.Production, line.minor)
				if row.KarpenterVersion != "" && row.KarpenterVersion != line.version {
					require.NoError(t, err, "the row is refused only on Karpenter %s", row.KarpenterVersion)
					return
				}
				require.Error(t, err, "config validation must reject it")
				assert.Contains(t, err.Error(), row.Key)

				var problems []string
				for _, obj := range objects {
					res, err := line.crds.Validate(obj)
					require.NoError(t, err)
					if !res.Valid() {
						problems = append(problems, res.Problems())
					}
				}
				cannotSee := row.CRDCannotSee
				if row.Kubelet() && line.minor >= 15 {
					cannotSee = "the CRD keeps spec.kubelet open"
				}
				if cannotSee != "" {
					assert.Empty(t, problems, "the row says the CRDs cannot see this (%s), but they do; drop crdCannotSee", cannotSee)
					return
				}
				assert.NotEmpty(t, problems, "the API server would have accepted what config validation rejects")
				t.Logf("the API server would say: %s", strings.Join(problems, "; "))
			})
		}
	}
}

// goodRows are the defaults, the documented second pool, and classes with
// every kubelet setting the program takes.
var goodRows = []badpools.Row{
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
		"maxPods": 58, "kubeReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"},
		"evictionSoft": {"nodefs.available": "15%"}, "evictionSoftGracePeriod": {"nodefs.available": "2m"},
		"imageGCHighThresholdPercent": 90, "cpuCFSQuota": false}}}`)},
}

// TestGoodConfigsPassBoth: the good rows pass config validation and the
// CRDs alike, on either release.
func TestGoodConfigsPassBoth(t *testing.T) {
	for _, line := range lines(t) {
		for _, row := range goodRows {
			t.Run(line.version+" "+row.Name, func(t *testing.T) {
				pools, classes, objects := objectsFor(t, row)
				require.NoError(t, spec.Validate(pools, classes, row.Production, line.minor))
				for _, obj := range objects {
					res, err := line.crds.Validate(obj)
					require.NoError(t, err)
					assert.True(t, res.Valid(), "%s %v: %s", obj["kind"], obj["metadata"], res.Problems())
				}
			})
		}
	}
}

// karpenterRefuses is what Karpenter 1.15's controller says of an
// EC2NodeClass's spec.kubelet, in the order it checks
// (pkg/controllers/nodeclass/validation.go, Reconcile): the structural
// check (pkg/apis/v1 ValidateKubeletConfig), a CEL expression with the
// NodeClassCEL gate off (the chart test checks the program leaves it
// off), then validateKubeletFieldsSupported: on a family
// that does not render the raw configuration (all but AL2023 and Custom),
// a key Karpenter does not map (UnmanagedKubeletFields), podsPerCore where
// the family has no setting for it (Bottlerocket), more than one
// clusterDNS. "" when it accepts; any answer makes ValidationSucceeded
// False.
func karpenterRefuses(t *testing.T, obj map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	var class karpv1.EC2NodeClass
	require.NoError(t, json.Unmarshal(raw, &class))
	kc := class.Spec.Kubelet
	if errs := karpv1.ValidateKubeletConfig(kc); len(errs) > 0 {
		return fmt.Sprint(errs)
	}
	parsed, err := karpv1.ParseKubeletConfig(kc)
	if err != nil {
		return err.Error()
	}
	if parsed.HasExpressions() {
		return "spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled"
	}
	family := class.AMIFamily()
	if len(kc) == 0 || family == karpv1.AMIFamilyAL2023 || family == karpv1.AMIFamilyCustom {
		return ""
	}
	unsupported := karpv1.UnmanagedKubeletFields(kc)
	if parsed.PodsPerCore != nil && family == karpv1.AMIFamilyBottlerocket {
		unsupported = append(unsupported, "podsPerCore")
	}
	if len(unsupported) > 0 {
		return fmt.Sprintf("spec.kubelet has fields not applied by the %s AMI family: %v", family, unsupported)
	}
	if len(parsed.ClusterDNS) > 1 {
		return "spec.kubelet.clusterDNS: only one entry"
	}
	return ""
}

// TestKarpenterFamilyFlags holds karpenterRefuses' model of the AMI
// families to the module's source: AL2023 alone renders every kubelet
// field, and Bottlerocket has no podsPerCore (FeatureFlags).
func TestKarpenterFamilyFlags(t *testing.T) {
	dir := filepath.Join(karpenterModule(t).Dir, "pkg", "providers", "amifamily")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var arbitrary []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		if !strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`(?m)^\s*[^/\s].*SupportsArbitraryKubeletConfig\s*[:=]\s*true`).Match(src) {
			arbitrary = append(arbitrary, filepath.Base(f))
		}
	}
	assert.Equal(t, []string{"al2023.go"}, arbitrary, "the families that render every kubelet field")
	src, err := os.ReadFile(filepath.Join(dir, "bottlerocket.go"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*PodsPerCoreEnabled:\s+false,`, string(src))
}

// TestKarpenterAgreesOnKubelet: on the pinned release, the program refuses
// exactly the kubelet settings Karpenter's controller refuses, for the
// class's AMI family, but where the row says why Karpenter takes what the
// kubelet or Karpenter's capacity arithmetic would then fail on; and the
// CRD alone takes every one of them, so without the program's check the
// apply succeeds and the class never turns Ready.
func TestKarpenterAgreesOnKubelet(t *testing.T) {
	rows, err := badpools.Rows()
	require.NoError(t, err)
	crds := karpenterValidator(t)
	for _, row := range append(rows, goodRows...) {
		if row.Key != "" && !row.Kubelet() {
			continue
		}
		t.Run(row.Name, func(t *testing.T) {
			pools, classes, objects := objectsFor(t, row)
			programErr := spec.Validate(pools, classes, row.Production, versions.KarpenterMinor(versions.Karpenter))
			checked := 0
			defer func() { assert.NotZero(t, checked, "no EC2NodeClass to check") }()
			for _, obj := range objects {
				if obj["kind"] != "EC2NodeClass" {
					continue
				}
				checked++
				res, err := crds.Validate(obj)
				require.NoError(t, err)
				assert.True(t, res.Valid(), "the 1.15 CRD takes any spec.kubelet: %s", res.Problems())
				refused := karpenterRefuses(t, obj)
				switch {
				case programErr == nil:
					assert.Empty(t, refused, "the program takes what Karpenter refuses")
				case row.KarpenterAccepts != "":
					assert.Empty(t, refused, "the row says Karpenter takes it (%s), but it refuses; drop karpenterAccepts", row.KarpenterAccepts)
				default:
					assert.NotEmpty(t, refused, "Karpenter takes what the program refuses (%v)", programErr)
					t.Logf("Karpenter would say: %s", refused)
				}
			}
		})
	}
}

// TestKubeletKeysTheCRDPrunes: a kubelet key Karpenter does not know, or
// a known one misspelt, is pruned by 1.14's API server, and the class is
// stored without it: nothing says the setting never reached a node. 1.15's
// keeps it, and its controller refuses the class. The program's config
// decoder refuses it, naming the key (config_test.go, "unknown kubelet
// key").
func TestKubeletKeysTheCRDPrunes(t *testing.T) {
	_, _, objects := objectsFor(t, badpools.Row{Name: "kubelet", NodeClasses: json.RawMessage(`{"default": {"kubelet": {"maxPods": 58}}}`)})
	for _, obj := range objects {
		if obj["kind"] != "EC2NodeClass" {
			continue
		}
		obj["spec"].(map[string]any)["kubelet"].(map[string]any)["maxPod"] = 110
		res, err := ltsValidator(t).Validate(obj)
		require.NoError(t, err)
		assert.Empty(t, res.Errors, "1.14's API server refuses nothing")
		assert.Equal(t, []string{"spec.kubelet.maxPod"}, res.Pruned, "it drops the key")

		res, err = karpenterValidator(t).Validate(obj)
		require.NoError(t, err)
		assert.True(t, res.Valid(), "1.15's API server keeps it: %s", res.Problems())
		assert.Contains(t, karpenterRefuses(t, obj), `unknown field "maxPod"`, "1.15's controller refuses it")
	}
}
