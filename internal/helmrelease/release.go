// Package helmrelease registers pulumi-kubernetes' Helm Release resource
// (kubernetes:helm.sh/v3:Release) without importing its generated Go
// package. That package also holds the client-side helm/v3 Chart, which
// imports kubernetes/yaml and through it every API group of the SDK: 69
// packages and 1,204 of the 1,684 seconds of compile actions of a cold
// build (measured on e9d23e0), for types this program never uses. The
// engine and the kubernetes provider see exactly what the generated
// NewRelease sends: the same type token, the same input names, compat "true"
// and the provider version of the pulumi-kubernetes module in go.mod.
package helmrelease

import (
	"errors"
	"reflect"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/utilities"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TypeToken is the resource type of a Helm release in pulumi-kubernetes.
const TypeToken = "kubernetes:helm.sh/v3:Release"

// Release is a Helm release that the kubernetes provider installs,
// upgrades and uninstalls as one object: chart hooks run, and values that
// the chart generates (certificates, passwords) are computed once at
// install, not on every preview. The program orders other resources after
// it and reads none of its outputs, so it declares none.
type Release struct {
	pulumi.CustomResourceState
}

// ReleaseArgs are the inputs this program sets. Each field carries the name
// of the same input in pulumi-kubernetes' schema (its Go SDK's releaseArgs),
// which a test holds it to; add a field here, with that name, when a release
// needs it.
type ReleaseArgs struct {
	// Chart is the chart name, an oci:// reference or a path. Required.
	Chart pulumi.StringInput
	// Version is the exact chart version; unset means the latest.
	Version pulumi.StringPtrInput
	// Name is the release name; unset means an autoname.
	Name pulumi.StringPtrInput
	// Namespace to install the release into.
	Namespace pulumi.StringPtrInput
	// CreateNamespace creates Namespace if it does not exist.
	CreateNamespace pulumi.BoolPtrInput
	// SkipCrds installs no CRDs from the chart's crds/ directory.
	SkipCrds pulumi.BoolPtrInput
	// RepositoryOpts locates a chart that is not an oci:// reference.
	RepositoryOpts *RepositoryOptsArgs
	// Values are the chart's values.
	Values pulumi.MapInput
	// Timeout is the seconds to wait for any one Kubernetes operation.
	Timeout pulumi.IntPtrInput
	// WaitForJobs waits until the release's Jobs complete.
	WaitForJobs pulumi.BoolPtrInput

	// Compat is set to "true" by New, as by the generated NewRelease;
	// whatever the caller sets is overwritten.
	Compat pulumi.StringPtrInput
}

// releaseArgs is the wire shape of ReleaseArgs.
type releaseArgs struct {
	Chart           string                 `pulumi:"chart"`
	Version         *string                `pulumi:"version"`
	Name            *string                `pulumi:"name"`
	Namespace       *string                `pulumi:"namespace"`
	CreateNamespace *bool                  `pulumi:"createNamespace"`
	SkipCrds        *bool                  `pulumi:"skipCrds"`
	RepositoryOpts  *repositoryOpts        `pulumi:"repositoryOpts"`
	Values          map[string]interface{} `pulumi:"values"`
	Timeout         *int                   `pulumi:"timeout"`
	WaitForJobs     *bool                  `pulumi:"waitForJobs"`
	Compat          *string                `pulumi:"compat"`
}

// ElementType is the wire shape of the arguments.
func (ReleaseArgs) ElementType() reflect.Type { return reflect.TypeOf((*releaseArgs)(nil)).Elem() }

// RepositoryOptsArgs locates a chart in a Helm repository.
type RepositoryOptsArgs struct {
	// Repo is the repository URL, e.g. https://aws.github.io/eks-charts.
	Repo pulumi.StringPtrInput
}

type repositoryOpts struct {
	Repo *string `pulumi:"repo"`
}

// ElementType is the wire shape of the repository options.
func (RepositoryOptsArgs) ElementType() reflect.Type {
	return reflect.TypeOf((*repositoryOpts)(nil)).Elem()
}

// New registers a Helm release.
func New(ctx *pulumi.Context, name string, args *ReleaseArgs, opts ...pulumi.ResourceOption) (*Release, error) {
	if args == nil || args.Chart == nil {
		return nil, errors.New("helm release " + name + ": Chart is required")
	}
	wire := *args
	// The provider's Release implementation branches on this marker, which
	// every SDK's generated constructor sends.
	wire.Compat = pulumi.String("true")
	var r Release
	// The generated constructor pins the provider plugin to its SDK's
	// version; so does this, through the same helper.
	if err := ctx.RegisterResource(TypeToken, name, wire, &r, utilities.PkgResourceDefaultOpts(opts)...); err != nil {
		return nil, err
	}
	return &r, nil
}
