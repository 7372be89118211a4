package verify

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func pod(ns, name, nodeName string, labels map[string]string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func nodePool(name, ready string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": name},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": ready},
		}},
	}}
}

var (
	karpenterLabels = map[string]string{"app.kubernetes.io/name": "karpenter"}
	coreDNSLabels   = map[string]string{"k8s-app": "kube-dns"}
	fargateLabels   = map[string]string{FargateComputeLabel: "fargate"}
	karpenterNode   = map[string]string{NodePoolLabel: "general"}
)

// healthyCluster is a nodeless bootstrap that worked.
func healthyCluster() ([]runtime.Object, []runtime.Object) {
	kube := []runtime.Object{
		node("fargate-ip-10-0-1-10", fargateLabels),
		node("fargate-ip-10-0-2-10", fargateLabels),
		node("ip-10-0-3-10", karpenterNode),
		pod("karpenter", "karpenter-a", "fargate-ip-10-0-1-10", karpenterLabels, corev1.PodRunning),
		pod("karpenter", "karpenter-b", "fargate-ip-10-0-2-10", karpenterLabels, corev1.PodRunning),
		pod("kube-system", "coredns-a", "ip-10-0-3-10", coreDNSLabels, corev1.PodRunning),
	}
	return kube, []runtime.Object{nodePool("general", "True")}
}

func checkPlacement(t *testing.T, kubeObjs, dynObjs []runtime.Object) error {
	t.Helper()
	kube := fake.NewSimpleClientset(kubeObjs...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{NodePoolResource: "NodePoolList"}, dynObjs...)
	return CheckPlacement(context.Background(), kube, dyn, DefaultPlacement)
}

func TestCheckPlacement(t *testing.T) {
	t.Run("passes for a correct cluster", func(t *testing.T) {
		kube, dyn := healthyCluster()
		assert.NoError(t, checkPlacement(t, kube, dyn))
	})

	tests := []struct {
		name   string
		change func(kube, dyn []runtime.Object) ([]runtime.Object, []runtime.Object)
		want   string
	}{
		{"a Karpenter pod on an EC2 node", func(kube, dyn []runtime.Object) ([]runtime.Object, []runtime.Object) {
			return append(kube, pod("karpenter", "karpenter-c", "ip-10-0-3-10", karpenterLabels, corev1.PodRunning)), dyn
		}, "Karpenter pod karpenter-c runs on node ip-10-0-3-10, want a Fargate node"},
		{"CoreDNS on a node Karpenter did not launch", func(kube, dyn []runtime.Object) ([]runtime.Object, []runtime.Object) {
			return append(kube, node("ip-10-0-4-10", map[string]string{"eks.amazonaws.com/nodegroup": "ng"}),
				pod("kube-system", "coredns-b", "ip-10-0-4-10", coreDNSLabels, corev1.PodRunning)), dyn
		}, "CoreDNS pod coredns-b runs on node ip-10-0-4-10, want a node Karpenter launched"},
		{"CoreDNS pending", func(kube, dyn []runtime.Object) ([]runtime.Object, []runtime.Object) {
			return append(kube, pod("kube-system", "coredns-b", "", coreDNSLabels, corev1.PodPending)), dyn
		}, "CoreDNS pod coredns-b is Pending, not Running"},
		{"a NodePool that is not Ready", func(kube, dyn []runtime.Object) ([]runtime.Object, []runtime.Object) {
			return kube, append(dyn, nodePool("on-demand", "False"))
		}, `NodePool on-demand is not Ready (Ready="False")`},
		{"no NodePool at all", func(kube, _ []runtime.Object) ([]runtime.Object, []runtime.Object) {
			return kube, nil
		}, "no NodePools"},
	}
	for _, tt := range tests {
		t.Run("fails for "+tt.name, func(t *testing.T) {
			kube, dyn := tt.change(healthyCluster())
			err := checkPlacement(t, kube, dyn)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
