package kubecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"nodeless-eks/versions"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// goldenValues are the karpenter release values the program registers
// under mocks (the main package's tests keep the file equal to them).
const goldenValues = "../../testdata/karpenter-values.golden.json"

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v), "parsing %s", path)
	return v
}

func karpenterModule(t *testing.T) Module {
	t.Helper()
	m, err := FindModule(KarpenterModule)
	require.NoError(t, err)
	return m
}

func TestChartVersionDefaultEqualsKarpenterModule(t *testing.T) {
	m := karpenterModule(t)
	assert.Equal(t, "v"+versions.Karpenter, m.Version,
		"the default chart version must equal the karpenter-provider-aws module whose chart and CRDs the tests validate against")
}

// deploymentProblems checks a rendered karpenter chart against the values
// it was rendered with; it returns every problem it finds.
func deploymentProblems(r *Rendered, values map[string]any) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	settings, _ := values["settings"].(map[string]any)
	sa, _ := values["serviceAccount"].(map[string]any)
	annotations, _ := sa["annotations"].(map[string]any)
	roleArn, _ := annotations["eks.amazonaws.com/role-arn"].(string)

	dep := r.Find("Deployment", "karpenter")
	if dep == nil {
		return []string{"no Deployment named karpenter"}
	}
	spec := dep.Object["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)

	if got, _, _ := unstructured.NestedString(pod, "dnsPolicy"); got != "Default" {
		bad("dnsPolicy is %q, want Default: CoreDNS runs on nodes Karpenter has yet to launch", got)
	}
	if got, _, _ := unstructured.NestedInt64(spec, "replicas"); got != 2 {
		bad("replicas is %d, want 2", got)
	}
	if got, _, _ := unstructured.NestedString(pod, "serviceAccountName"); got != "karpenter" {
		bad("serviceAccountName is %q, want karpenter (the role trusts system:serviceaccount:karpenter:karpenter)", got)
	}
	if dep.GetNamespace() != "karpenter" {
		bad("Deployment namespace is %q, want karpenter (the Fargate profile's namespace)", dep.GetNamespace())
	}
	// A new Kubernetes minor must change the pod template, or Fargate
	// pods keep the kubelet they started with.
	podAnnotations, _ := values["podAnnotations"].(map[string]any)
	wantMinor, _ := podAnnotations["nodeless-eks/kubernetes-version"].(string)
	gotMinor, _, _ := unstructured.NestedString(spec, "template", "metadata", "annotations", "nodeless-eks/kubernetes-version")
	if wantMinor == "" || gotMinor != wantMinor {
		bad("pod template annotation nodeless-eks/kubernetes-version is %q, want the cluster's minor %q", gotMinor, wantMinor)
	}

	spread, _, _ := unstructured.NestedSlice(pod, "topologySpreadConstraints")
	zoneSpread := false
	for _, c := range spread {
		if c.(map[string]any)["topologyKey"] == "topology.kubernetes.io/zone" {
			zoneSpread = true
		}
	}
	if !zoneSpread {
		bad("no topology spread over topology.kubernetes.io/zone")
	}

	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	if len(containers) != 1 {
		bad("%d containers, want 1: Fargate sizes the pod from the sum of their requests", len(containers))
	}
	for _, c := range containers {
		c := c.(map[string]any)
		env := map[string]string{}
		list, _, _ := unstructured.NestedSlice(c, "env")
		for _, e := range list {
			e := e.(map[string]any)
			if v, ok := e["value"].(string); ok {
				env[e["name"].(string)] = v
			}
		}
		for name, want := range map[string]any{
			"CLUSTER_NAME":       settings["clusterName"],
			"CLUSTER_ENDPOINT":   settings["clusterEndpoint"],
			"INTERRUPTION_QUEUE": settings["interruptionQueue"],
			// Custom networking leaves the primary ENI without pod addresses.
			"RESERVED_ENIS": "1",
		} {
			if env[name] == "" || env[name] != want {
				bad("container %s: env %s is %q, want %q", c["name"], name, env[name], want)
			}
		}
		// Fargate has no IMDS, where the controller looks for its region
		// when the SDK has none (pkg/operator/operator.go, NewOperator).
		if region := env["AWS_REGION"]; strings.Count(region, "-") < 2 {
			bad("container %s: env AWS_REGION is %q, want the cluster's region: Fargate has no IMDS to ask", c["name"], region)
		}
		// settings.featureGates reach the controller as one FEATURE_GATES list.
		if repair, ok := settings["featureGates"].(map[string]any)["nodeRepair"].(bool); ok {
			if want := fmt.Sprintf("NodeRepair=%t", repair); !strings.Contains(env["FEATURE_GATES"], want) {
				bad("container %s: FEATURE_GATES %q lacks %s", c["name"], env["FEATURE_GATES"], want)
			}
		} else {
			bad("values settings.featureGates.nodeRepair is not set; the chart would leave node repair off")
		}
		// The controller policy grants no ec2:RebootInstances, which
		// rebootForRepair needs (the chart's values.yaml), and the
		// program's kubelet check reads every reservation as a quantity,
		// as Karpenter does with NodeClassCEL off.
		for _, gate := range []string{"RebootForRepair=false", "NodeClassCEL=false"} {
			if !strings.Contains(env["AWS_FEATURE_GATES"], gate) {
				bad("container %s: AWS_FEATURE_GATES %q lacks %s", c["name"], env["AWS_FEATURE_GATES"], gate)
			}
		}
		requests, _, _ := unstructured.NestedStringMap(c, "resources", "requests")
		limits, _, _ := unstructured.NestedStringMap(c, "resources", "limits")
		if len(requests) == 0 || fmt.Sprint(requests) != fmt.Sprint(limits) {
			bad("container %s: requests %v must equal limits %v (Fargate bills the larger)", c["name"], requests, limits)
		}
	}

	if sa := r.Find("ServiceAccount", "karpenter"); sa == nil {
		bad("no ServiceAccount named karpenter")
	} else if got := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]; got == "" || got != roleArn {
		bad("ServiceAccount role-arn annotation is %q, want %q", got, roleArn)
	}

	if pdb := r.Find("PodDisruptionBudget", "karpenter"); pdb == nil {
		bad("no PodDisruptionBudget named karpenter")
	} else {
		selector, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		labels, _, _ := unstructured.NestedStringMap(spec, "template", "metadata", "labels")
		for k, v := range selector {
			if labels[k] != v {
				bad("PodDisruptionBudget selects %s=%s, which the controller pods do not carry", k, v)
			}
		}
		if len(selector) == 0 {
			bad("PodDisruptionBudget selects nothing")
		}
	}
	return problems
}

func TestKarpenterChartRendersWithProgramValues(t *testing.T) {
	chartDir := filepath.Join(karpenterModule(t).Dir, "charts", "karpenter")
	values := readJSON(t, goldenValues)

	// The default minor, and the newest the pinned Karpenter runs on (1.37,
	// which waits only for its EKS calendar row).
	for _, minor := range []int{versions.DefaultKubernetesMinor, versions.MaxKubernetesMinor} {
		t.Run(fmt.Sprintf("the registered values render a controller that would start on 1.%d", minor), func(t *testing.T) {
			r, err := RenderChart(chartDir, "karpenter", "karpenter", fmt.Sprintf("1.%d", minor), values)
			require.NoError(t, err)
			t.Logf("rendered chart %s %s from module %s@v%s (the module ships its chart with an older stamp)",
				r.Chart.Name, r.Chart.Version, KarpenterModule, versions.Karpenter)
			assert.Empty(t, deploymentProblems(r, values))
		})
	}

	t.Run("every values key exists in the chart", func(t *testing.T) {
		defaults, err := ChartDefaults(chartDir)
		require.NoError(t, err)
		unknown := UnknownValues(defaults, values)
		sort.Strings(unknown)
		assert.Empty(t, unknown, "keys the chart does not know render nothing")
	})
}

func TestChartChecksCatchWrongValues(t *testing.T) {
	chartDir := filepath.Join(karpenterModule(t).Dir, "charts", "karpenter")
	defaults, err := ChartDefaults(chartDir)
	require.NoError(t, err)

	tests := []struct {
		name   string
		mutate func(v map[string]any)
	}{
		{"interruptionQueueName instead of interruptionQueue", func(v map[string]any) {
			s := v["settings"].(map[string]any)
			s["interruptionQueueName"] = s["interruptionQueue"]
			delete(s, "interruptionQueue")
		}},
		{"dnsPolicy misspelt", func(v map[string]any) {
			v["dnspolicy"] = v["dnsPolicy"]
			delete(v, "dnsPolicy")
		}},
		{"role annotation on the wrong key", func(v map[string]any) {
			sa := v["serviceAccount"].(map[string]any)
			sa["annotation"] = sa["annotations"]
			delete(sa, "annotations")
		}},
		{"resources at the top level", func(v map[string]any) {
			v["resources"] = v["controller"].(map[string]any)["resources"]
			delete(v, "controller")
		}},
		{"the region as a top-level env, which the chart does not read", func(v map[string]any) {
			c := v["controller"].(map[string]any)
			v["env"] = c["env"]
			delete(c, "env")
		}},
		{"the minor annotation on the Deployment instead of its pods", func(v map[string]any) {
			v["annotations"] = v["podAnnotations"]
			delete(v, "podAnnotations")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := readJSON(t, goldenValues)
			tt.mutate(values)
			r, err := RenderChart(chartDir, "karpenter", "karpenter", "1.36", values)
			require.NoError(t, err)
			problems := append(deploymentProblems(r, values), UnknownValues(defaults, values)...)
			assert.NotEmpty(t, problems, "a wrong values key must be caught")
		})
	}
}
