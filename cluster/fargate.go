package cluster

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/bounds"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// newFargateProfile creates the profile that runs the Karpenter controller,
// with its own pod execution role. The role needs only the account and
// partition, so it is created while the control plane is still coming up.
func newFargateProfile(ctx *pulumi.Context, name string, args *Args, account awsaccount.Account,
	clusterName pulumi.StringOutput, parent pulumi.ResourceOption) (*awseks.FargateProfile, []pulumi.Resource, error) {
	trust, err := fargateTrustPolicy(account.Partition, args.Region, account.ID, args.ClusterName)
	if err != nil {
		return nil, nil, err
	}
	role, err := iam.NewRole(ctx, name+"-fargate-pod-execution", args.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("Fargate pod execution role of EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: pulumi.String(trust),
		Tags:             pulumi.ToStringMap(args.Tags),
	}), parent)
	if err != nil {
		return nil, nil, fmt.Errorf("creating Fargate pod execution role: %w", err)
	}
	attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-fargate-pod-execution", &iam.RolePolicyAttachmentArgs{
		Role:      role.Name,
		PolicyArn: pulumi.Sprintf("arn:%s:iam::aws:policy/AmazonEKSFargatePodExecutionRolePolicy", account.Partition),
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("attaching Fargate pod execution policy: %w", err)
	}
	profile, err := awseks.NewFargateProfile(ctx, name+"-karpenter", &awseks.FargateProfileArgs{
		ClusterName:         clusterName,
		PodExecutionRoleArn: role.Arn,
		// Fargate accepts only private subnets.
		SubnetIds: args.PrivateSubnetIDs,
		Selectors: awseks.FargateProfileSelectorArray{
			awseks.FargateProfileSelectorArgs{Namespace: pulumi.String(args.FargateNamespace)},
		},
		Tags: pulumi.ToStringMap(args.Tags),
	},
		parent,
		// Pods scheduled onto the profile pull their images with this policy.
		pulumi.DependsOn([]pulumi.Resource{attachment}),
		pulumi.Timeouts(&pulumi.CustomTimeouts{Create: bounds.FargateProfile.String()}),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("creating Fargate profile: %w", err)
	}
	return profile, []pulumi.Resource{role, attachment, profile}, nil
}

// fargateTrustPolicy lets only Fargate profiles of this cluster assume the
// pod execution role (the confused-deputy guard AWS documents).
func fargateTrustPolicy(partition, region, account, clusterName string) (string, error) {
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "eks-fargate-pods.amazonaws.com"},
			"Action":    "sts:AssumeRole",
			"Condition": map[string]any{"ArnLike": map[string]any{
				"aws:SourceArn": fmt.Sprintf("arn:%s:eks:%s:%s:fargateprofile/%s/*", partition, region, account, clusterName),
			}},
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding Fargate trust policy: %w", err)
	}
	return string(b), nil
}
