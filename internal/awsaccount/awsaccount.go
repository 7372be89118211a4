// Package awsaccount reads which account and partition the program
// deploys to, so that IAM documents can name ARNs without waiting for any
// resource.
package awsaccount

import (
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Account is where the program deploys.
type Account struct {
	// ID is the 12-digit account id.
	ID string
	// Partition is "aws", "aws-cn" or "aws-us-gov".
	Partition string
}

// Lookup asks the AWS provider for the caller's account and partition.
func Lookup(ctx *pulumi.Context, opts ...pulumi.InvokeOption) (Account, error) {
	caller, err := aws.GetCallerIdentity(ctx, nil, opts...)
	if err != nil {
		return Account{}, fmt.Errorf("reading caller identity: %w", err)
	}
	partition, err := aws.GetPartition(ctx, nil, opts...)
	if err != nil {
		return Account{}, fmt.Errorf("reading partition: %w", err)
	}
	return Account{ID: caller.AccountId, Partition: partition.Partition}, nil
}

// ClusterARN is the ARN of the EKS cluster called name in region, known
// before the cluster exists.
func (a Account) ClusterARN(region, name string) string {
	return fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", a.Partition, region, a.ID, name)
}
