// Command destroy-cleanup is the delete step of the program's
// destroy-cleanup resource: `pulumi destroy` runs it (with `go run`) before
// it deletes the LB controller, the node classes and Karpenter. It reads the
// cluster's kubeconfig from NODELESS_EKS_KUBECONFIG and its bounds from
// NODELESS_EKS_NODE_TIMEOUT and NODELESS_EKS_LB_TIMEOUT.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"nodeless-eks/internal/cleanup"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "destroy-cleanup:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := os.Getenv("NODELESS_EKS_KUBECONFIG")
	if kubeconfig == "" {
		return fmt.Errorf("NODELESS_EKS_KUBECONFIG is empty; the program sets it from the cluster's kubeconfig")
	}
	nodeTimeout, err := time.ParseDuration(os.Getenv("NODELESS_EKS_NODE_TIMEOUT"))
	if err != nil {
		return fmt.Errorf("NODELESS_EKS_NODE_TIMEOUT: %w", err)
	}
	lbTimeout, err := time.ParseDuration(os.Getenv("NODELESS_EKS_LB_TIMEOUT"))
	if err != nil {
		return fmt.Errorf("NODELESS_EKS_LB_TIMEOUT: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return cleanup.Run(context.Background(), kube, dyn, cleanup.Options{
		LoadBalancerTimeout: lbTimeout, NodeTimeout: nodeTimeout, Interval: 10 * time.Second, Log: os.Stdout,
	})
}
