package verify

import (
	"context"
	"fmt"
	"time"

	"nodeless-eks/internal/poll"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ScaleWorkload is a Deployment that only Karpenter's nodes can hold: a
// required affinity to nodes with karpenter.sh/nodepool and one pod per
// node, so more replicas mean more Karpenter nodes.
func ScaleWorkload(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
								{Key: NodePoolLabel, Operator: corev1.NodeSelectorOpExists},
							}}},
						},
					}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew:           1,
						TopologyKey:       "kubernetes.io/hostname",
						WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: labels},
					}},
					Containers: []corev1.Container{{
						Name:  "pause",
						Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.9",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("256Mi"),
						}},
					}},
				},
			},
		},
	}
}

// Scale sets a Deployment's replicas.
func Scale(ctx context.Context, kube kubernetes.Interface, namespace, name string, replicas int32) error {
	dep, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading %s/%s: %w", namespace, name, err)
	}
	dep.Spec.Replicas = &replicas
	if _, err := kube.AppsV1().Deployments(namespace).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scaling %s/%s to %d: %w", namespace, name, replicas, err)
	}
	return nil
}

// KarpenterNodes returns the names of the nodes Karpenter launched.
func KarpenterNodes(ctx context.Context, kube kubernetes.Interface) (map[string]bool, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodePoolLabel})
	if err != nil {
		return nil, fmt.Errorf("listing Karpenter nodes: %w", err)
	}
	out := map[string]bool{}
	for _, n := range nodes.Items {
		out[n.Name] = true
	}
	return out, nil
}

// WaitScaledOut waits until want pods of the workload run and Karpenter
// has added nodes beyond before; it returns the nodes it added.
func WaitScaledOut(ctx context.Context, kube kubernetes.Interface, namespace, selector string, want int,
	before map[string]bool, timeout, interval time.Duration) (map[string]bool, error) {
	added := map[string]bool{}
	err := poll.Until(ctx, timeout, interval, func(ctx context.Context) (bool, string, error) {
		pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "", fmt.Errorf("listing pods: %w", err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		nodes, err := KarpenterNodes(ctx, kube)
		if err != nil {
			return false, "", err
		}
		clear(added)
		for n := range nodes {
			if !before[n] {
				added[n] = true
			}
		}
		status := fmt.Sprintf("%d of %d pods running, %d Karpenter nodes added", running, want, len(added))
		return running >= want && len(added) > 0, status, nil
	})
	return added, err
}

// WaitNodesGone waits until none of nodes exists any more: Karpenter has
// consolidated away the capacity it added.
func WaitNodesGone(ctx context.Context, kube kubernetes.Interface, nodes map[string]bool, timeout, interval time.Duration) error {
	return poll.Until(ctx, timeout, interval, func(ctx context.Context) (bool, string, error) {
		current, err := KarpenterNodes(ctx, kube)
		if err != nil {
			return false, "", err
		}
		var left []string
		for n := range nodes {
			if current[n] {
				left = append(left, n)
			}
		}
		return len(left) == 0, fmt.Sprintf("nodes still present: %v", left), nil
	})
}
