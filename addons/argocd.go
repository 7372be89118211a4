package addons

import (
	"fmt"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/helmrelease"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const (
	argoCDNamespace  = "argocd"
	argoCDRepository = "https://argoproj.github.io/argo-helm"
)

// ArgoCDValues keep ArgoCD private: its server is a ClusterIP service and
// no ingress is created; reach it with kubectl port-forward.
func ArgoCDValues() map[string]any {
	return map[string]any{
		"server": map[string]any{
			"service": map[string]any{"type": "ClusterIP"},
			"ingress": map[string]any{"enabled": false},
		},
	}
}

func newArgoCD(ctx *pulumi.Context, name string, args *Args, coreDNS, lbController, destroyCleanup pulumi.Resource,
	parent pulumi.ResourceOption) error {
	prerequisites := append([]pulumi.Resource{
		// Deleted before the cleanup runs, so that its applications cannot
		// recreate what the cleanup removes.
		destroyCleanup,
		// ArgoCD's pods resolve its repo server and Redis through CoreDNS.
		coreDNS,
		// The controller's Service webhook fails every Service create
		// until its pods serve it; ArgoCD creates Services.
		lbController,
		// Its pods need EC2 capacity, which only the pools provide.
	}, args.NodePools...)
	_, err := helmrelease.New(ctx, name+"-argocd", &helmrelease.ReleaseArgs{
		Name:            pulumi.String("argocd"),
		Chart:           pulumi.String("argo-cd"),
		RepositoryOpts:  &helmrelease.RepositoryOptsArgs{Repo: pulumi.String(argoCDRepository)},
		Version:         pulumi.String(args.Versions.ArgoCDChart),
		Namespace:       pulumi.String(argoCDNamespace),
		CreateNamespace: pulumi.Bool(true),
		Values:          pulumi.ToMap(ArgoCDValues()),
		Timeout:         pulumi.Int(bounds.Seconds(bounds.ChartOnNodes)),
	}, parent, pulumi.Provider(args.Provider), pulumi.DependsOn(prerequisites),
		// Deleted before the cleanup, so protected with it: its
		// applications are what the stack runs.
		protectIf(args.Protect))
	if err != nil {
		return fmt.Errorf("creating ArgoCD release: %w", err)
	}
	return nil
}
