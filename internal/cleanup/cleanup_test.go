package cleanup

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func object(kind, name, pool string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("karpenter.sh/v1")
	u.SetKind(kind)
	u.SetName(name)
	if pool != "" {
		u.SetLabels(map[string]string{"karpenter.sh/nodepool": pool})
	}
	return u
}

// cluster is what workloads left: ours and an ArgoCD application's
// NodePool with a node each, an Ingress and a LoadBalancer Service beside
// a ClusterIP one.
func cluster(karpenterRuns bool) (*kubefake.Clientset, *dynamicfake.FakeDynamicClient) {
	kube := kubefake.NewSimpleClientset(
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "public"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "internal"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
	)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{NodePools: "NodePoolList", NodeClaims: "NodeClaimList"},
		object("NodePool", "general", ""), object("NodePool", "argocd-batch", ""),
		object("NodeClaim", "general-abc", "general"), object("NodeClaim", "argocd-batch-xyz", "argocd-batch"),
	)
	if karpenterRuns {
		// Karpenter drains and terminates a deleted pool's nodes.
		dyn.PrependReactor("delete", "nodepools", func(action k8stesting.Action) (bool, runtime.Object, error) {
			pool := action.(k8stesting.DeleteAction).GetName()
			claims, _ := dyn.Tracker().List(NodeClaims, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}, "")
			for _, c := range claims.(*unstructured.UnstructuredList).Items {
				if c.GetLabels()["karpenter.sh/nodepool"] == pool {
					_ = dyn.Tracker().Delete(NodeClaims, "", c.GetName())
				}
			}
			return false, nil, nil
		})
	}
	return kube, dyn
}

func TestRunRemovesWhatWorkloadsCreated(t *testing.T) {
	kube, dyn := cluster(true)
	var log bytes.Buffer
	err := Run(context.Background(), kube, dyn, Options{LoadBalancerTimeout: time.Second, NodeTimeout: time.Second, Interval: 10 * time.Millisecond, Log: &log})
	require.NoError(t, err)

	ings, _ := kube.NetworkingV1().Ingresses("").List(context.Background(), metav1.ListOptions{})
	assert.Empty(t, ings.Items, "every Ingress goes while the LB controller still runs")
	svcs, _ := kube.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	require.Len(t, svcs.Items, 1, "only LoadBalancer Services go")
	assert.Equal(t, "internal", svcs.Items[0].Name)
	for _, gvr := range []schema.GroupVersionResource{NodePools, NodeClaims} {
		left, _ := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		assert.Empty(t, left.Items, "%s: every pool goes, ours or an application's, and with it every node", gvr.Resource)
	}
	assert.Contains(t, log.String(), "deleting NodePool argocd-batch")
	assert.Contains(t, log.String(), "deleting Service shop/public (type LoadBalancer)")
}

func TestRunFailsWhenNodesOutlastTheTimeout(t *testing.T) {
	kube, dyn := cluster(false) // nothing terminates the nodes
	err := Run(context.Background(), kube, dyn, Options{LoadBalancerTimeout: time.Second, NodeTimeout: 50 * time.Millisecond, Interval: 10 * time.Millisecond, Log: &bytes.Buffer{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deleting node pools: timed out")
	assert.Contains(t, err.Error(), "2 NodeClaims and 0 NodePools still exist")
}
