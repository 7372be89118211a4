// Command provider serves the nodeless-eks Pulumi package: the Cluster
// component, which registers what the Go program at the repository's
// root registers, for programs in any Pulumi language (`pulumi package
// add`), and DestroyCleanup, the resource whose delete runs the destroy
// cleanup in this process, so that a consumer needs neither this
// checkout nor a Go toolchain when it destroys.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// Name is the package's name: the first segment of every token, and the
// name consumers' SDKs carry.
const Name = "nodeless-eks"

// Version is the package's version, which the schema carries; a release
// bumps it and tags the commit v<Version>, the tag `pulumi package add`
// clones (refs/tags/v<version>: sdk/go/common/workspace/plugins.go,
// gitSource.Download, at v3.256.0).
const Version = "0.1.0"

// Repository is where this repository is published on GitHub (owner/name);
// a fork sets its own before its first tag. PluginDownloadURL is what
// `pulumi package add github.com/<Repository>/provider@v<Version>` records
// for the package (workspace.parsePluginSpecFromURL: the source URL with
// the git scheme), which the consumer's SDK registers the Cluster with.
// The Cluster's own DestroyCleanup must carry the same URL and version:
// without them the engine looks for a second, unnamed default provider of
// the package, which it cannot find (pulumi-go-provider#586).
const (
	Repository        = "my-org/nodeless-eks"
	PluginDownloadURL = "git://github.com/" + Repository + "/provider"
)

func main() {
	prov, err := Provider(func() time.Time { return time.Now().UTC() })
	if err == nil {
		err = prov.Run(context.Background(), Name, Version)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Provider is the package's provider; today is the day a Cluster reads
// the EKS support calendar against.
func Provider(today func() time.Time) (p.Provider, error) {
	return build(infer.ComponentF(clusterConstructor(today, nil)))
}

// build is the provider around cluster, the Cluster's component (tests
// wrap its constructor; the schema is the same either way). Its Construct
// refuses object fields the inputs' types do not have before the typed
// copy drops them: a typo must fail, as it fails in a stack file.
func build(cluster infer.InferredComponent) (p.Provider, error) {
	prov, err := builder(cluster).Build()
	if err != nil {
		return p.Provider{}, err
	}
	construct := prov.Construct
	prov.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() == Name+":index:Cluster" {
			if err := unknownFields(req.Urn.Name(), req.Inputs); err != nil {
				return p.ConstructResponse{}, err
			}
		}
		return construct(ctx, req)
	}
	return prov, nil
}

// builder is the package: its metadata, resources and types.
func builder(cluster infer.InferredComponent) *infer.ProviderBuilder {
	return infer.NewProviderBuilder().
		WithDisplayName("Nodeless EKS").
		WithDescription("An Amazon EKS cluster with no node groups: Karpenter runs on Fargate and launches every EC2 node. One `pulumi up` converges; `pulumi destroy` leaves no instances.").
		WithKeywords("eks", "karpenter", "fargate", "kubernetes", "aws", "category/cloud", "kind/component").
		WithLicense("Apache-2.0").
		WithRepository("https://github.com/" + Repository).
		WithPluginDownloadURL(PluginDownloadURL).
		WithComponents(cluster).
		WithResources(infer.Resource(&DestroyCleanup{})).
		// The input types live in the layer packages (nodepool/spec,
		// cluster, karpenter, config), whose names would otherwise be the
		// SDKs' modules; one module reads better.
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{
			"spec": "index", "cluster": "index", "karpenter": "index", "config": "index",
		})
}
