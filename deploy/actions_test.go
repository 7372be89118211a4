package main

// What the tests hold the policies to: the actions each type needs, read
// from what its provider calls to create, read, update and delete it.

// exemptTypes need no AWS permission of the deploy role: components, the
// Kubernetes provider and the objects it creates (those go through the
// cluster-admin access the creating role keeps).
var exemptPrefixes = []string{"kubernetes:", "pulumi:providers:kubernetes", "nodeless-eks:",
	// The destroy cleanup runs where pulumi runs and talks only to the
	// Kubernetes API, with the cluster's kubeconfig.
	"command:"}

// deployerActions are the AWS actions each resource type and lookup of the
// root program needs, read from what its provider calls to create, read,
// update and delete it. A type the root program starts to register without
// an entry here fails the coverage test.
var deployerActions = map[string][]string{
	"eks:index:Cluster": {"eks:CreateCluster", "eks:DeleteCluster", "eks:DescribeCluster", "eks:UpdateClusterConfig",
		"eks:UpdateClusterVersion", "eks:AssociateEncryptionConfig", "eks:TagResource", "eks:DescribeUpdate",
		"iam:CreateRole", "iam:AttachRolePolicy", "iam:PassRole", "iam:CreateOpenIDConnectProvider", "iam:GetOpenIDConnectProvider",
		"iam:CreateServiceLinkedRole", "kms:DescribeKey", "kms:CreateGrant"},
	"aws:eks/addon:Addon":                                     {"eks:CreateAddon", "eks:DeleteAddon", "eks:DescribeAddon", "eks:UpdateAddon", "eks:TagResource", "iam:PassRole"},
	"aws:eks/fargateProfile:FargateProfile":                   {"eks:CreateFargateProfile", "eks:DeleteFargateProfile", "eks:DescribeFargateProfile", "iam:PassRole"},
	"aws:eks/accessEntry:AccessEntry":                         {"eks:CreateAccessEntry", "eks:DeleteAccessEntry", "eks:DescribeAccessEntry", "eks:UpdateAccessEntry"},
	"aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {"eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:ListAssociatedAccessPolicies"},
	"aws:eks/podIdentityAssociation:PodIdentityAssociation":   {"eks:CreatePodIdentityAssociation", "eks:DeletePodIdentityAssociation", "eks:DescribePodIdentityAssociation", "iam:PassRole"},
	"aws:iam/role:Role":                                       {"iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateAssumeRolePolicy", "iam:TagRole", "iam:PutRolePermissionsBoundary", "iam:ListAttachedRolePolicies", "iam:ListInstanceProfilesForRole"},
	"aws:iam/policy:Policy":                                   {"iam:CreatePolicy", "iam:DeletePolicy", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:ListPolicyVersions"},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment":       {"iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:ListAttachedRolePolicies"},
	"aws:iam/serviceLinkedRole:ServiceLinkedRole":             {"iam:CreateServiceLinkedRole", "iam:GetRole"},
	"aws:sqs/queue:Queue":                                     {"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:ListQueueTags"},
	"aws:sqs/queuePolicy:QueuePolicy":                         {"sqs:SetQueueAttributes", "sqs:GetQueueAttributes"},
	"aws:cloudwatch/eventRule:EventRule":                      {"events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:TagResource", "events:ListTagsForResource"},
	"aws:cloudwatch/eventTarget:EventTarget":                  {"events:PutTargets", "events:RemoveTargets", "events:ListTargetsByRule"},
	"aws:cloudwatch/logGroup:LogGroup":                        {"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DescribeLogGroups", "logs:TagResource", "logs:ListTagsForResource"},
	"aws:ec2/securityGroup:SecurityGroup":                     {"ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:DescribeSecurityGroups", "ec2:RevokeSecurityGroupEgress", "ec2:CreateTags"},
	"aws:ec2/securityGroupRule:SecurityGroupRule":             {"ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:DescribeSecurityGroupRules"},
	"aws:kms/key:Key":                                         {"kms:CreateKey", "kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation", "kms:ListResourceTags", "kms:ScheduleKeyDeletion"},
	// A VPC the stack makes.
	"aws:ec2/vpc:Vpc": {"ec2:CreateVpc", "ec2:CreateTags", "ec2:DeleteVpc", "ec2:ModifyVpcAttribute", "ec2:DescribeVpcs", "ec2:DescribeVpcAttribute"},
	"aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": {"ec2:AssociateVpcCidrBlock", "ec2:DisassociateVpcCidrBlock", "ec2:DescribeVpcs"},
	"aws:ec2/subnet:Subnet":                               {"ec2:CreateSubnet", "ec2:CreateTags", "ec2:DeleteSubnet", "ec2:DescribeSubnets"},
	"aws:ec2/internetGateway:InternetGateway":             {"ec2:CreateInternetGateway", "ec2:CreateTags", "ec2:AttachInternetGateway", "ec2:DetachInternetGateway", "ec2:DeleteInternetGateway", "ec2:DescribeInternetGateways"},
	"aws:ec2/routeTable:RouteTable":                       {"ec2:CreateRouteTable", "ec2:CreateTags", "ec2:CreateRoute", "ec2:DeleteRoute", "ec2:DeleteRouteTable", "ec2:DescribeRouteTables"},
	"aws:ec2/routeTableAssociation:RouteTableAssociation": {"ec2:AssociateRouteTable", "ec2:DisassociateRouteTable", "ec2:ReplaceRouteTableAssociation", "ec2:DescribeRouteTables"},
	"aws:ec2/eip:Eip":                                     {"ec2:AllocateAddress", "ec2:CreateTags", "ec2:ReleaseAddress", "ec2:DescribeAddresses"},
	"aws:ec2/natGateway:NatGateway":                       {"ec2:CreateNatGateway", "ec2:CreateTags", "ec2:DeleteNatGateway", "ec2:DescribeNatGateways"},
	"aws:ec2/route:Route":                                 {"ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute", "ec2:DescribeRouteTables"},
	"aws:ec2/vpcEndpoint:VpcEndpoint": {"ec2:CreateVpcEndpoint", "ec2:CreateTags", "ec2:ModifyVpcEndpoint", "ec2:DeleteVpcEndpoints",
		"ec2:DescribeVpcEndpoints", "ec2:DescribePrefixLists"},
	// Adopting the group tags it and revokes its rules (terraform-provider-aws
	// internal/service/ec2, the default security group's create).
	"aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": {"ec2:DescribeSecurityGroups", "ec2:CreateTags", "ec2:RevokeSecurityGroupIngress",
		"ec2:RevokeSecurityGroupEgress"},
	"aws:ec2/flowLog:FlowLog": {"ec2:CreateFlowLogs", "ec2:CreateTags", "ec2:DeleteFlowLogs", "ec2:DescribeFlowLogs", "iam:PassRole"},
	// Lookups.
	"aws:ec2/getVpc:getVpc":                               {"ec2:DescribeVpcs"},
	"aws:ec2/getVpcs:getVpcs":                             {"ec2:DescribeVpcs"},
	"aws:ec2/getEips:getEips":                             {"ec2:DescribeAddresses"},
	"aws:index/getAvailabilityZones:getAvailabilityZones": {"ec2:DescribeAvailabilityZones"},
	"aws:servicequotas/getServiceQuota:getServiceQuota":   {"servicequotas:GetAWSDefaultServiceQuota", "servicequotas:GetServiceQuota"},
	"aws:ec2/getSubnets:getSubnets":                       {"ec2:DescribeSubnets"},
	"aws:ec2/getSubnet:getSubnet":                         {"ec2:DescribeSubnets"},
	"aws:ec2/getRouteTables:getRouteTables":               {"ec2:DescribeRouteTables"}, // the own VPC's tables, when routes move out
	"aws:ec2/getRouteTable:getRouteTable":                 {"ec2:DescribeRouteTables"},
	"aws:eks/getAddonVersion:getAddonVersion":             {"eks:DescribeAddonVersions"},
	"aws:eks/getClusters:getClusters":                     {"eks:ListClusters"},        // new cluster or upgrade
	"aws:eks/getCluster:getCluster":                       {"eks:DescribeCluster"},     // the upgrade-step check
	"aws:ssm/getParametersByPath:getParametersByPath":     {"ssm:GetParametersByPath"}, // pinned AMIs are published
	"aws:iam/getRoles:getRoles":                           {"iam:ListRoles"},           // the EC2 Spot service-linked role exists
	"aws:index/getCallerIdentity:getCallerIdentity":       {},                          // needs no permission
	"aws:index/getPartition:getPartition":                 {},
}

// accountRoleActions are the IAM actions deploy/ needs per type it
// registers in an account reached through the account role, read from
// what pulumi-aws calls to create, read, update and delete each.
var accountRoleActions = map[string][]string{
	"aws:iam/policy:Policy": {"iam:CreatePolicy", "iam:DeletePolicy", "iam:GetPolicy", "iam:GetPolicyVersion",
		"iam:ListPolicyVersions", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion"},
	"aws:iam/role:Role": {"iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateAssumeRolePolicy", "iam:UpdateRole",
		"iam:TagRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListInstanceProfilesForRole"},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:ListAttachedRolePolicies"},
	// Lookups.
	"aws:iam/getOpenIdConnectProvider:getOpenIdConnectProvider": {"iam:GetOpenIDConnectProvider"}, // by its ARN
}

// Placeholders of the committed account-role documents, which the setup
// replaces with sed (deploy/README.md, "One role per account").
const (
	placeholderPrincipal = "${DEPLOYER_PRINCIPAL_ARN}"
	placeholderAccount   = "${ACCOUNT_ID}"
	placeholderPartition = "${PARTITION}"
)
