// Package k8syaml registers pulumi-kubernetes' YAML ConfigGroup
// (kubernetes:yaml/v2:ConfigGroup) without importing its generated Go
// package, which lists every API group of the SDK in kinds.go and so
// would bring all 69 of them into the program's build (see
// internal/helmrelease for the same trade). The kubernetes provider
// implements the component: it reads the files, URLs included, and
// registers each object as its child.
package k8syaml

import (
	"errors"
	"reflect"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/utilities"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TypeToken is the resource type of a YAML ConfigGroup in pulumi-kubernetes.
const TypeToken = "kubernetes:yaml/v2:ConfigGroup"

// ConfigGroup is a set of Kubernetes objects read from manifests. Other
// resources wait for all of them through DependsOn on the group.
type ConfigGroup struct {
	pulumi.ResourceState
}

// ConfigGroupArgs are the inputs this program sets, each named as in
// pulumi-kubernetes' schema (its Go SDK's configGroupArgs).
type ConfigGroupArgs struct {
	// Files are paths or URLs of manifests. Required.
	Files pulumi.StringArrayInput
}

type configGroupArgs struct {
	Files []string `pulumi:"files"`
}

// ElementType is the wire shape of the arguments.
func (ConfigGroupArgs) ElementType() reflect.Type {
	return reflect.TypeOf((*configGroupArgs)(nil)).Elem()
}

// NewConfigGroup registers a ConfigGroup.
func NewConfigGroup(ctx *pulumi.Context, name string, args *ConfigGroupArgs, opts ...pulumi.ResourceOption) (*ConfigGroup, error) {
	if args == nil || args.Files == nil {
		return nil, errors.New("config group " + name + ": Files is required")
	}
	var g ConfigGroup
	// The generated constructor pins the provider plugin to its SDK's
	// version; so does this, through the same helper.
	if err := ctx.RegisterRemoteComponentResource(TypeToken, name, args, &g, utilities.PkgResourceDefaultOpts(opts)...); err != nil {
		return nil, err
	}
	return &g, nil
}
