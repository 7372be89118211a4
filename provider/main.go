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
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/cleanup"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Name is the package's name: the first segment of every token, and the
// name consumers' SDKs carry.
const Name = "nodeless-eks"

// version is the package's version, which the schema carries: the
// committed one for a source build, the tag's for a release, whose build
// stamps it (provider/release.sh: -X main.version=).
var version = "0.1.0"

// repository is where the release was published on GitHub (owner/name),
// stamped by the release's build (-X main.repository=; the release workflow
// gives github.repository). A release's schema names its assets as the
// plugin's download URL, github://api.github.com/<repository>, which
// Pulumi's installer resolves to the release's assets
// (sdk/go/common/workspace/plugins.go, newGithubSource, at v3.276.0); a
// source build names none, and `pulumi package add` of the repository
// records the git URL it was given instead. Nothing here is a placeholder
// a fork must edit.
var repository = ""

// PluginDownloadURL is the schema's download URL: the release's, or none.
func PluginDownloadURL() string {
	if repository == "" {
		return ""
	}
	return "github://api.github.com/" + repository
}

// Namespace is the SDKs' scope: a release's is its owner, lower-cased, as
// `pulumi package add` gives a git package without one (packages.go
// setSpecNamespace), so that a release and the source it was built from
// generate the same SDK names; a source build leaves it to package add.
func Namespace() string {
	owner, _, _ := strings.Cut(repository, "/")
	return strings.ToLower(owner)
}

func main() {
	// The leftover audit without a stack, for a user with the release
	// archive alone (internal/cleanup, AuditCommand). The engine starts
	// the plugin with its address, never with this word.
	if len(os.Args) > 1 && os.Args[1] == cleanup.AuditCommandName {
		if err := cleanup.AuditCommand(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, cleanup.AuditCommandName+":", err)
			os.Exit(1)
		}
		return
	}
	prov, err := Provider(func() time.Time { return time.Now().UTC() })
	if err == nil {
		err = prov.Run(context.Background(), Name, version)
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
// Cluster's constructor (tests register what their mocks need there). Its
// Construct refuses what the typed copy of the inputs would misread
// (unknownFields), and explicit providers, which the program's lookups and
// checks would not use.
func build(today func() time.Time, before func(ctx *pulumi.Context) error) (p.Provider, error) {
	prov, err := builder(infer.ComponentF(clusterConstructor(today, before, registerCleanup))).Build()
	if err != nil {
		return p.Provider{}, err
	}
	getSchema := prov.GetSchema
	prov.GetSchema = func(ctx context.Context, req p.GetSchemaRequest) (p.GetSchemaResponse, error) {
		resp, err := getSchema(ctx, req)
		if err == nil {
			resp.Schema, err = truthful(resp.Schema)
		}
		return resp, err
	}
	construct := prov.Construct
	prov.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() == Name+":index:Cluster" {
			if err := explicitProviders(req.Urn.Name(), req.Providers); err != nil {
				return p.ConstructResponse{}, err
			}
			if err := unknownFields(req.Urn.Name(), req.Inputs); err != nil {
				return p.ConstructResponse{}, err
			}
		}
		return construct(ctx, req)
	}
	return prov, nil
}

// explicitProviders refuses providers given to the Cluster (its providers
// option, or a parent's): the program's account checks and lookups run
// with the default aws provider, and the Cluster's resources would follow
// the explicit one into another account or region.
func explicitProviders(name string, providers map[tokens.Package]p.ProviderReference) error {
	if len(providers) == 0 {
		return nil
	}
	var pkgs []string
	for pkg := range providers {
		pkgs = append(pkgs, string(pkg))
	}
	slices.Sort(pkgs)
	return fmt.Errorf("cluster %s: explicit providers (%s) are not supported: the Cluster's checks and lookups run with the "+
		"default providers, configured by the stack (aws:region, aws:profile, the AWS_* variables), and its resources must "+
		"land where those checked; drop the providers option, and configure the stack instead", name, strings.Join(pkgs, ", "))
}

// builder is the package: its metadata, resources and types.
func builder(cluster infer.InferredComponent) *infer.ProviderBuilder {
	return infer.NewProviderBuilder().
		WithDisplayName("Nodeless EKS").
		WithDescription("An Amazon EKS cluster with no node groups: Karpenter runs on Fargate and launches every EC2 node. One `pulumi up` converges; `pulumi destroy` leaves no instances.").
		WithKeywords("eks", "karpenter", "fargate", "kubernetes", "aws", "category/cloud", "kind/component").
		WithLicense("Apache-2.0").
		WithRepository(repositoryURL()).
		WithGoImportPath(goImportPath()).
		WithPluginDownloadURL(PluginDownloadURL()).
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

// goImportPath is the Go SDK's module path: a path, not a URL (the
// builder's default takes the repository page's https:// form), or, for a
// source build, the builder's local default.
func goImportPath() string {
	if repository == "" {
		return "local-package/sdk/go/" + Name
	}
	return "github.com/" + repository + "/sdk/go/" + Name
}

// repositoryURL is the release's repository page, or none.
func repositoryURL() string {
	if repository == "" {
		return ""
	}
	return "https://github.com/" + repository
}
