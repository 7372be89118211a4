// Package iamopts holds the IAM settings that an organisation imposes on
// every role and policy the program creates: a path and a permissions
// boundary. Each component applies them through Role and Policy, so no
// role can be created without them.
package iamopts

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Options are the organisation's IAM settings. The zero value sets
// neither (IAM's default path "/", no boundary).
type Options struct {
	// Path is the IAM path of roles and policies, "/" or "/a/b/".
	Path string
	// PermissionsBoundary is the ARN of the managed policy that bounds
	// every role, or "".
	PermissionsBoundary string
}

// Role sets the path and boundary on args and returns it.
func (o Options) Role(args *iam.RoleArgs) *iam.RoleArgs {
	if o.Path != "" && o.Path != "/" {
		args.Path = pulumi.String(o.Path)
	}
	if o.PermissionsBoundary != "" {
		args.PermissionsBoundary = pulumi.String(o.PermissionsBoundary)
	}
	return args
}

// Policy sets the path on args and returns it; boundaries bound roles,
// not policies.
func (o Options) Policy(args *iam.PolicyArgs) *iam.PolicyArgs {
	if o.Path != "" && o.Path != "/" {
		args.Path = pulumi.String(o.Path)
	}
	return args
}
