package karpenter

import (
	"fmt"
	"maps"
	"slices"

	"nodeless-eks/internal/awsaccount"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// nodeManagedPolicies are the AWS managed policies of the node role, keyed
// by the child-name suffix of their attachment.
var nodeManagedPolicies = map[string]string{
	"worker": "AmazonEKSWorkerNodePolicy",
	"cni":    "AmazonEKS_CNI_Policy",
	"ecr":    "AmazonEC2ContainerRegistryPullOnly",
	"ssm":    "AmazonSSMManagedInstanceCore",
}

type iamResources struct {
	controllerPolicy           *iam.Policy
	controllerRole             *iam.Role
	controllerPolicyAttachment *iam.RolePolicyAttachment
	nodeRole                   *iam.Role
	nodePolicyAttachments      []pulumi.Resource
	nodeAccessEntry            *awseks.AccessEntry
}

// newIAM creates the controller and node roles. Only the controller role's
// trust waits for the cluster (its OIDC provider); the policies, the node
// role and its attachments are created while the control plane comes up.
func newIAM(ctx *pulumi.Context, name string, args *Args, account awsaccount.Account, queueArn pulumi.StringOutput,
	parent pulumi.ResourceOrInvokeOption) (*iamResources, error) {
	tags := pulumi.ToStringMap(args.Tags)
	out := &iamResources{}

	nodeTrust, err := NodeTrustPolicy()
	if err != nil {
		return nil, err
	}
	out.nodeRole, err = iam.NewRole(ctx, name+"-node", args.IAM.Role(&iam.RoleArgs{
		Name:             pulumi.String(NodeRoleName(args.ClusterName)),
		Description:      pulumi.Sprintf("Nodes that Karpenter launches for EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: pulumi.String(nodeTrust),
		Tags:             tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating node role: %w", err)
	}
	for _, suffix := range slices.Sorted(maps.Keys(nodeManagedPolicies)) {
		attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-node-"+suffix, &iam.RolePolicyAttachmentArgs{
			Role:      out.nodeRole.Name,
			PolicyArn: pulumi.Sprintf("arn:%s:iam::aws:policy/%s", account.Partition, nodeManagedPolicies[suffix]),
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("attaching %s to the node role: %w", nodeManagedPolicies[suffix], err)
		}
		out.nodePolicyAttachments = append(out.nodePolicyAttachments, attachment)
	}
	out.nodeAccessEntry, err = awseks.NewAccessEntry(ctx, name+"-node", &awseks.AccessEntryArgs{
		ClusterName:  args.CreatedClusterName,
		PrincipalArn: out.nodeRole.Arn,
		// EC2_LINUX grants system:nodes; Karpenter creates the instance profiles.
		Type: pulumi.String("EC2_LINUX"),
		Tags: tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating node access entry: %w", err)
	}

	controllerPolicy := pulumi.All(out.nodeRole.Arn, queueArn).ApplyT(func(v []any) (string, error) {
		return ControllerPolicy(PolicyScope{
			Partition: account.Partition, Region: args.Region, AccountID: account.ID,
			ClusterName: args.ClusterName, NodeRoleArn: v[0].(string), QueueArn: v[1].(string),
		})
	}).(pulumi.StringOutput)
	out.controllerPolicy, err = iam.NewPolicy(ctx, name+"-controller", args.IAM.Policy(&iam.PolicyArgs{
		Description: pulumi.Sprintf("Karpenter controller of EKS cluster %s", args.ClusterName),
		Policy:      controllerPolicy,
		Tags:        tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating controller policy: %w", err)
	}

	trust := pulumi.All(args.OidcProviderArn, args.OidcIssuer).ApplyT(func(v []any) (string, error) {
		return ControllerTrustPolicy(v[0].(string), v[1].(string))
	}).(pulumi.StringOutput)
	out.controllerRole, err = iam.NewRole(ctx, name+"-controller", args.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("Karpenter controller (IRSA) of EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: trust,
		Tags:             tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating controller role: %w", err)
	}
	out.controllerPolicyAttachment, err = iam.NewRolePolicyAttachment(ctx, name+"-controller", &iam.RolePolicyAttachmentArgs{
		Role:      out.controllerRole.Name,
		PolicyArn: out.controllerPolicy.Arn,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("attaching controller policy: %w", err)
	}
	return out, nil
}

// all is every resource newIAM created.
func (r *iamResources) all() []pulumi.Resource {
	return slices.Concat([]pulumi.Resource{r.nodeRole, r.nodeAccessEntry, r.controllerPolicy, r.controllerRole, r.controllerPolicyAttachment},
		r.nodePolicyAttachments)
}
