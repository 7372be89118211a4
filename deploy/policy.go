package main

import (
	"encoding/json"
	"fmt"
)

// Pulumi Cloud's OIDC issuer, for Deployments and for ESC alike.
const (
	oidcIssuerURL = "https://api.pulumi.com/oidc"
	oidcIssuerKey = "api.pulumi.com/oidc"
)

type statement struct {
	Sid       string         `json:"Sid,omitempty"`
	Effect    string         `json:"Effect"`
	Principal any            `json:"Principal,omitempty"`
	Action    any            `json:"Action"`
	Resource  any            `json:"Resource,omitempty"`
	Condition map[string]any `json:"Condition,omitempty"`
}

func document(statements []statement) (string, error) {
	b, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
	if err != nil {
		return "", fmt.Errorf("encoding IAM policy: %w", err)
	}
	return string(b), nil
}

// DeploymentsSubject is the subject of a Pulumi Deployments OIDC token for
// any operation on one stack:
// pulumi:deploy:org:<org>:project:<project>:stack:<stack>:operation:<op>:scope:write
// (https://www.pulumi.com/docs/deployments/deployments/oidc/). Its audience
// is the organization's name.
func DeploymentsSubject(org, project, stack string) string {
	return fmt.Sprintf("pulumi:deploy:org:%s:project:%s:stack:%s:operation:*:scope:write", org, project, stack)
}

// ESCSubject is the subject of an ESC aws-login token for one environment:
// pulumi:environments:org:<org>:env:<project>/<environment>
// (https://www.pulumi.com/docs/esc/guides/configuring-oidc/aws/). Its
// audience is "aws:<org>", not the organization alone as for Deployments.
func ESCSubject(org, project, env string) string {
	return fmt.Sprintf("pulumi:environments:org:%s:env:%s/%s", org, project, env)
}

// TrustPolicy lets the deploy role be assumed through the Pulumi Cloud
// OIDC provider by Deployments runs of exactly the configured stacks (and
// review stacks by name prefix), and by their ESC environments.
func TrustPolicy(c *Config, providerArn string) (string, error) {
	var deploySubjects, escSubjects []string
	for _, stack := range sortedKeys(c.Stacks) {
		deploySubjects = append(deploySubjects, DeploymentsSubject(c.Organization, c.Project, stack))
		escSubjects = append(escSubjects, ESCSubject(c.Organization, c.Project, stack))
	}
	if c.ReviewStacks {
		deploySubjects = append(deploySubjects, DeploymentsSubject(c.Organization, c.Project, c.ReviewStackPrefix+"*"))
	}
	principal := map[string]any{"Federated": providerArn}
	return document([]statement{
		{
			Sid: "PulumiDeployments", Effect: "Allow", Principal: principal,
			Action: "sts:AssumeRoleWithWebIdentity",
			Condition: map[string]any{
				"StringEquals": map[string]any{oidcIssuerKey + ":aud": c.Organization},
				"StringLike":   map[string]any{oidcIssuerKey + ":sub": deploySubjects},
			},
		},
		{
			Sid: "PulumiESC", Effect: "Allow", Principal: principal,
			Action: "sts:AssumeRoleWithWebIdentity",
			Condition: map[string]any{
				"StringEquals": map[string]any{
					oidcIssuerKey + ":aud": "aws:" + c.Organization,
					oidcIssuerKey + ":sub": escSubjects,
				},
			},
		},
	})
}

// scope is what the deployer policy's ARNs are built from.
type scope struct {
	partition, region, account, prefix string
}

func (s scope) arn(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", s.partition, service, s.region, s.account, resource)
}

func (s scope) iam(resource string) string {
	return fmt.Sprintf("arn:%s:iam::%s:%s", s.partition, s.account, resource)
}

// DeployerPolicy allows what the root program creates, updates and deletes,
// and nothing else: each statement is scoped to names that start with the
// cluster-name prefix, to the region, or to the resource kinds the program
// makes. deployerActions lists, per resource type the program registers,
// the actions a statement here must allow (a test holds the two together).
func DeployerPolicy(s scope) (string, error) {
	p := s.prefix
	return document([]statement{
		{Sid: "ReadForLookupsAndPlans", Effect: "Allow", Resource: "*",
			Action: []string{"ec2:Describe*", "eks:DescribeAddonVersions", "eks:DescribeAddonConfiguration", "eks:ListClusters",
				"logs:DescribeLogGroups", "kms:ListAliases", "sqs:ListQueues"},
			Condition: map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": s.region}}},
		// ListRoles takes no resource-level scope (IAM's service
		// authorization reference); preview lists the Spot service-linked role.
		{Sid: "FindSpotServiceLinkedRole", Effect: "Allow", Action: "iam:ListRoles", Resource: "*"},
		{Sid: "PublicAMIParameters", Effect: "Allow", Action: "ssm:GetParametersByPath",
			// Preview checks that every pinned AMI is published, where Karpenter reads it.
			Resource: fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", s.partition, s.region)},
		{Sid: "EKS", Effect: "Allow", Action: "eks:*",
			Resource: []string{s.arn("eks", "cluster/"+p+"*"), s.arn("eks", "access-entry/"+p+"*/*"), s.arn("eks", "addon/"+p+"*/*"),
				s.arn("eks", "fargateprofile/"+p+"*/*"), s.arn("eks", "podidentityassociation/"+p+"*/*")}},
		{Sid: "EKSAccessPolicies", Effect: "Allow", Action: []string{"eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy"},
			Resource: fmt.Sprintf("arn:%s:eks::aws:cluster-access-policy/*", s.partition)},
		{Sid: "IAMRolesAndPolicies", Effect: "Allow",
			// IAM is global: no region condition here.
			Action: []string{"iam:GetRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListInstanceProfilesForRole",
				"iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions",
				"iam:CreateRole", "iam:DeleteRole", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:UpdateAssumeRolePolicy",
				"iam:TagRole", "iam:UntagRole", "iam:AttachRolePolicy", "iam:DetachRolePolicy",
				"iam:PutRolePermissionsBoundary", "iam:DeleteRolePermissionsBoundary",
				"iam:CreatePolicy", "iam:DeletePolicy", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:TagPolicy", "iam:UntagPolicy"},
			Resource: []string{s.iam("role/" + p + "*"), s.iam("role/*/" + p + "*"), s.iam("policy/" + p + "*"), s.iam("policy/*/" + p + "*")}},
		{Sid: "PassOnlyOurRolesToEKS", Effect: "Allow", Action: "iam:PassRole",
			Resource:  []string{s.iam("role/" + p + "*"), s.iam("role/*/" + p + "*")},
			Condition: map[string]any{"StringEquals": map[string]any{"iam:PassedToService": []string{"eks.amazonaws.com", "eks-fargate-pods.amazonaws.com", "pods.eks.amazonaws.com"}}}},
		{Sid: "ClusterOIDCProvider", Effect: "Allow",
			Action: []string{"iam:GetOpenIDConnectProvider", "iam:CreateOpenIDConnectProvider", "iam:DeleteOpenIDConnectProvider", "iam:TagOpenIDConnectProvider",
				"iam:UntagOpenIDConnectProvider", "iam:UpdateOpenIDConnectProviderThumbprint", "iam:AddClientIDToOpenIDConnectProvider"},
			Resource: s.iam(fmt.Sprintf("oidc-provider/oidc.eks.%s.amazonaws.com/id/*", s.region))},
		{Sid: "EKSServiceLinkedRoles", Effect: "Allow", Action: "iam:CreateServiceLinkedRole", Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-fargate.amazonaws.com"}}}},
		{Sid: "InterruptionQueue", Effect: "Allow",
			Action:   []string{"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:GetQueueUrl", "sqs:TagQueue", "sqs:UntagQueue", "sqs:ListQueueTags"},
			Resource: s.arn("sqs", p+"*")},
		{Sid: "InterruptionRules", Effect: "Allow",
			Action: []string{"events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:PutTargets", "events:RemoveTargets",
				"events:ListTargetsByRule", "events:TagResource", "events:UntagResource", "events:ListTagsForResource"},
			Resource: s.arn("events", "rule/"+p+"*")},
		{Sid: "NodeSecurityGroup", Effect: "Allow",
			Action: []string{"ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress",
				"ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules", "ec2:UpdateSecurityGroupRuleDescriptionsIngress",
				"ec2:UpdateSecurityGroupRuleDescriptionsEgress", "ec2:CreateTags", "ec2:DeleteTags"},
			Resource: []string{s.arn("ec2", "security-group/*"), s.arn("ec2", "security-group-rule/*"), s.arn("ec2", "vpc/*")}},
		{Sid: "SecretsKey", Effect: "Allow",
			Action: []string{"kms:CreateKey", "kms:DescribeKey", "kms:GetKeyPolicy", "kms:PutKeyPolicy", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation",
				"kms:ListResourceTags", "kms:TagResource", "kms:UntagResource", "kms:ScheduleKeyDeletion", "kms:CreateGrant"},
			Resource:  "*",
			Condition: map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": s.region}}},
		{Sid: "ControlPlaneLogs", Effect: "Allow",
			Action: []string{"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
				"logs:TagResource", "logs:UntagResource", "logs:ListTagsForResource", "logs:TagLogGroup", "logs:ListTagsLogGroup"},
			Resource: []string{s.arn("logs", "log-group:/aws/eks/"+p+"*"), s.arn("logs", "log-group:/aws/eks/"+p+"*:*")}},
	})
}

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
	"aws:sqs/queue:Queue":                                     {"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:ListQueueTags"},
	"aws:sqs/queuePolicy:QueuePolicy":                         {"sqs:SetQueueAttributes", "sqs:GetQueueAttributes"},
	"aws:cloudwatch/eventRule:EventRule":                      {"events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:TagResource", "events:ListTagsForResource"},
	"aws:cloudwatch/eventTarget:EventTarget":                  {"events:PutTargets", "events:RemoveTargets", "events:ListTargetsByRule"},
	"aws:cloudwatch/logGroup:LogGroup":                        {"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DescribeLogGroups", "logs:TagResource", "logs:ListTagsForResource"},
	"aws:ec2/securityGroup:SecurityGroup":                     {"ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:DescribeSecurityGroups", "ec2:RevokeSecurityGroupEgress", "ec2:CreateTags"},
	"aws:ec2/securityGroupRule:SecurityGroupRule":             {"ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:DescribeSecurityGroupRules"},
	"aws:kms/key:Key":                                         {"kms:CreateKey", "kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation", "kms:ListResourceTags", "kms:ScheduleKeyDeletion"},
	// Lookups.
	"aws:ec2/getVpc:getVpc":                           {"ec2:DescribeVpcs"},
	"aws:ec2/getSubnets:getSubnets":                   {"ec2:DescribeSubnets"},
	"aws:ec2/getSubnet:getSubnet":                     {"ec2:DescribeSubnets"},
	"aws:eks/getAddonVersion:getAddonVersion":         {"eks:DescribeAddonVersions"},
	"aws:eks/getClusters:getClusters":                 {"eks:ListClusters"},        // new cluster or upgrade
	"aws:eks/getCluster:getCluster":                   {"eks:DescribeCluster"},     // the upgrade-step check
	"aws:ssm/getParametersByPath:getParametersByPath": {"ssm:GetParametersByPath"}, // pinned AMIs are published
	"aws:iam/getRoles:getRoles":                       {"iam:ListRoles"},           // the EC2 Spot service-linked role exists
	"aws:index/getCallerIdentity:getCallerIdentity":   {},                          // needs no permission
	"aws:index/getPartition:getPartition":             {},
}
