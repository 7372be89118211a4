// Package deployerpolicy holds the IAM documents of the program's deploy
// roles: what a Pulumi Deployments run of the program may create, change
// and delete for its clusters (DeployerPolicy), and the permissions
// boundary every role such a run creates must carry (WorkloadBoundary).
// They describe the program's own needs, so they live beside it; deploy/
// registers them in each account.
package deployerpolicy

import (
	"fmt"
	"slices"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
)

// DeployRolePrefix starts the names of the deploy roles, their policies
// and boundaries. No cluster name may start alike (deploy/ checks it), so
// no deployer policy, which is scoped to cluster names, reaches them.
const DeployRolePrefix = "deploy-"

type Scope struct {
	Partition, Region, Account string
	// Cluster is a stack's cluster name; Prefix, for the review role,
	// admits every cluster name that starts with it.
	Cluster, Prefix string
	// BoundaryArn is the permissions boundary every role a run creates
	// must carry, reaching only the scope's clusters.
	BoundaryArn string
}

func (s Scope) arn(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", s.Partition, service, s.Region, s.Account, resource)
}

func (s Scope) iam(resource string) string {
	return fmt.Sprintf("arn:%s:iam::%s:%s", s.Partition, s.Account, resource)
}

// clusterNames are the patterns of the scope's cluster names.
func (s Scope) clusterNames() []string {
	var out []string
	if s.Cluster != "" {
		out = append(out, s.Cluster)
	}
	if s.Prefix != "" {
		out = append(out, s.Prefix+"*")
	}
	return out
}

// childNames are the patterns of the names of what the program creates for
// those clusters: every child is named "<clusterName>-<role>".
func (s Scope) childNames() []string {
	var out []string
	if s.Cluster != "" {
		out = append(out, s.Cluster+"-*")
	}
	if s.Prefix != "" {
		out = append(out, s.Prefix+"*")
	}
	return out
}

// each maps every pattern through f.
func each(patterns []string, f func(string) []string) []string {
	var out []string
	for _, p := range patterns {
		out = append(out, f(p)...)
	}
	return out
}

// workloadManagedPolicies are the AWS managed policies the program attaches
// to the roles it creates; a deploy run may attach no other AWS policy.
var workloadManagedPolicies = []string{
	"AmazonEKSClusterPolicy", "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly",
	"AmazonSSMManagedInstanceCore", "AmazonEKSFargatePodExecutionRolePolicy", "service-role/AmazonEBSCSIDriverPolicy",
}

// DeployerPolicy allows what the root program creates, updates and deletes
// for the scope's clusters, and nothing that would let a run escalate: every
// role it creates or changes must carry the scope's boundary, only the
// program's AWS managed policies and policies of its own clusters may be
// attached, the boundary can be neither removed nor rewritten, and KMS keys
// and security groups are reached through the tags the program puts on
// them. deployerActions lists, per resource type the program registers, the
// actions a statement here must allow (a test holds the two together).
func DeployerPolicy(s Scope) iampolicy.Document {
	clusters, children := s.clusterNames(), s.childNames()
	roles := each(children, func(n string) []string { return []string{s.iam("role/" + n), s.iam("role/*/" + n)} })
	policies := each(children, func(n string) []string { return []string{s.iam("policy/" + n), s.iam("policy/*/" + n)} })
	attachable := slices.Clone(policies)
	for _, p := range workloadManagedPolicies {
		attachable = append(attachable, fmt.Sprintf("arn:%s:iam::aws:policy/%s", s.Partition, p))
	}
	withBoundary := map[string]any{"StringEquals": map[string]any{"iam:PermissionsBoundary": s.BoundaryArn}}
	inRegion := map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": s.Region}}
	statements := append([]iampolicy.Statement{
		// The load balancers' reads: the destroy's leftover audit
		// (internal/cleanup, audit.go), with ec2:Describe*.
		iampolicy.Statement{Sid: "ReadForLookupsAndPlans", Effect: "Allow", Resource: "*",
			Action: []string{"ec2:Describe*", "eks:DescribeAddonVersions", "eks:DescribeAddonConfiguration", "eks:ListClusters",
				"logs:DescribeLogGroups", "kms:ListAliases", "sqs:ListQueues", "elasticloadbalancing:DescribeLoadBalancers",
				"elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTags"},
			Condition: inRegion},
		// The audit lists Karpenter's instance profiles of each cluster by
		// their path: names and roles only. The action takes no resource
		// type (IAM's service authorization reference, by iam-data).
		iampolicy.Statement{Sid: "AuditInstanceProfiles", Effect: "Allow", Action: "iam:ListInstanceProfiles", Resource: "*"},
		// The workloads' cleanup marks the volumes it keeps, of its own
		// cluster, for the audit (names.KeptTagKey), with that tag alone.
		iampolicy.Statement{Sid: "MarkKeptVolumes", Effect: "Allow", Action: "ec2:CreateTags", Resource: s.arn("ec2", "volume/*"),
			Condition: map[string]any{
				"StringLike":                map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters},
				"ForAllValues:StringEquals": map[string]any{"aws:TagKeys": []string{names.KeptTagKey}},
				"Null":                      map[string]any{"aws:TagKeys": "false"},
			}},
		// ListRoles takes no resource-level scope (IAM's service
		// authorization reference); preview lists the Spot service-linked role.
		iampolicy.Statement{Sid: "FindSpotServiceLinkedRole", Effect: "Allow", Action: "iam:ListRoles", Resource: "*"},
		iampolicy.Statement{Sid: "PublicAMIParameters", Effect: "Allow", Action: "ssm:GetParametersByPath",
			// Preview checks that every pinned AMI is published, where Karpenter reads it.
			Resource: fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", s.Partition, s.Region)},
		iampolicy.Statement{Sid: "EKS", Effect: "Allow", Action: "eks:*",
			Resource: each(clusters, func(n string) []string {
				return []string{s.arn("eks", "cluster/"+n), s.arn("eks", "access-entry/"+n+"/*"), s.arn("eks", "addon/"+n+"/*"),
					s.arn("eks", "fargateprofile/"+n+"/*"), s.arn("eks", "podidentityassociation/"+n+"/*")}
			})},
		iampolicy.Statement{Sid: "EKSAccessPolicies", Effect: "Allow", Action: []string{"eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy"},
			Resource: fmt.Sprintf("arn:%s:eks::aws:cluster-access-policy/*", s.Partition)},
		// IAM is global: no region condition on these.
		iampolicy.Statement{Sid: "ReadRolesAndPolicies", Effect: "Allow",
			Action: []string{"iam:GetRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListInstanceProfilesForRole",
				"iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions"},
			Resource: append(slices.Clone(roles), policies...)},
		iampolicy.Statement{Sid: "RolesCarryTheBoundary", Effect: "Allow",
			Action:   []string{"iam:CreateRole", "iam:PutRolePermissionsBoundary", "iam:PutRolePolicy", "iam:DeleteRolePolicy"},
			Resource: roles, Condition: withBoundary},
		iampolicy.Statement{Sid: "AttachOnlyTheProgramsPolicies", Effect: "Allow",
			Action:   []string{"iam:AttachRolePolicy", "iam:DetachRolePolicy"},
			Resource: roles,
			Condition: map[string]any{
				"StringEquals": map[string]any{"iam:PermissionsBoundary": s.BoundaryArn},
				"ArnLike":      map[string]any{"iam:PolicyARN": attachable},
			}},
		iampolicy.Statement{Sid: "ManageRolesOfTheClusters", Effect: "Allow",
			Action: []string{"iam:DeleteRole", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:UpdateAssumeRolePolicy",
				"iam:TagRole", "iam:UntagRole"},
			Resource: roles},
		// A policy can hold anything, but only a role with the boundary can
		// carry it, and the boundary caps what it grants.
		iampolicy.Statement{Sid: "PoliciesOfTheClusters", Effect: "Allow",
			Action: []string{"iam:CreatePolicy", "iam:DeletePolicy", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion",
				"iam:TagPolicy", "iam:UntagPolicy"},
			Resource: policies},
		iampolicy.Statement{Sid: "PassOnlyRolesOfTheClustersToEKS", Effect: "Allow", Action: "iam:PassRole", Resource: roles,
			Condition: map[string]any{"StringEquals": map[string]any{"iam:PassedToService": []string{"eks.amazonaws.com", "eks-fargate-pods.amazonaws.com", "pods.eks.amazonaws.com"}}}},
		iampolicy.Statement{Sid: "ClusterOIDCProvider", Effect: "Allow",
			Action: []string{"iam:GetOpenIDConnectProvider", "iam:CreateOpenIDConnectProvider", "iam:DeleteOpenIDConnectProvider", "iam:TagOpenIDConnectProvider",
				"iam:UntagOpenIDConnectProvider", "iam:UpdateOpenIDConnectProviderThumbprint", "iam:AddClientIDToOpenIDConnectProvider"},
			Resource: s.iam(fmt.Sprintf("oidc-provider/oidc.eks.%s.amazonaws.com/id/*", s.Region))},
		// EKS's, and EC2 Spot's, which the program ensures and adopts
		// (karpenter/spot.go) and never deletes.
		iampolicy.Statement{Sid: "ServiceLinkedRoles", Effect: "Allow", Action: "iam:CreateServiceLinkedRole", Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-fargate.amazonaws.com", "spot.amazonaws.com"}}}},
		iampolicy.Statement{Sid: "SpotServiceLinkedRole", Effect: "Allow", Action: "iam:GetRole",
			Resource: s.iam("role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot")},
		iampolicy.Statement{Sid: "InterruptionQueue", Effect: "Allow",
			Action:   []string{"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:GetQueueUrl", "sqs:TagQueue", "sqs:UntagQueue", "sqs:ListQueueTags"},
			Resource: each(children, func(n string) []string { return []string{s.arn("sqs", n)} })},
		iampolicy.Statement{Sid: "InterruptionRules", Effect: "Allow",
			Action: []string{"events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:PutTargets", "events:RemoveTargets",
				"events:ListTargetsByRule", "events:TagResource", "events:UntagResource", "events:ListTagsForResource"},
			Resource: each(children, func(n string) []string { return []string{s.arn("events", "rule/"+n)} })},
		// Security groups: the node group the program creates carries the
		// discovery tag naming its cluster; EKS tags the cluster group it
		// creates with aws:eks:cluster-name. Groups of anyone else are out
		// of reach.
		iampolicy.Statement{Sid: "CreateNodeSecurityGroup", Effect: "Allow", Action: "ec2:CreateSecurityGroup",
			Resource:  s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:RequestTag/" + names.DiscoveryTagKey: clusters}}},
		// A group is created in a VPC, which may be one the stack names and
		// did not make, so any VPC of the region: a new group opens
		// nothing.
		iampolicy.Statement{Sid: "CreateSecurityGroupsInVPCs", Effect: "Allow", Action: "ec2:CreateSecurityGroup",
			Resource: s.arn("ec2", "vpc/*")},
		iampolicy.Statement{Sid: "TagNodeSecurityGroupOnCreate", Effect: "Allow", Action: "ec2:CreateTags",
			Resource:  s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringEquals": map[string]any{"ec2:CreateAction": "CreateSecurityGroup"}}},
		iampolicy.Statement{Sid: "ChangeNodeSecurityGroups", Effect: "Allow",
			Action:    securityGroupWrites,
			Resource:  []string{s.arn("ec2", "security-group/*")},
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/" + names.DiscoveryTagKey: clusters}}},
		iampolicy.Statement{Sid: "ChangeClusterSecurityGroups", Effect: "Allow",
			Action:    []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:UpdateSecurityGroupRuleDescriptionsIngress"},
			Resource:  []string{s.arn("ec2", "security-group/*")},
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/aws:eks:cluster-name": clusters}}},
		// A rule's own ARN: what its group's statements above allow on the
		// group, the rule carries too (the group's tag condition is what
		// scopes the request).
		iampolicy.Statement{Sid: "SecurityGroupRules", Effect: "Allow",
			Action: []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupIngress",
				"ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules", "ec2:CreateTags"},
			Resource: s.arn("ec2", "security-group-rule/*")},
		// The VPC a stack makes when it names none (cluster/ownvpc.go):
		// everything in it carries names.ClusterTagKey with the cluster's
		// name, from the request that creates it on. aws:RequestTag is in
		// the context of every resource a request names, so each create is
		// allowed on the type it creates alone: what it goes into (the VPC
		// of a subnet, the subnet and address of a NAT gateway) must carry
		// the cluster's tag (ChangeTheClustersNetwork).
	}, createsTagged(s, clusters)...)
	statements = append(statements,
		iampolicy.Statement{Sid: "TagTheClustersNetworkOnCreate", Effect: "Allow", Action: "ec2:CreateTags",
			Resource: []string{s.arn("ec2", "vpc/*"), s.arn("ec2", "subnet/*"), s.arn("ec2", "internet-gateway/*"), s.arn("ec2", "route-table/*"),
				s.arn("ec2", "elastic-ip/*"), s.arn("ec2", "natgateway/*"), s.arn("ec2", "vpc-flow-log/*"), s.arn("ec2", "vpc-endpoint/*")},
			Condition: map[string]any{"StringEquals": map[string]any{"ec2:CreateAction": []string{"CreateVpc", "CreateSubnet",
				"CreateInternetGateway", "CreateRouteTable", "AllocateAddress", "CreateNatGateway", "CreateFlowLogs", "CreateVpcEndpoint"}}}},
		// A flow log and the S3 endpoint are made in, and change, the VPC
		// and its route tables, which carry the cluster's tag.
		iampolicy.Statement{Sid: "ChangeTheClustersNetwork", Effect: "Allow",
			Action: []string{"ec2:DeleteVpc", "ec2:ModifyVpcAttribute", "ec2:AssociateVpcCidrBlock", "ec2:DisassociateVpcCidrBlock",
				"ec2:CreateSubnet", "ec2:DeleteSubnet", "ec2:ModifySubnetAttribute", "ec2:AttachInternetGateway", "ec2:DetachInternetGateway",
				"ec2:DeleteInternetGateway", "ec2:CreateRouteTable", "ec2:DeleteRouteTable", "ec2:CreateRoute", "ec2:ReplaceRoute",
				"ec2:DeleteRoute", "ec2:AssociateRouteTable", "ec2:DisassociateRouteTable", "ec2:ReplaceRouteTableAssociation",
				"ec2:CreateNatGateway", "ec2:DeleteNatGateway",
				"ec2:AssociateAddress", "ec2:DisassociateAddress", "ec2:ReleaseAddress", "ec2:CreateSecurityGroup", "ec2:CreateTags", "ec2:DeleteTags",
				"ec2:CreateFlowLogs", "ec2:DeleteFlowLogs", "ec2:CreateVpcEndpoint", "ec2:ModifyVpcEndpoint", "ec2:DeleteVpcEndpoints"},
			Resource: []string{s.arn("ec2", "vpc/*"), s.arn("ec2", "subnet/*"), s.arn("ec2", "internet-gateway/*"), s.arn("ec2", "route-table/*"),
				s.arn("ec2", "elastic-ip/*"), s.arn("ec2", "natgateway/*"), s.arn("ec2", "vpc-flow-log/*"), s.arn("ec2", "vpc-endpoint/*")},
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters}}},
		// The default security group of a VPC the stack makes: AWS makes it
		// untagged, and pulumi-aws tags it, then revokes its rules
		// (terraform-provider-aws internal/service/ec2, the default security
		// group's create). A run may claim a group that carries no tag a
		// cluster, Karpenter, EKS or the LB controller claims groups by: in
		// its account and region, one that nobody's cluster made
		// (THREATS.md). Neither statement may write the tags Karpenter and
		// the LB controller pick groups by, so no selector by those tags
		// puts a claimed group on a cluster's nodes or load balancers.
		iampolicy.Statement{Sid: "ClaimTheDefaultSecurityGroup", Effect: "Allow", Action: "ec2:CreateTags",
			Resource: s.arn("ec2", "security-group/*"),
			Condition: map[string]any{
				"StringLike": map[string]any{"aws:RequestTag/" + names.ClusterTagKey: clusters},
				"Null": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: "true", "aws:ResourceTag/" + names.DiscoveryTagKey: "true",
					"aws:ResourceTag/aws:eks:cluster-name": "true", "aws:ResourceTag/elbv2.k8s.aws/cluster": "true"},
				"ForAllValues:StringNotEquals": groupPickingTags,
			}},
		iampolicy.Statement{Sid: "EmptyTheDefaultSecurityGroup", Effect: "Allow",
			Action:   []string{"ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:CreateTags", "ec2:DeleteTags"},
			Resource: s.arn("ec2", "security-group/*"),
			Condition: map[string]any{
				"StringLike":                   map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters},
				"ForAllValues:StringNotEquals": groupPickingTags,
			}},
		// The flow logs' role alone (cluster/hardening.go: <cluster>-flow-logs-*).
		iampolicy.Statement{Sid: "PassFlowLogRolesToVPCFlowLogs", Effect: "Allow", Action: "iam:PassRole",
			Resource: each(clusters, func(c string) []string {
				return []string{s.iam("role/" + c + "-flow-logs-*"), s.iam("role/*/" + c + "-flow-logs-*")}
			}),
			Condition: map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "vpc-flow-logs.amazonaws.com"}}},
		// The network sweep (internal/cleanup, network.go): the VPC CNI's
		// detached interfaces of its own cluster, by the tag the add-on
		// gives them (cluster/vpccni.go), and those the CNI made before
		// that tag (its instance tag, and no cluster's), which the sweep
		// deletes only once their instance is gone: any of the region's,
		// as of the VPC CNI policy the boundary allows. The groups the LB
		// controller and EKS made carry their own tags.
		iampolicy.Statement{Sid: "SweepTheClustersInterfaces", Effect: "Allow", Action: "ec2:DeleteNetworkInterface",
			Resource:  s.arn("ec2", "network-interface/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters}}},
		iampolicy.Statement{Sid: "SweepUntaggedCNIInterfaces", Effect: "Allow", Action: "ec2:DeleteNetworkInterface",
			Resource: s.arn("ec2", "network-interface/*"),
			Condition: map[string]any{"Null": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: "true",
				"aws:ResourceTag/node.k8s.amazonaws.com/instance_id": "false"}}},
		iampolicy.Statement{Sid: "SweepTheClustersLoadBalancerGroups", Effect: "Allow",
			Action:    []string{"ec2:DeleteSecurityGroup", "ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress"},
			Resource:  s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/elbv2.k8s.aws/cluster": clusters}}},
		iampolicy.Statement{Sid: "SweepTheClustersOwnGroup", Effect: "Allow", Action: "ec2:DeleteSecurityGroup",
			Resource:  s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/aws:eks:cluster-name": clusters}}},
		// GuardDuty's runtime-monitoring endpoint and group, which the sweep
		// deletes in a VPC the stack made (internal/cleanup, network.go):
		// by GuardDuty's tag and the endpoint's service, since neither
		// names the VPC's tags, so any of the region's (THREATS.md).
		iampolicy.Statement{Sid: "SweepGuardDutysEndpoint", Effect: "Allow", Action: "ec2:DeleteVpcEndpoints",
			Resource: s.arn("ec2", "vpc-endpoint/*"),
			Condition: map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/GuardDutyManaged": "true",
				// cleanup.GuardDutyServices, held together by the reach table.
				"ec2:VpceServiceName": []string{"com.amazonaws." + s.Region + ".guardduty-data", "com.amazonaws." + s.Region + ".guardduty-data-fips"}}}},
		iampolicy.Statement{Sid: "SweepGuardDutysGroup", Effect: "Allow", Action: "ec2:DeleteSecurityGroup",
			Resource:  s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/GuardDutyManaged": "true"}}},
		// The preflight's room for a VPC and its addresses (config/ownvpc.go).
		iampolicy.Statement{Sid: "NetworkQuotas", Effect: "Allow", Resource: "*",
			Action: []string{"servicequotas:GetServiceQuota", "servicequotas:GetAWSDefaultServiceQuota"}},
		iampolicy.Statement{Sid: "CreateSecretsKey", Effect: "Allow", Action: []string{"kms:CreateKey", "kms:TagResource"}, Resource: "*",
			Condition: map[string]any{
				"StringEquals": map[string]any{"aws:RequestedRegion": s.Region},
				"StringLike":   map[string]any{"aws:RequestTag/" + names.ClusterTagKey: clusters},
			}},
		// KMS has no condition that limits kms:TagResource to the key being
		// created (the KMS developer guide's ABAC page lists aws:RequestTag
		// and aws:ResourceTag only), so a run can tag a key whose policy
		// delegates to IAM as its cluster's. A key already tagged for
		// another cluster it cannot retag (TakeNoOtherClustersKey, below);
		// an untagged key of someone else's it can, and the tag then opens
		// reading it, turning its rotation on, grants to AWS services only
		// (EKS, for the cluster's envelope encryption), and scheduling its
		// deletion with KMS's longest window: the key is unusable while the
		// deletion is pending, until its owner cancels it within 30 days
		// (KMS developer guide, deleting-keys.html). No key policy is ever
		// written: the program leaves the default.
		iampolicy.Statement{Sid: "ManageSecretsKeys", Effect: "Allow",
			Action: []string{"kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation",
				"kms:ListResourceTags", "kms:TagResource"},
			Resource:  s.arn("kms", "key/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters}}},
		iampolicy.Statement{Sid: "GrantSecretsKeysToEKS", Effect: "Allow", Action: "kms:CreateGrant",
			Resource: s.arn("kms", "key/*"),
			Condition: map[string]any{
				"StringLike": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters},
				"Bool":       map[string]any{"kms:GrantIsForAWSResource": "true"},
			}},
		iampolicy.Statement{Sid: "DeleteSecretsKeys", Effect: "Allow", Action: "kms:ScheduleKeyDeletion",
			Resource: s.arn("kms", "key/*"),
			Condition: map[string]any{
				"StringLike":               map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters},
				"NumericGreaterThanEquals": map[string]any{"kms:ScheduleKeyDeletionPendingWindowInDays": "30"},
			}},
		iampolicy.Statement{Sid: "ControlPlaneLogs", Effect: "Allow",
			Action: []string{"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
				"logs:TagResource", "logs:UntagResource", "logs:ListTagsForResource", "logs:TagLogGroup", "logs:ListTagsLogGroup"},
			Resource: each(clusters, func(n string) []string {
				return []string{s.arn("logs", "log-group:/aws/eks/"+n+"/cluster"), s.arn("logs", "log-group:/aws/eks/"+n+"/cluster:*"),
					s.arn("logs", "log-group:/aws/vpc-flow-logs/"+n), s.arn("logs", "log-group:/aws/vpc-flow-logs/"+n+":*")}
			})},
		// Whatever else an organisation attaches to the deploy role, a run
		// can neither lift a boundary nor rewrite it, nor change the deploy
		// roles.
		iampolicy.Statement{Sid: "TakeNoOtherClustersKey", Effect: "Deny",
			Action:   []string{"kms:TagResource", "kms:UntagResource", "kms:CreateGrant", "kms:ScheduleKeyDeletion"},
			Resource: "*",
			Condition: map[string]any{
				"Null":          map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: "false"},
				"StringNotLike": map[string]any{"aws:ResourceTag/" + names.ClusterTagKey: clusters},
			}},
		// ec2:Describe* includes the few describes that return secrets, and
		// nothing the program registers needs them.
		iampolicy.Statement{Sid: "NoSecretDescribes", Effect: "Deny", Resource: "*", Action: secretDescribes},
		iampolicy.Statement{Sid: "KeepBoundaries", Effect: "Deny", Action: "iam:DeleteRolePermissionsBoundary", Resource: "*"},
		iampolicy.Statement{Sid: "KeepTheBoundaryPolicy", Effect: "Deny",
			Action:   []string{"iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:SetDefaultPolicyVersion", "iam:TagPolicy", "iam:UntagPolicy"},
			Resource: s.BoundaryArn},
		iampolicy.Statement{Sid: "KeepTheDeployRoles", Effect: "Deny", NotAction: []string{"iam:Get*", "iam:List*"},
			Resource: []string{s.iam("role/" + DeployRolePrefix + "*"), s.iam("role/*/" + DeployRolePrefix + "*"),
				s.iam("policy/" + DeployRolePrefix + "*"), s.iam("policy/*/" + DeployRolePrefix + "*")}},
	)
	if s.Cluster != "" {
		// The sweep's of the in-tree controller's Classic ELB group, tagged
		// with a key that holds the cluster's name, which no condition can
		// match by pattern: a named cluster's alone (a review stack's
		// sweep names its group, with the command).
		statements = append(statements, iampolicy.Statement{Sid: "SweepTheClustersClassicELBGroups", Effect: "Allow",
			Action: "ec2:DeleteSecurityGroup", Resource: s.arn("ec2", "security-group/*"),
			Condition: map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/kubernetes.io/cluster/" + s.Cluster: "owned"}}})
	}
	return iampolicy.New(statements...)
}

// createsTagged allows each create of the network a stack makes on the
// type it creates, with the cluster's tag in the request.
func createsTagged(s Scope, clusters []string) []iampolicy.Statement {
	var out []iampolicy.Statement
	for _, c := range [][2]string{{"CreateVpc", "vpc"}, {"CreateSubnet", "subnet"}, {"CreateInternetGateway", "internet-gateway"},
		{"CreateRouteTable", "route-table"}, {"AllocateAddress", "elastic-ip"}, {"CreateNatGateway", "natgateway"},
		{"CreateFlowLogs", "vpc-flow-log"}, {"CreateVpcEndpoint", "vpc-endpoint"}} {
		out = append(out, iampolicy.Statement{Sid: "TheClustersNetwork" + c[0], Effect: "Allow", Action: "ec2:" + c[0],
			Resource:  s.arn("ec2", c[1]+"/*"),
			Condition: map[string]any{"StringLike": map[string]any{"aws:RequestTag/" + names.ClusterTagKey: clusters}}})
	}
	return out
}

// secretDescribes are the describes that ec2:Describe* includes and that
// return secrets: instances' user data (DescribeInstanceAttribute,
// DescribeLaunchTemplateVersions, and the launch specifications that
// DescribeSpotInstanceRequests and DescribeSpotFleetRequests return), VPN
// pre-shared keys (DescribeVpnConnections) and bundle tasks' S3 upload
// policies (DescribeBundleTasks), per the EC2 API reference of each. The
// deployer policies and the boundaries deny them alike.
var secretDescribes = []string{
	"ec2:DescribeBundleTasks", "ec2:DescribeInstanceAttribute", "ec2:DescribeLaunchTemplateVersions",
	"ec2:DescribeSpotFleetRequests", "ec2:DescribeSpotInstanceRequests", "ec2:DescribeVpnConnections",
}

// groupPickingTags are the tag keys a claimed default security group may
// not be given: those Karpenter (the EC2NodeClass's
// securityGroupSelectorTerms) and the LB controller pick groups by, and
// GuardDuty's, by which SweepGuardDutysGroup deletes a group.
var groupPickingTags = map[string]any{"aws:TagKeys": []string{names.DiscoveryTagKey, "elbv2.k8s.aws/cluster", "GuardDutyManaged"}}

// securityGroupWrites change a security group and its rules.
var securityGroupWrites = []string{"ec2:DeleteSecurityGroup", "ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress",
	"ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules", "ec2:UpdateSecurityGroupRuleDescriptionsIngress",
	"ec2:UpdateSecurityGroupRuleDescriptionsEgress", "ec2:CreateTags", "ec2:DeleteTags"}

// WorkloadBoundary is the permissions boundary of every role a deploy run
// of the scope creates: exactly the actions of the policies the program
// gives its roles (the cluster, Fargate, node, Karpenter, LB controller
// and EBS CSI roles, AWS's managed policies included), and nothing else.
// A role with it cannot create, change or pass other roles, so attaching
// a wider policy to it grants nothing beyond this list.
//
// Only resource ARNs scope reliably here: AmazonEKSClusterPolicy grants
// ec2:CreateTags and elasticloadbalancing:AddTags on every resource, so a
// tag condition limits a role minted by a run no more than the tags it can
// set. What is scoped by ARN is scoped to the scope's clusters: the node
// roles it may pass to EC2, Karpenter's instance profiles (path
// /karpenter/<region>/<cluster>/ since Karpenter v1.7,
// pkg/providers/instanceprofile), the interruption queues and the
// clusters. What upstream policies grant on every resource (the VPC CNI's
// network interfaces, the EBS CSI driver's volumes, the LB controller's
// load balancers) the boundary must grant as widely; what no policy needs
// (sharing a snapshot or an image, peering a VPC, decrypting with a key)
// it does not grant at all. The list follows the managed policies at
// zoph-io/IAMTrail 7fc15059 (2026-08-22), Karpenter v1.14 and the LB
// controller v3.5.0; TestBoundaryCoversTheProgramsPolicies fails when one
// of them needs more.
func WorkloadBoundary(s Scope) iampolicy.Document {
	clusters := s.clusterNames()
	return iampolicy.New(
		iampolicy.Statement{Effect: "Allow", Resource: "*", Action: []string{
			"acm:DescribeCertificate", "acm:ListCertificates", "arc-zonal-shift:GetManagedResource",
			"autoscaling:DescribeAutoScalingGroups", "autoscaling:UpdateAutoScalingGroup", "cognito-idp:DescribeUserPoolClient",
			"ec2:AttachVolume", "ec2:CreateRoute", "ec2:CreateSecurityGroup", "ec2:CreateTags", "ec2:CreateVolume", "ec2:DeleteRoute",
			"ec2:DeleteSecurityGroup", "ec2:DeleteVolume", "ec2:Describe*", "ec2:DetachVolume", "ec2:GetCoipPoolUsage",
			"ec2:GetSecurityGroupsForVpc", "ec2:ModifyInstanceAttribute", "ec2:ModifyNetworkInterfaceAttribute", "ec2:ModifyVolume",
			"ec2:*NetworkInterface", "ec2:*PrivateIpAddresses", "ec2:*SecurityGroupIngress", "ec2messages:*",
			"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:BatchImportUpstreamImage", "ecr:GetAuthorizationToken",
			"ecr:GetDownloadUrlForLayer", "eks-auth:AssumeRoleForPodIdentity",
			"elasticloadbalancing:AddTags", "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
			"elasticloadbalancing:AttachLoadBalancerToSubnets", "elasticloadbalancing:ConfigureHealthCheck",
			"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateLoadBalancerPolicy", "elasticloadbalancing:DeleteLoadBalancer",
			"elasticloadbalancing:DeregisterInstancesFromLoadBalancer", "elasticloadbalancing:Describe*",
			"elasticloadbalancing:DetachLoadBalancerFromSubnets", "elasticloadbalancing:*Listener", "elasticloadbalancing:*ListenerCertificates",
			"elasticloadbalancing:*LoadBalancerListeners", "elasticloadbalancing:ModifyLoadBalancerAttributes",
			"elasticloadbalancing:ModifyTargetGroupAttributes", "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
			"elasticloadbalancing:*Rule", "elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer", "elasticloadbalancing:SetRulePriorities",
			"elasticloadbalancing:SetWebAcl", "elasticloadbalancing:*TargetGroup", "elasticloadbalancing:*Targets",
			"iam:GetInstanceProfile", "iam:GetServerCertificate", "iam:ListInstanceProfiles", "iam:ListServerCertificates",
			"kms:DescribeKey", "logs:DescribeLogGroups", "pricing:GetProducts", "shield:GetSubscriptionState", "shield:*Protection",
			"ssm:DescribeAssociation", "ssm:DescribeDocument", "ssm:GetDeployablePatchSnapshotForInstance", "ssm:GetDocument",
			"ssm:GetManifest", "ssm:List*Associations", "ssm:PutComplianceItems", "ssm:PutConfigurePackageResult",
			"ssm:PutInventory", "ssm:Update*Status", "ssm:UpdateInstanceInformation", "ssmmessages:*",
			"waf-regional:*AssociateWebACL", "waf-regional:GetWebACL*", "wafv2:*AssociateWebACL", "wafv2:GetWebACL*",
			// The EBS CSI driver's snapshots, in the account only: sharing
			// one (ec2:ModifySnapshotAttribute) is not granted.
			"ec2:CopyVolumes", "ec2:CreateSnapshot", "ec2:DeleteSnapshot", "ec2:DeleteTags", "ec2:EnableFastSnapshotRestores", "ec2:LockSnapshot",
			"elasticloadbalancing:RemoveTags", "elasticloadbalancing:ModifyCapacityReservation", "elasticloadbalancing:ModifyIpPools",
			"elasticloadbalancing:ModifyListenerAttributes", "elasticloadbalancing:SetIpAddressType", "elasticloadbalancing:SetSecurityGroups",
			"elasticloadbalancing:SetSubnets",
		}},
		// ec2:Describe* would include the few describes that return secrets.
		iampolicy.Statement{Effect: "Deny", Resource: "*", Action: secretDescribes},
		// What another account shares with this one (an image, a snapshot,
		// a registry's images, a capacity reservation) by a resource policy
		// or RAM is reachable by every role of the account that IAM lets
		// through: deny it, but for what AWS owns that the program's roles
		// need. The shape is the resource perimeter of AWS's data perimeter
		// examples (aws-samples/data-perimeter-policy-examples,
		// service_control_policies/resource_perimeter_scp.json,
		// EnforceResourcePerimeterAWSResources): AWS-owned AMIs and their
		// snapshots by ec2:Owner "amazon" (Bottlerocket's images), AWS's
		// public SSM parameters and managed policies by ARN, and the ECR
		// registries of the EKS add-on images (EKS user guide,
		// add-ons-images.html) by ARN. Null: an action whose request carries
		// no aws:ResourceAccount (IAM user guide lists those) is not denied
		// by this statement, the one below covers the volume it can make.
		iampolicy.Statement{Sid: "NothingOfAnotherAccount", Effect: "Deny", Action: "*", NotResource: s.awsOwnedResources(),
			Condition: map[string]any{
				"Null":                    map[string]any{"aws:ResourceAccount": "false"},
				"StringNotEqualsIfExists": map[string]any{"aws:ResourceAccount": s.Account, "ec2:Owner": "amazon"},
			}},
		// ec2:CreateVolume from a snapshot is among the actions whose
		// request lacks aws:ResourceAccount (IAM user guide,
		// reference_policies_condition-keys.html, aws:ResourceAccount); the
		// snapshot's ec2:Owner is there (EC2's service authorization
		// reference, snapshot resource type).
		iampolicy.Statement{Sid: "NoVolumeFromAnotherAccountsSnapshot", Effect: "Deny", Action: []string{"ec2:CreateVolume", "ec2:CopySnapshot"},
			Resource: s.arnIn("ec2", "*", "*", "snapshot/*"),
			Condition: map[string]any{
				"Null":            map[string]any{"ec2:Owner": "false"},
				"StringNotEquals": map[string]any{"ec2:Owner": []string{s.Account, "amazon"}},
			}},
		// The VPC flow logs' role writes its group (cluster.FlowLogPolicy).
		iampolicy.Statement{Effect: "Allow", Action: []string{"logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"},
			Resource: each(clusters, func(c string) []string {
				return []string{s.arn("logs", "log-group:/aws/vpc-flow-logs/"+c), s.arn("logs", "log-group:/aws/vpc-flow-logs/"+c+":*")}
			})},
		// Bottlerocket and EKS AMIs, for the nodes Karpenter launches.
		iampolicy.Statement{Effect: "Allow", Action: []string{"ssm:GetParameter", "ssm:GetParameters"},
			Resource: s.arnIn("ssm", "*", "*", "parameter/aws/service/*")},
		iampolicy.Statement{Effect: "Allow", Action: []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource: []string{s.arnIn("ec2", s.Region, "", "image/*"), s.arnIn("ec2", s.Region, "", "snapshot/*"),
				s.arnIn("ec2", s.Region, "*", "security-group/*"), s.arnIn("ec2", s.Region, "*", "subnet/*"),
				s.arnIn("ec2", s.Region, "*", "capacity-reservation/*"), s.arnIn("ec2", s.Region, "*", "placement-group/*")}},
		iampolicy.Statement{Effect: "Allow",
			Action: []string{"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
			Resource: []string{s.arnIn("ec2", s.Region, "*", "fleet/*"), s.arnIn("ec2", s.Region, "*", "instance/*"),
				s.arnIn("ec2", s.Region, "*", "volume/*"), s.arnIn("ec2", s.Region, "*", "network-interface/*"),
				s.arnIn("ec2", s.Region, "*", "launch-template/*"), s.arnIn("ec2", s.Region, "*", "spot-instances-request/*")}},
		iampolicy.Statement{Effect: "Allow", Action: []string{
			"iam:CreateInstanceProfile", "iam:TagInstanceProfile", "iam:AddRoleToInstanceProfile",
			"iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile",
		}, Resource: each(clusters, func(c string) []string {
			return []string{s.iam("instance-profile/karpenter/" + s.Region + "/" + c + "/*")}
		})},
		iampolicy.Statement{Sid: "PassNodeRolesToEC2", Effect: "Allow", Action: "iam:PassRole",
			Resource: each(clusters, func(c string) []string {
				return []string{s.iam("role/" + c + "-karpenter-node"), s.iam("role/*/" + c + "-karpenter-node")}
			}),
			Condition: map[string]any{"StringEquals": map[string]any{"iam:PassedToService": []string{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}}}},
		iampolicy.Statement{Effect: "Allow", Action: []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
			Resource: each(clusters, func(c string) []string { return []string{s.arn("sqs", c+"-karpenter-interruption-queue-*")} })},
		iampolicy.Statement{Effect: "Allow", Action: "eks:DescribeCluster",
			Resource: each(clusters, func(c string) []string { return []string{s.arn("eks", "cluster/"+c)} })},
		iampolicy.Statement{Effect: "Allow", Action: "iam:CreateServiceLinkedRole", Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}},
		// Encrypted EBS volumes: EC2 uses the key on the caller's behalf
		// when Karpenter launches a node or the driver creates a volume. Not
		// granted directly: no minted role decrypts anything itself.
		iampolicy.Statement{Effect: "Allow", Resource: "*",
			Action:    []string{"kms:CreateGrant", "kms:Decrypt", "kms:GenerateDataKeyWithoutPlaintext", "kms:ReEncrypt*"},
			Condition: map[string]any{"StringLike": map[string]any{"kms:ViaService": "ec2.*.amazonaws.com"}}},
	)
}

// eksImageRegistries are the accounts of the ECR registries that EKS
// add-on images are pulled from, in the regions that have one of their
// own (EKS user guide, add-ons-images.html); every other region's is
// eksImageRegistry.
var eksImageRegistries = map[string]string{
	"af-south-1": "877085696533", "ap-east-1": "800184023465", "ap-south-2": "900889452093", "ap-southeast-3": "296578399912",
	"ap-southeast-4": "491585149902", "ca-west-1": "761377655185", "cn-north-1": "918309763551", "cn-northwest-1": "961992271922",
	"eu-central-2": "900612956339", "eu-south-1": "590381155156", "eu-south-2": "455263428931", "il-central-1": "066635153087",
	"me-south-1": "558608220178", "me-central-1": "759879836304", "us-gov-east-1": "151742754352", "us-gov-west-1": "013241004608",
}

// eksImageRegistry is the EKS add-on images' registry account of the
// other regions.
const eksImageRegistry = "602401143452"

// awsOwnedResources are the resources of other accounts that the
// program's roles need: AWS's public SSM parameters (the AMI parameters
// Karpenter reads) and managed policies, and the ECR repositories of the
// EKS add-on images of the scope's region.
func (s Scope) awsOwnedResources() []string {
	registry, ok := eksImageRegistries[s.Region]
	if !ok {
		registry = eksImageRegistry
	}
	return []string{
		// An SSM ARN without an account is AWS's own: its public parameters
		// (/aws/service/*) and its documents (AWS-RunPatchBaseline, which
		// nodes with AmazonSSMManagedInstanceCore run); aws-samples'
		// data-perimeter-policy-examples resource_perimeter_scp.json
		// exempts AWS's documents too. (It also exempts AWS-managed prefix
		// lists, which nothing the program registers names; that entry
		// would take the longest fleet stack's boundary past IAM's 6,144.)
		fmt.Sprintf("arn:%s:ssm:*::*", s.Partition),
		fmt.Sprintf("arn:%s:iam::aws:policy/*", s.Partition),
		fmt.Sprintf("arn:%s:ecr:%s:%s:repository/*", s.Partition, s.Region, registry),
	}
}

// arnIn is an ARN in region and account ("" where the resource type has
// none, "*" for any).
func (s Scope) arnIn(service, region, account, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", s.Partition, service, region, account, resource)
}
