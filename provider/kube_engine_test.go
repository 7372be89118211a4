package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"nodeless-eks/addons"
	"nodeless-eks/cluster"
	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/k8syaml"
	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/apiserver"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Kubernetes engine tier: the program's own Kubernetes-side
// constructors (the karpenter-crd release, the node pools and classes, the
// load balancer controller's CRDs) run through the real engine and the real
// pulumi-kubernetes provider plugin, v4.25.0, which test/k8sprovider builds
// from the module proxy, against the real API server with
// kube-controller-manager's garbage collector (test/apiserver). Without
// the plugin the tier skips, unless NODELESS_EKS_KUBE_ENGINE is
// "required" (.ci/run sets it). What it cannot run: the AWS side (no aws,
// eks or command plugin can be had: its outputs are stand-ins here), the
// releases that wait for pods (the controller's: no node runs them), and
// the LB controller's and Argo CD's charts, which cannot be fetched.
const (
	envKubeProvider       = "NODELESS_EKS_KUBERNETES_PROVIDER"
	envKubeEngineRequired = "NODELESS_EKS_KUBE_ENGINE"
	// kubeProviderVersion is what test/k8sprovider builds: the newest
	// provider module the proxy serves. The SDK (go.mod) asks for
	// kubeSDKVersion; the engine warns and runs it.
	kubeProviderVersion = "4.25.0"
	kubeSDKVersion      = "4.32.0"
)

// kubeProvider is the plugin's path.
func kubeProvider(t *testing.T) string {
	return apiserver.Cached(t, envKubeProvider, envKubeEngineRequired,
		filepath.Join("pulumi-resource-kubernetes-v"+kubeProviderVersion, "pulumi-resource-kubernetes"), "test/k8sprovider/install.sh")
}

// karpenterChart is the karpenter-crd chart of the pinned Karpenter, from
// its module in the module cache (test/ requires it), fetched outside any
// module so that no go.mod changes.
func karpenterChart(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/aws/karpenter-provider-aws@v"+versions.Karpenter)
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var m struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.Empty(t, m.Error)
	return filepath.Join(m.Dir, "charts", "karpenter-crd")
}

// lbCRD is a minimal CRD of the load balancer controller's kind, with
// listKind as given: the controller's crds.yaml cannot be fetched here.
func lbCRD(listKind string) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "targetgroupbindings.elbv2.k8s.aws"},
		"spec": map[string]any{"group": "elbv2.k8s.aws", "scope": "Namespaced",
			"names": map[string]any{"kind": "TargetGroupBinding", "listKind": listKind, "plural": "targetgroupbindings", "singular": "targetgroupbinding"},
			"versions": []map[string]any{{"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}
}

// karpenterStandIn sets Ready on every EC2NodeClass and NodePool, at its
// generation, where Karpenter would: the pools' pulumi.com/waitFor holds
// them until it does.
func karpenterStandIn(t *testing.T, s *apiserver.Server) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, collection := range []string{"/apis/karpenter.k8s.aws/v1/ec2nodeclasses", "/apis/karpenter.sh/v1/nodepools"} {
				status, body, err := s.Do(ctx, http.MethodGet, collection, "", nil)
				var list struct {
					Items []struct {
						Metadata struct {
							Name       string `json:"name"`
							Generation int64  `json:"generation"`
						} `json:"metadata"`
						Status struct {
							Conditions []struct {
								Type               string `json:"type"`
								ObservedGeneration int64  `json:"observedGeneration"`
							} `json:"conditions"`
						} `json:"status"`
					} `json:"items"`
				}
				if err != nil || status != http.StatusOK || json.Unmarshal(body, &list) != nil {
					continue
				}
				for _, o := range list.Items {
					if len(o.Status.Conditions) == 1 && o.Status.Conditions[0].ObservedGeneration == o.Metadata.Generation {
						continue
					}
					ready := map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
						"observedGeneration": o.Metadata.Generation, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
					_, _, _ = s.Do(ctx, http.MethodPatch, collection+"/"+o.Metadata.Name+"/status", "application/merge-patch+json",
						map[string]any{"status": map[string]any{"conditions": []any{ready}}})
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// TestKubernetesSideUnderTheRealEngine: up, a second up and a refresh that
// change nothing, an out-of-band edit that refresh reports and `up
// --refresh` takes back, the CRD takeover against a Helm-owned CRD, a class
// with kubelet settings the program refuses and the server stores, the
// destroy cleanup run by the engine against what the provider created, and
// a destroy that leaves nothing but the release's namespace. The destroy
// deletes with Foreground propagation, whose finalizer only the garbage
// collector removes: without kube-controller-manager it waits forever.
func TestKubernetesSideUnderTheRealEngine(t *testing.T) {
	plugin := kubeProvider(t)
	home, path := installed(t)
	require.NoError(t, os.Symlink(plugin, filepath.Join(path, "pulumi-resource-kubernetes")))
	s := apiserver.NeedWithCollector(t)
	chart := karpenterChart(t)
	stop := karpenterStandIn(t, s)
	defer stop()

	// What Helm left: the controller's CRD, applied by an earlier chart
	// install (field manager "helm") with another listKind.
	s.Must(t, http.MethodPatch, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/targetgroupbindings.elbv2.k8s.aws?fieldManager=helm&force=true",
		"application/apply-patch+yaml", lbCRD("TargetGroupBindingHelmList"))
	crdFile := filepath.Join(t.TempDir(), "crds.yaml")
	raw, err := json.Marshal(lbCRD("TargetGroupBindingList"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(crdFile, raw, 0o600))

	const label = "tier"
	pools, classes := spec.Resolve(nil, nil)
	report := filepath.Join(t.TempDir(), "destroy-cleanup.log")
	type variant struct{ takeOver, badClass bool }
	program := func(v variant) pulumi.RunFunc {
		return func(ctx *pulumi.Context) error {
			k8s, err := kubernetes.NewProvider(ctx, "k8s", cluster.KubernetesProviderArgs(pulumi.String(s.Kubeconfig(""))))
			if err != nil {
				return err
			}
			crds, err := karpenter.NewCRDRelease(ctx, "karpenter-crd", chart, "", pulumi.Provider(k8s))
			if err != nil {
				return err
			}
			var lb pulumi.Resource
			if v.takeOver {
				lb, err = addons.NewLoadBalancerControllerCRDs(ctx, "lb-crds", []string{crdFile}, false, pulumi.Provider(k8s))
			} else {
				lb, err = k8syaml.NewConfigGroup(ctx, "lb-crds", &k8syaml.ConfigGroupArgs{Files: pulumi.ToStringArray([]string{crdFile})},
					pulumi.Provider(k8s))
			}
			if err != nil {
				return err
			}
			nodeClasses := classes
			if v.badClass {
				nodeClasses = map[string]spec.NodeClass{"default": classes["default"], "bad": badKubeletClass(classes["default"])}
			}
			np, err := nodepool.New(ctx, "nodes", &nodepool.Args{ClusterName: "tier", StackLabel: label, Pools: pools, Classes: nodeClasses,
				NodeRoleName: pulumi.String("tier-karpenter-node"), SubnetIDs: pulumi.ToStringArray([]string{"subnet-0a1b2c3d"}),
				SecurityGroupID: pulumi.String("sg-0a1b2c3d"), Provider: k8s, KarpenterRelease: crds,
				NodePrerequisites: []pulumi.Resource{crds}, VpcCni: lb})
			if err != nil {
				return err
			}
			settings := pulumi.StringMap{cleanup.EnvKubeconfig: pulumi.String(s.Kubeconfig("")),
				cleanup.EnvOwnLabel:     pulumi.String(names.StackSelector(label)),
				cleanup.EnvOwnNodePools: joinedNames(np.NodePoolNames), cleanup.EnvOwnNodeClasses: joinedNames(np.NodeClassNames),
				cleanup.EnvLoadBalancerTimeout: pulumi.String("1m"), cleanup.EnvVolumeTimeout: pulumi.String("1m"),
				cleanup.EnvNodeTimeout: pulumi.String("1m"), cleanup.EnvReport: pulumi.String(report)}
			var r pulumi.CustomResourceState
			// Deleted before what it needs, as the program's is.
			return ctx.RegisterResource(destroyCleanupToken, "cleanup", pulumi.Map{"settings": settings}, &r,
				pulumi.Version(releasedVersion), pulumi.PluginDownloadURL("github://api.github.com/"+fixtureRepository),
				pulumi.DependsOn(append([]pulumi.Resource{crds, lb}, append(np.Pools, np.Classes...)...)))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stack := inlineStack(t, ctx, home, path, "kube-tier", program(variant{}))
	use := func(v variant) {
		stack.Workspace().SetProgram(program(v))
	}

	// Without the takeover, the CRD's apply conflicts with Helm's field.
	_, err = stack.Up(ctx)
	require.Error(t, err, "server-side apply of a field Helm owns")
	assert.Contains(t, err.Error(), `conflict with "helm"`)

	use(variant{takeOver: true})
	res, err := stack.Up(ctx)
	require.NoError(t, err)
	t.Logf("first up: %v", res.Summary.ResourceChanges)
	// The engine says which plugin answered the SDK's request: a newer
	// provider served by the module proxy shows here.
	assert.Contains(t, res.StdOut+res.StdErr, "resource plugin kubernetes is expected to have version >="+kubeSDKVersion+", but has "+kubeProviderVersion)
	crd := s.Must(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/targetgroupbindings.elbv2.k8s.aws", "", nil)
	assert.Equal(t, "TargetGroupBindingList", crd["spec"].(map[string]any)["names"].(map[string]any)["listKind"], "the field is taken over")

	unchanged := func(what string, changes map[string]int) {
		t.Helper()
		for op, n := range changes {
			assert.Equal(t, "same", op, "%s: %d %s", what, n, op)
		}
	}
	res, err = stack.Up(ctx)
	require.NoError(t, err)
	unchanged("a second up", *res.Summary.ResourceChanges)
	ref, err := stack.Refresh(ctx)
	require.NoError(t, err)
	unchanged("a refresh", *ref.Summary.ResourceChanges)

	// Edits behind Pulumi's back. Of a field the program does not set: no
	// drift, to refresh or to up (server-side apply leaves another
	// manager's fields alone). Of one it sets: refresh reports it, and `up
	// --refresh` takes the field back (the pools' pulumi.com/patchForce;
	// without it 4.25 fails on the conflict with the edit's manager).
	poolPath := "/apis/karpenter.sh/v1/nodepools/general"
	s.Must(t, http.MethodPatch, poolPath, "application/merge-patch+json", map[string]any{"spec": map[string]any{"weight": 7}})
	_, err = stack.Refresh(ctx, optrefresh.ExpectNoChanges())
	require.NoError(t, err, "a field the program does not set is not drift")
	consolidateAfter := func() any {
		return s.Must(t, http.MethodGet, poolPath, "", nil)["spec"].(map[string]any)["disruption"].(map[string]any)["consolidateAfter"]
	}
	want := consolidateAfter()
	s.Must(t, http.MethodPatch, poolPath, "application/merge-patch+json",
		map[string]any{"spec": map[string]any{"disruption": map[string]any{"consolidateAfter": "17m"}}})
	ref, err = stack.Refresh(ctx)
	require.NoError(t, err)
	t.Logf("refresh after an edit of the program's field: %v", *ref.Summary.ResourceChanges)
	assert.Equal(t, 1, (*ref.Summary.ResourceChanges)["update"], "refresh reports the edited pool")
	res, err = stack.Up(ctx, optup.Refresh())
	require.NoError(t, err)
	t.Logf("up --refresh after the edit: %v", *res.Summary.ResourceChanges)
	assert.Equal(t, want, consolidateAfter(), "up --refresh takes the field back")
	assert.Equal(t, float64(7), s.Must(t, http.MethodGet, poolPath, "", nil)["spec"].(map[string]any)["weight"], "the other field stays")
	res, err = stack.Up(ctx)
	require.NoError(t, err)
	unchanged("an up after the edit", *res.Summary.ResourceChanges)

	// A class whose kubelet settings the program refuses at preview, which
	// the API server (Karpenter 1.15's CRD) stores as sent.
	bad := map[string]spec.NodeClass{"bad": badKubeletClass(classes["default"])}
	refusal := spec.Validate(pools, bad, false, versions.KarpenterMinor(versions.Karpenter))
	require.Error(t, refusal)
	assert.Contains(t, refusal.Error(), "nodeClasses.bad.kubelet.evictionHard")
	use(variant{takeOver: true, badClass: true})
	_, err = stack.Up(ctx)
	require.NoError(t, err)
	stored := s.Must(t, http.MethodGet, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/bad", "", nil)
	assert.Equal(t, map[string]any{"memory.free": "100Mi"}, stored["spec"].(map[string]any)["kubelet"].(map[string]any)["evictionHard"])

	// A pool someone made outside the stack: the destroy cleanup deletes it.
	foreign := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "foreign"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
			"requirements": []any{}}}}}
	s.Must(t, http.MethodPost, "/apis/karpenter.sh/v1/nodepools", "", foreign)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	log, err := os.ReadFile(report)
	require.NoError(t, err)
	assert.Contains(t, string(log), "deleting NodePool foreign (the stack did not create it)")
	assert.Contains(t, string(log), "destroy cleanup done")
	for _, path := range []string{"/apis/karpenter.sh/v1/nodepools", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"} {
		status, _, err := s.Do(ctx, http.MethodGet, path, "", nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNotFound, status, "%s: the CRDs went with the release", path)
	}
	crds := s.Must(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", nil)
	var left []string
	for _, c := range crds["items"].([]any) {
		left = append(left, c.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	slices.Sort(left)
	assert.Empty(t, left, "no CRD is left")
	// But the release's namespace: pulumi-kubernetes creates it for the
	// release (createNamespace) and does not delete it. In the program the
	// cluster goes next, and the namespace with it.
	ns := s.Must(t, http.MethodGet, "/api/v1/namespaces/"+karpenter.Namespace, "", nil)
	assert.NotContains(t, ns["metadata"], "deletionTimestamp", "4.25 leaves the release's namespace, not being deleted")
}

// badKubeletClass is class with an eviction signal the kubelet does not
// have, which Karpenter 1.15's controller refuses after the apply.
func badKubeletClass(class spec.NodeClass) spec.NodeClass {
	class.Kubelet = &spec.Kubelet{EvictionHard: map[string]string{"memory.free": "100Mi"}}
	return class
}

// joinedNames is names joined by ",", as the program passes them.
func joinedNames(names pulumi.StringArrayOutput) pulumi.StringOutput {
	return names.ApplyT(func(n []string) string { return strings.Join(n, ",") }).(pulumi.StringOutput)
}
