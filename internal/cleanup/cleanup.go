// Package cleanup removes, when the stack is destroyed, what workloads
// created that would outlive the controllers that manage it: every Ingress
// and LoadBalancer Service (the AWS Load Balancer Controller deletes their
// load balancers, whose ENIs would otherwise block the node security
// group's deletion), then every NodePool, ours or not (Karpenter drains and
// terminates their nodes; a NodePool that an ArgoCD application created
// would otherwise keep nodes that nothing drains once Karpenter is gone).
// It runs before the LB controller, the node classes and Karpenter are
// deleted, and returns only when nothing is left.
package cleanup

import (
	"context"
	"fmt"
	"io"
	"time"

	"nodeless-eks/internal/poll"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Karpenter's resources.
var (
	NodePools  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// Options bound the cleanup.
type Options struct {
	// LoadBalancerTimeout bounds the wait for Ingresses and Services.
	LoadBalancerTimeout time.Duration
	// NodeTimeout bounds the wait for nodes: the longest pool's
	// terminationGracePeriod plus time to terminate.
	NodeTimeout time.Duration
	// Interval is how often progress is checked.
	Interval time.Duration
	// Log receives one line per step.
	Log io.Writer
}

// Run deletes load balancers, then NodePools, and waits for each to be gone.
func Run(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o Options) error {
	if err := deleteLoadBalancers(ctx, kube, o); err != nil {
		return fmt.Errorf("deleting load balancers: %w", err)
	}
	if err := deleteNodePools(ctx, dyn, o); err != nil {
		return fmt.Errorf("deleting node pools: %w", err)
	}
	return nil
}

func deleteLoadBalancers(ctx context.Context, kube kubernetes.Interface, o Options) error {
	ingresses, err := kube.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ing := range ingresses.Items {
		fmt.Fprintf(o.Log, "deleting Ingress %s/%s\n", ing.Namespace, ing.Name)
		if err := kube.NetworkingV1().Ingresses(ing.Namespace).Delete(ctx, ing.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return err
		}
	}
	services, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, svc := range services.Items {
		if svc.Spec.Type != "LoadBalancer" {
			continue
		}
		fmt.Fprintf(o.Log, "deleting Service %s/%s (type LoadBalancer)\n", svc.Namespace, svc.Name)
		if err := kube.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return err
		}
	}
	// Their finalizers go once the controller has deleted the AWS resources.
	return poll.Until(ctx, o.LoadBalancerTimeout, o.Interval, func(ctx context.Context) (bool, string, error) {
		ings, err := kube.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		left := len(ings.Items)
		for _, s := range svcs.Items {
			if s.Spec.Type == "LoadBalancer" {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d Ingresses and LoadBalancer Services still exist", left), nil
	})
}

func deleteNodePools(ctx context.Context, dyn dynamic.Interface, o Options) error {
	pools, err := dyn.Resource(NodePools).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pools.Items {
		fmt.Fprintf(o.Log, "deleting NodePool %s\n", p.GetName())
		if err := dyn.Resource(NodePools).Delete(ctx, p.GetName(), metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return err
		}
	}
	// Karpenter drains and terminates each pool's nodes before their
	// NodeClaims go.
	return poll.Until(ctx, o.NodeTimeout, o.Interval, func(ctx context.Context) (bool, string, error) {
		claims, err := dyn.Resource(NodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		pools, err := dyn.Resource(NodePools).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		n, p := len(claims.Items), len(pools.Items)
		return n == 0 && p == 0, fmt.Sprintf("%d NodeClaims and %d NodePools still exist", n, p), nil
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
