// Command provider serves the nodeless-eks Pulumi package: the Cluster
// component, which registers what the Go program at the repository's
// root registers, for programs in any Pulumi language (`pulumi package
// add`), and DestroyCleanup, the resource whose delete runs the destroy
// cleanup in this process, so that destroying needs no checkout and no
// `go run` (Pulumi still builds this plugin with Go when it starts it).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
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

// Namespace is the SDKs' scope: `pulumi package add` gives a git package
// without one the lower-cased owner (packages.go setSpecNamespace), so the
// schema says so itself: the TypeScript SDK is @<namespace>/nodeless-eks
// in sdks/<namespace>-nodeless-eks.
func Namespace() string {
	owner, _, _ := strings.Cut(Repository, "/")
	return strings.ToLower(owner)
}

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
	return build(today, nil)
}

// build is the provider; before, when set, runs at the start of each
// Cluster's constructor (tests register what their mocks need there).
// Its Construct refuses what the typed copy of the inputs would misread
// (unknownFields); its Configure learns the version the engine knows
// this provider by, which the Cluster's own DestroyCleanup names.
func build(today func() time.Time, before func(ctx *pulumi.Context) error) (p.Provider, error) {
	id := &identity{version: Version}
	prov, err := builder(infer.ComponentF(clusterConstructor(today, before, id.registrar()))).Build()
	if err != nil {
		return p.Provider{}, err
	}
	construct, configure := prov.Construct, prov.Configure
	prov.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() == Name+":index:Cluster" {
			if err := unknownFields(req.Urn.Name(), req.Inputs); err != nil {
				return p.ConstructResponse{}, err
			}
		}
		return construct(ctx, req)
	}
	prov.Configure = func(ctx context.Context, req p.ConfigureRequest) error {
		// The engine gives a default provider its version among its
		// inputs (pkg/resource/deploy/source_eval.go SetProviderVersion):
		// the consumer's SDK's, which is the tag or commit it added.
		// None means the Cluster was registered without one, and so is
		// its cleanup: the same default provider either way.
		version := ""
		if v, ok := req.Args.GetOk("version"); ok && v.IsString() {
			version = v.AsString()
		}
		id.set(version)
		if configure == nil {
			return nil
		}
		return configure(ctx, req)
	}
	return prov, nil
}

// identity is the version the engine knows this provider process by:
// Version until the engine configures it, then the engine's ("" for none).
type identity struct {
	mu      sync.Mutex
	version string
}

func (id *identity) set(v string) {
	id.mu.Lock()
	defer id.mu.Unlock()
	id.version = v
}

func (id *identity) get() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.version
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
		WithNamespace(Namespace()).
		WithComponents(cluster).
		WithResources(infer.Resource(&DestroyCleanup{})).
		// The input types live in the layer packages (nodepool/spec,
		// cluster, karpenter, config), whose names would otherwise be the
		// SDKs' modules; one module reads better.
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{
			"spec": "index", "cluster": "index", "karpenter": "index", "config": "index",
		})
}
