package cluster

import (
	"encoding/json"
	"fmt"
	"slices"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/iamopts"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// FlowLogs is where a VPC the stack makes logs its traffic: a log group
// of its own, kept RetentionDays, written through a role made with IAM's
// path and boundary.
type FlowLogs struct {
	RetentionDays int
	IAM           iamopts.Options
}

// FlowLogGroupName is the log group of a VPC's flow logs.
func FlowLogGroupName(cluster string) string { return "/aws/vpc-flow-logs/" + cluster }

// harden adds what a security review asks of a VPC, as o says: an S3
// gateway endpoint on the private route tables, the default security group
// held empty, and flow logs.
func (v *Vpc) harden(ctx *pulumi.Context, name string, o *OwnVpc, vpc *ec2.Vpc, privateTables pulumi.StringArray,
	tags func(string) pulumi.StringMap, opts []pulumi.ResourceOption) error {
	if o.S3Endpoint {
		// com.amazonaws.<region>.s3 in every partition: China's S3
		// gateway keeps that prefix where its interface services take
		// cn.com.amazonaws (eksctl pkg/cfn/builder vpc_endpoint_test.go's
		// DescribeVpcEndpointServices answer for cn-north-1).
		endpoint, err := ec2.NewVpcEndpoint(ctx, name+"-s3", &ec2.VpcEndpointArgs{
			VpcId:           vpc.ID(),
			ServiceName:     pulumi.Sprintf("com.amazonaws.%s.s3", o.Region),
			VpcEndpointType: pulumi.String("Gateway"),
			RouteTableIds:   privateTables,
			Tags:            tags(o.Prefix + "-s3"),
		}, opts...)
		if err != nil {
			return fmt.Errorf("creating the S3 gateway endpoint: %w", err)
		}
		v.Owned = append(v.Owned, endpoint)
	}
	if o.EmptyDefaultSecurityGroup {
		// Empty lists, not none: with none the provider empties the group
		// when it adopts it and ignores rules added later (pulumi-aws
		// v6.83.4 ec2.DefaultSecurityGroup; ingress and egress are
		// optional and computed). Deleting it forgets the group, which
		// AWS deletes with the VPC.
		group, err := ec2.NewDefaultSecurityGroup(ctx, name+"-default", &ec2.DefaultSecurityGroupArgs{
			VpcId:   vpc.ID(),
			Ingress: ec2.DefaultSecurityGroupIngressArray{},
			Egress:  ec2.DefaultSecurityGroupEgressArray{},
			Tags:    tags(o.Prefix + "-default"),
		}, opts...)
		if err != nil {
			return fmt.Errorf("emptying the default security group: %w", err)
		}
		v.Owned = append(v.Owned, group)
	}
	if o.FlowLogs != nil {
		return v.flowLogs(ctx, name, o, vpc, tags, opts)
	}
	return nil
}

// flowLogs logs the VPC's accepted and rejected traffic to a log group of
// its own, through a role that only VPC Flow Logs of this account may
// assume, for flow logs of this region (the confused-deputy conditions
// the VPC user guide, flow-logs-iam-role.html, gives), and that may write
// only that group.
func (v *Vpc) flowLogs(ctx *pulumi.Context, name string, o *OwnVpc, vpc *ec2.Vpc, tags func(string) pulumi.StringMap,
	opts []pulumi.ResourceOption) error {
	f := o.FlowLogs
	account, err := awsaccount.Lookup(ctx, pulumi.Parent(v))
	if err != nil {
		return err
	}
	group, err := cloudwatch.NewLogGroup(ctx, name+"-flow-logs", &cloudwatch.LogGroupArgs{
		Name:            pulumi.String(FlowLogGroupName(o.ClusterName)),
		RetentionInDays: pulumi.Int(f.RetentionDays),
		Tags:            tags(o.Prefix + "-flow-logs"),
	}, opts...)
	if err != nil {
		return fmt.Errorf("creating the flow logs' log group: %w", err)
	}
	trust, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Principal": map[string]any{"Service": "vpc-flow-logs.amazonaws.com"}, "Action": "sts:AssumeRole",
		"Condition": map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": account.ID},
			"ArnLike":      map[string]any{"aws:SourceArn": fmt.Sprintf("arn:%s:ec2:%s:%s:vpc-flow-log/*", account.Partition, o.Region, account.ID)},
		},
	}}})
	if err != nil {
		return err
	}
	role, err := iam.NewRole(ctx, name+"-flow-logs", f.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("VPC flow logs of EKS cluster %s", o.ClusterName),
		AssumeRolePolicy: pulumi.String(string(trust)),
		Tags:             tags(o.Prefix + "-flow-logs"),
	}), opts...)
	if err != nil {
		return fmt.Errorf("creating the flow logs' role: %w", err)
	}
	policy, err := iam.NewPolicy(ctx, name+"-flow-logs", f.IAM.Policy(&iam.PolicyArgs{
		Description: pulumi.Sprintf("Writes the VPC flow logs of EKS cluster %s", o.ClusterName),
		Policy:      pulumi.String(FlowLogPolicy(account.Partition, o.Region, account.ID, o.ClusterName)),
	}), opts...)
	if err != nil {
		return fmt.Errorf("creating the flow logs' policy: %w", err)
	}
	attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-flow-logs", &iam.RolePolicyAttachmentArgs{
		Role: role.Name, PolicyArn: policy.Arn,
	}, opts...)
	if err != nil {
		return fmt.Errorf("attaching the flow logs' policy: %w", err)
	}
	flowLog, err := ec2.NewFlowLog(ctx, name, &ec2.FlowLogArgs{
		VpcId:              vpc.ID(),
		TrafficType:        pulumi.String("ALL"),
		LogDestinationType: pulumi.String("cloud-watch-logs"),
		LogDestination:     group.Arn,
		IamRoleArn:         role.Arn,
		Tags:               tags(o.Prefix + "-flow-logs"),
	}, append(slices.Clip(opts),
		// Delivery starts at once, as the role may write the group.
		pulumi.DependsOn([]pulumi.Resource{attachment}))...)
	if err != nil {
		return fmt.Errorf("creating the flow log: %w", err)
	}
	v.Owned = append(v.Owned, group, role, policy, attachment, flowLog)
	return nil
}

// FlowLogPolicy lets the flow logs' role write their log group, and no
// other (the VPC user guide's policy, flow-logs-iam-role.html, scoped to
// the group where IAM can scope it).
func FlowLogPolicy(partition, region, account, cluster string) string {
	group := fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s", partition, region, account, FlowLogGroupName(cluster))
	doc, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{
		map[string]any{"Effect": "Allow", "Action": []string{"logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"},
			"Resource": []string{group, group + ":*"}},
		// DescribeLogGroups takes no resource-level scope (the service
		// authorization reference, which deploy/'s IAM catalogue test reads).
		map[string]any{"Effect": "Allow", "Action": "logs:DescribeLogGroups", "Resource": "*"},
	}})
	return string(doc)
}
