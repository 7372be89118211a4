package cluster

import (
	"fmt"

	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// newNodeSecurityGroup creates the security group that Karpenter's nodes
// (and, through the ENIConfigs, their pods) join; it needs only the VPC,
// and newNodeSecurityGroupRules connects it to the cluster's.
func newNodeSecurityGroup(ctx *pulumi.Context, name string, args *Args, parent pulumi.ResourceOption) (*ec2.SecurityGroup, error) {
	tags := pulumi.StringMap{"Name": pulumi.String(args.ClusterName + "-node")}
	for k, v := range args.Tags {
		tags[k] = pulumi.String(v)
	}
	// Last, so that no stack tag replaces it: deploy/'s policy scopes
	// security-group writes by it.
	tags[names.DiscoveryTagKey] = pulumi.String(args.ClusterName)
	sg, err := ec2.NewSecurityGroup(ctx, name+"-node", &ec2.SecurityGroupArgs{
		Description: pulumi.Sprintf("Karpenter nodes of EKS cluster %s", args.ClusterName),
		VpcId:       args.VpcID,
		Tags:        tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating node security group: %w", err)
	}
	return sg, nil
}

// newNodeSecurityGroupRules lets nodes talk to each other, and to the
// control plane and Fargate pods, which sit in the EKS-created cluster
// security group.
func newNodeSecurityGroupRules(ctx *pulumi.Context, name string, sg *ec2.SecurityGroup, clusterSG pulumi.StringOutput,
	parent pulumi.ResourceOption) ([]pulumi.Resource, error) {
	rules := []struct {
		role string
		args *ec2.SecurityGroupRuleArgs
	}{
		{"node-from-node", &ec2.SecurityGroupRuleArgs{
			Description: pulumi.String("nodes and pods to each other"),
			Type:        pulumi.String("ingress"), SecurityGroupId: sg.ID(), Self: pulumi.Bool(true),
			Protocol: pulumi.String("-1"), FromPort: pulumi.Int(0), ToPort: pulumi.Int(0),
		}},
		{"node-from-cluster", &ec2.SecurityGroupRuleArgs{
			Description: pulumi.String("control plane and Fargate pods to nodes (kubelet, webhooks)"),
			Type:        pulumi.String("ingress"), SecurityGroupId: sg.ID(), SourceSecurityGroupId: clusterSG,
			Protocol: pulumi.String("-1"), FromPort: pulumi.Int(0), ToPort: pulumi.Int(0),
		}},
		{"node-egress", &ec2.SecurityGroupRuleArgs{
			Description: pulumi.String("nodes to AWS APIs, registries and the internet"),
			Type:        pulumi.String("egress"), SecurityGroupId: sg.ID(), CidrBlocks: pulumi.ToStringArray([]string{"0.0.0.0/0"}),
			Protocol: pulumi.String("-1"), FromPort: pulumi.Int(0), ToPort: pulumi.Int(0),
		}},
		{"cluster-from-node", &ec2.SecurityGroupRuleArgs{
			Description: pulumi.String("nodes to the API server and to Fargate pods"),
			Type:        pulumi.String("ingress"), SecurityGroupId: clusterSG, SourceSecurityGroupId: sg.ID(),
			Protocol: pulumi.String("-1"), FromPort: pulumi.Int(0), ToPort: pulumi.Int(0),
		}},
	}
	var created []pulumi.Resource
	for _, r := range rules {
		rule, err := ec2.NewSecurityGroupRule(ctx, name+"-"+r.role, r.args, parent)
		if err != nil {
			return nil, fmt.Errorf("creating security group rule %s: %w", r.role, err)
		}
		created = append(created, rule)
	}
	return created, nil
}
