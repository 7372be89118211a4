package verify

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Labels that tell where a pod runs.
const (
	// FargateComputeLabel marks Fargate nodes (value "fargate").
	FargateComputeLabel = "eks.amazonaws.com/compute-type"
	// NodePoolLabel marks nodes that Karpenter launched (value: the pool).
	NodePoolLabel = "karpenter.sh/nodepool"
)

// NodePoolResource is Karpenter's NodePool API.
var NodePoolResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// Placement names the pods the check looks at.
type Placement struct {
	KarpenterNamespace, KarpenterSelector string
	CoreDNSNamespace, CoreDNSSelector     string
}

// DefaultPlacement is where this program deploys Karpenter and CoreDNS.
var DefaultPlacement = Placement{
	KarpenterNamespace: "karpenter", KarpenterSelector: "app.kubernetes.io/name=karpenter",
	CoreDNSNamespace: "kube-system", CoreDNSSelector: "k8s-app=kube-dns",
}

// CheckPlacement reports every way the cluster differs from a nodeless
// bootstrap that worked: each Karpenter pod Running on a Fargate node, each
// CoreDNS pod Running on a node Karpenter launched, every NodePool Ready.
func CheckPlacement(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, p Placement) error {
	var errs []error
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	nodeLabels := map[string]map[string]string{}
	for _, n := range nodes.Items {
		nodeLabels[n.Name] = n.Labels
	}

	check := func(what, ns, selector string, onRightNode func(labels map[string]string) bool, where string) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s pods: %w", what, err))
			return
		}
		if len(pods.Items) == 0 {
			errs = append(errs, fmt.Errorf("no %s pods (%s in %s)", what, selector, ns))
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodRunning {
				errs = append(errs, fmt.Errorf("%s pod %s is %s, not Running", what, pod.Name, pod.Status.Phase))
				continue
			}
			labels, ok := nodeLabels[pod.Spec.NodeName]
			if !ok {
				errs = append(errs, fmt.Errorf("%s pod %s is on node %q, which does not exist", what, pod.Name, pod.Spec.NodeName))
				continue
			}
			if !onRightNode(labels) {
				errs = append(errs, fmt.Errorf("%s pod %s runs on node %s, want %s", what, pod.Name, pod.Spec.NodeName, where))
			}
		}
	}
	check("Karpenter", p.KarpenterNamespace, p.KarpenterSelector,
		func(l map[string]string) bool { return l[FargateComputeLabel] == "fargate" }, "a Fargate node")
	check("CoreDNS", p.CoreDNSNamespace, p.CoreDNSSelector,
		func(l map[string]string) bool { return l[NodePoolLabel] != "" }, "a node Karpenter launched (label "+NodePoolLabel+")")

	pools, err := dyn.Resource(NodePoolResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing NodePools: %w", err))
	} else {
		if len(pools.Items) == 0 {
			errs = append(errs, errors.New("no NodePools"))
		}
		for _, pool := range pools.Items {
			if status := conditionStatus(pool, "Ready"); status != "True" {
				errs = append(errs, fmt.Errorf("NodePool %s is not Ready (Ready=%q)", pool.GetName(), status))
			}
		}
	}
	return errors.Join(errs...)
}

// conditionStatus returns the status of a condition type, "" if absent.
func conditionStatus(obj unstructured.Unstructured, conditionType string) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
