// Package pulumieks stands in for what pulumi-eks returns under mocks. It
// is apart from fakeaws so that only the tests that run pulumi-eks compile
// pulumi-aws's eks package.
package pulumieks

import (
	"fmt"
	"time"

	"nodeless-eks/testkit/fakeaws"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// WithStandIn runs program after registering the stand-in for the
// aws:eks/cluster:Cluster that pulumi-eks returns as a resource reference:
// the mock monitor resolves only URNs it has seen. Registration is
// asynchronous, so it waits until the mock has it; otherwise pulumi-eks's
// registration can overtake it and fail.
func WithStandIn(program pulumi.RunFunc) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		standIn, err := awseks.NewCluster(ctx, fakeaws.StandInName, &awseks.ClusterArgs{
			RoleArn:   pulumi.String("arn:aws:iam::" + fakeaws.AccountID + ":role/stand-in"),
			VpcConfig: awseks.ClusterVpcConfigArgs{},
		})
		if err != nil {
			return err
		}
		registered := make(chan struct{})
		standIn.URN().ApplyT(func(string) error { close(registered); return nil })
		select {
		case <-registered:
		case <-time.After(20 * time.Second):
			return fmt.Errorf("the mock never registered %s", fakeaws.StandInName)
		}
		return program(ctx)
	}
}
