package karpenter

import (
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// SpotServiceName is the service whose service-linked role
// (AWSServiceRoleForEC2Spot) EC2 needs before it launches a spot
// instance for an API caller such as Karpenter (EC2 user guide,
// service-linked-roles-spot-instance-requests.html); Karpenter's
// getting-started guide creates it once per account for that reason.
const SpotServiceName = "spot.amazonaws.com"

// SpotRole is the account's EC2 Spot service-linked role as the
// preflight found it.
type SpotRole struct {
	// Arn is the role's ARN when it exists, "" when the stack creates it.
	Arn string
}

// newSpotRole ensures the Spot service-linked role: it creates it where
// the account has none, and otherwise adopts the one there (an import,
// which the engine skips once the role is in the stack's state). The role
// is the account's, shared by every stack and by anything else that
// launches spot capacity, so no stack ever deletes it: a destroy, or an
// update whose pools no longer allow spot, drops it from the state only.
// What the import compares is only the service's name: an existing role's
// description (EC2 writes one when it creates the role itself) and tags
// are the account's.
func newSpotRole(ctx *pulumi.Context, name string, role *SpotRole, parent pulumi.ResourceOption) (pulumi.Resource, error) {
	opts := []pulumi.ResourceOption{parent,
		pulumi.RetainOnDelete(true),
		pulumi.IgnoreChanges([]string{"description", "customSuffix", "tags"}),
	}
	if role.Arn != "" {
		opts = append(opts, pulumi.Import(pulumi.ID(role.Arn)))
	}
	r, err := iam.NewServiceLinkedRole(ctx, name+"-spot", &iam.ServiceLinkedRoleArgs{
		AwsServiceName: pulumi.String(SpotServiceName),
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("ensuring the EC2 Spot service-linked role: %w", err)
	}
	return r, nil
}
