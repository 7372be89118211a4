package cluster

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/kms"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// auditPrerequisites are what must exist before the EKS cluster: none of
// them waits for anything, so they are created in the seconds before the
// cluster's ten minutes start.
type auditPrerequisites struct {
	// secretsKeyArn encrypts Secrets (ours or the configured key).
	secretsKeyArn pulumi.StringOutput
	// logGroupName is the control-plane log group, "" without logging.
	logGroupName pulumi.StringOutput
	// serviceRole is the cluster's service role, nil when pulumi-eks's is
	// kept (Args.KeepPulumiEKSRole).
	serviceRole *iam.Role
	// prerequisites must exist before the cluster is created.
	prerequisites []pulumi.Resource
	// created is every resource created here.
	created []pulumi.Resource
}

// newAuditPrerequisites creates what a security review asks of the control
// plane: a log group with a retention, a KMS key for Secrets, and the
// service role, carrying the organisation's IAM path and boundary when it
// sets them. The role exists whether or not they are set, so that adding a
// boundary to a running stack (a quick-start cluster handed to a pipeline
// whose runs may only create bounded roles) updates the role in place: a
// role created by pulumi-eks instead would have to give way to a new one,
// and EKS replaces a cluster whose service role changes.
func newAuditPrerequisites(ctx *pulumi.Context, name string, args *Args, account awsaccount.Account,
	parent pulumi.ResourceOption) (*auditPrerequisites, error) {
	out := &auditPrerequisites{logGroupName: pulumi.String("").ToStringOutput()}
	tags := pulumi.ToStringMap(args.Tags)

	if len(args.LogTypes) > 0 {
		group, err := cloudwatch.NewLogGroup(ctx, name+"-control-plane", &cloudwatch.LogGroupArgs{
			// The name EKS writes to; created by EKS itself it never expires.
			Name:            pulumi.String(ControlPlaneLogGroupName(args.ClusterName)),
			RetentionInDays: pulumi.Int(args.LogRetentionDays),
			Tags:            tags,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("creating control-plane log group: %w", err)
		}
		out.logGroupName = group.Name
		out.prerequisites = append(out.prerequisites, group)
		out.created = append(out.created, group)
	}

	if args.KmsKeyArn != "" {
		out.secretsKeyArn = pulumi.String(args.KmsKeyArn).ToStringOutput()
	} else {
		keyOpts := []pulumi.ResourceOption{parent}
		if args.Protect {
			// Deleting the key makes every Secret in a backup unreadable.
			keyOpts = append(keyOpts, pulumi.Protect(true))
		}
		keyTags := pulumi.ToStringMap(args.Tags)
		// Last, so that no stack tag replaces it: deploy/'s policy scopes
		// key changes by it.
		keyTags[names.ClusterTagKey] = pulumi.String(args.ClusterName)
		key, err := kms.NewKey(ctx, name+"-secrets", &kms.KeyArgs{
			Description:          pulumi.Sprintf("Envelope encryption of Secrets of EKS cluster %s", args.ClusterName),
			EnableKeyRotation:    pulumi.Bool(true),
			DeletionWindowInDays: pulumi.Int(30),
			// The deploy role reaches only the keys tagged for its clusters.
			Tags: keyTags,
		}, keyOpts...)
		if err != nil {
			return nil, fmt.Errorf("creating Secrets encryption key: %w", err)
		}
		out.secretsKeyArn = key.Arn
		out.created = append(out.created, key)
	}

	if !args.KeepPulumiEKSRole {
		trust, err := ServiceRoleTrustPolicy()
		if err != nil {
			return nil, err
		}
		role, err := iam.NewRole(ctx, name+"-service", args.IAM.Role(&iam.RoleArgs{
			Description:      pulumi.Sprintf("Service role of EKS cluster %s", args.ClusterName),
			AssumeRolePolicy: pulumi.String(trust),
			Tags:             tags,
		}), parent)
		if err != nil {
			return nil, fmt.Errorf("creating cluster service role: %w", err)
		}
		attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-service", &iam.RolePolicyAttachmentArgs{
			Role:      role.Name,
			PolicyArn: pulumi.Sprintf("arn:%s:iam::aws:policy/AmazonEKSClusterPolicy", account.Partition),
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("attaching AmazonEKSClusterPolicy to the cluster service role: %w", err)
		}
		out.serviceRole = role
		out.prerequisites = append(out.prerequisites, attachment)
		out.created = append(out.created, role, attachment)
	}
	return out, nil
}

// ControlPlaneLogGroupName is the log group EKS sends control-plane logs to.
func ControlPlaneLogGroupName(clusterName string) string {
	return "/aws/eks/" + clusterName + "/cluster"
}

// ServiceRoleTrustPolicy lets EKS assume the cluster's service role, as
// pulumi-eks's own service role does.
func ServiceRoleTrustPolicy() (string, error) {
	b, err := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "eks.amazonaws.com"},
			"Action":    []string{"sts:AssumeRole", "sts:TagSession"},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("encoding cluster service role trust policy: %w", err)
	}
	return string(b), nil
}
