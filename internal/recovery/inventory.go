package recovery

import "context"

// Kind is what the recovery knows of one resource type.
type Kind struct {
	// Leaves says whether a create that was cut off leaves a real object.
	Leaves string
	// Finds says how the object is found from the pending create's
	// recorded inputs; ID is the import ID its provider expects, and
	// Source where that format is stated.
	Finds, ID, Source string
	// Actions are the AWS actions the finder calls (besides
	// sts:GetCallerIdentity, which needs no permission): deploy/'s deploy
	// roles must allow them.
	Actions []string
	// find looks; nil when there is nothing to find (the create is cleared).
	find func(ctx context.Context, l Lookups, t Target) (Found, error)
	// viaCluster: find reads the cluster's API, not AWS.
	viaCluster bool
}

// Sources of the import ID formats.
const (
	awsDocs      = "pulumi-aws v6.83.4 docs, Import section of "
	k8sDocs      = "pulumi-kubernetes v4.32.0: a Kubernetes object is imported by [namespace/]name (provider/pkg/provider/provider.go Read)"
	serviceCode  = "pulumi-pulumiservice v1.3.0 provider/pkg/resources/"
	helmRelease  = "kubernetes:helm.sh/v3:Release"
	clearedNoObj = "the provider's create makes nothing outside Pulumi's state"
)

// Inventory is every resource type the root program, the components it
// uses (pulumi-eks's children, the ConfigGroup's objects) and deploy/
// register. Tests fail when one of them registers a type that
// is not here.
var Inventory = map[string]Kind{
	// Providers and components.
	"pulumi:providers:aws":             {Leaves: "no: " + clearedNoObj},
	"pulumi:providers:kubernetes":      {Leaves: "no: " + clearedNoObj},
	"pulumi:providers:eks":             {Leaves: "no: " + clearedNoObj},
	"pulumi:providers:command":         {Leaves: "no: " + clearedNoObj},
	"pulumi:providers:pulumiservice":   {Leaves: "no: " + clearedNoObj},
	"pulumi:pulumi:Stack":              {Leaves: "no: a component; its children are resolved one by one"},
	"eks:index:Cluster":                {Leaves: "no: a component; its children are resolved one by one"},
	"eks:index:ServiceRole":            {Leaves: "no: a component; its children are resolved one by one"},
	"kubernetes:yaml/v2:ConfigGroup":   {Leaves: "no: a component; its objects are resolved one by one"},
	"nodeless-eks:addons:Addons":       {Leaves: "no: a component"},
	"nodeless-eks:cluster:Cluster":     {Leaves: "no: a component"},
	"nodeless-eks:cluster:Vpc":         {Leaves: "no: a component"},
	"nodeless-eks:karpenter:Karpenter": {Leaves: "no: a component"},
	"nodeless-eks:nodepool:NodePools":  {Leaves: "no: a component"},
	// The package (provider/): its component, and the cleanup whose create
	// only records its settings in the state.
	"pulumi:providers:nodeless-eks":     {Leaves: "no: " + clearedNoObj},
	"nodeless-eks:index:Cluster":        {Leaves: "no: a component; its children are resolved one by one"},
	"nodeless-eks:index:DestroyCleanup": {Leaves: "no: its create records its settings in the state and makes nothing (provider/destroycleanup.go)"},
	"command:local:Command": {
		Leaves: "no, when it has no create command (the program's commands run at delete only); one with a create command may have run it",
		find:   findCommand,
	},

	// IAM.
	"aws:iam/serviceLinkedRole:ServiceLinkedRole": {
		Leaves: "yes: CreateServiceLinkedRole, but the account's role: the next `pulumi up` adopts it by import (karpenter/spot.go), " +
			"so the pending create is cleared",
	},
	"aws:iam/role:Role": {
		Leaves: "yes: CreateRole", Finds: "iam get-role by its name (autonamed names are in the recorded inputs)",
		ID: "role name", Source: awsDocs + "iam.Role", find: findRole, Actions: []string{"iam:GetRole"},
	},
	"aws:iam/policy:Policy": {
		Leaves: "yes: CreatePolicy", Finds: "iam get-policy by the ARN its path and name make in the provider's account",
		ID: "policy ARN", Source: awsDocs + "iam.Policy", find: findPolicy, Actions: []string{"iam:GetPolicy"},
	},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": {
		Leaves: "yes: AttachRolePolicy", Finds: "iam list-attached-role-policies of the role",
		ID: "<role name>/<policy ARN>", Source: awsDocs + "iam.RolePolicyAttachment", find: findRolePolicyAttachment, Actions: []string{"iam:ListAttachedRolePolicies"},
	},
	"aws:iam/openIdConnectProvider:OpenIdConnectProvider": {
		Leaves: "yes: CreateOpenIDConnectProvider", Finds: "iam get-open-id-connect-provider by the ARN its URL makes in the provider's account; Pulumi Cloud's, which an account holds once, only with the deploy/ stack's owner tag",
		ID: "provider ARN", Source: awsDocs + "iam.OpenIdConnectProvider", find: findOIDCProvider, Actions: []string{"iam:GetOpenIDConnectProvider"},
	},

	// SQS and EventBridge.
	"aws:sqs/queue:Queue": {
		Leaves: "yes: CreateQueue", Finds: "sqs get-queue-url by its name",
		ID: "queue URL", Source: awsDocs + "sqs.Queue", find: findQueue, Actions: []string{"sqs:GetQueueUrl"},
	},
	"aws:sqs/queuePolicy:QueuePolicy": {
		Leaves: "yes: SetQueueAttributes (Policy)", Finds: "sqs get-queue-attributes Policy of the queue",
		ID: "queue URL", Source: awsDocs + "sqs.QueuePolicy", find: findQueuePolicy, Actions: []string{"sqs:GetQueueAttributes"},
	},
	"aws:cloudwatch/eventRule:EventRule": {
		Leaves: "yes: PutRule", Finds: "events describe-rule by its name and bus",
		ID: "<rule name> on the default bus, else <bus>/<rule name>", Source: awsDocs + "cloudwatch.EventRule", find: findEventRule, Actions: []string{"events:DescribeRule"},
	},
	"aws:cloudwatch/eventTarget:EventTarget": {
		Leaves: "yes: PutTargets", Finds: "events list-targets-by-rule, the target with its targetId",
		ID: "<rule name>/<target ID> on the default bus, else <bus>/<rule name>/<target ID>", Source: awsDocs + "cloudwatch.EventTarget", find: findEventTarget, Actions: []string{"events:ListTargetsByRule"},
	},

	// Logs, KMS, EC2.
	"aws:cloudwatch/logGroup:LogGroup": {
		Leaves: "yes: CreateLogGroup", Finds: "logs describe-log-groups, the group with its exact name",
		ID: "log group name", Source: awsDocs + "cloudwatch.LogGroup", find: findLogGroup, Actions: []string{"logs:DescribeLogGroups"},
	},
	"aws:kms/key:Key": {
		Leaves: "yes: CreateKey, tagged nodeless-eks/cluster in the same call", Finds: "kms list-keys, then each key's tags: the one Enabled " +
			"key tagged for the cluster that the state does not hold (a Disabled one, or one pending deletion, is an earlier stack's)",
		ID: "key ID", Source: awsDocs + "kms.Key", find: findKey, Actions: []string{"kms:ListKeys", "kms:ListAliases", "kms:ListResourceTags", "kms:DescribeKey"},
	},
	"aws:ec2/securityGroup:SecurityGroup": {
		Leaves: "yes: CreateSecurityGroup, then the provider revokes EC2's default allow-all egress",
		Finds: "ec2 describe-security-groups by group name and VPC (a name is unique in a VPC); a default egress the create had " +
			"not yet revoked is revoked",
		ID: "security group ID", Source: awsDocs + "ec2.SecurityGroup", find: findSecurityGroup,
		Actions: []string{"ec2:DescribeSecurityGroups", "ec2:DescribeSecurityGroupRules", "ec2:RevokeSecurityGroupEgress"},
	},
	"aws:ec2/securityGroupRule:SecurityGroupRule": {
		Leaves: "yes: AuthorizeSecurityGroupIngress/Egress, all of its sources in one call", Finds: "ec2 describe-security-group-rules of the group: " +
			"a rule of its direction, protocol, ports and sources",
		ID:     "<group ID>_<ingress|egress>_<protocol>_<from port>_<to port>_<source>[_<source>...] (source: CIDR, security group ID or self)",
		Source: "terraform-provider-aws internal/service/ec2/vpc_security_group_rule.go validateSecurityGroupRuleImportString, which pulumi-aws v6 bridges", find: findSecurityGroupRule, Actions: []string{"ec2:DescribeSecurityGroupRules"},
	},
	"aws:ec2/vpc:Vpc": {
		Leaves: "yes: CreateVpc, tagged in the same call", Finds: "ec2 describe-vpcs by every tag it was given and its CIDR, less the VPCs the state holds",
		ID: "VPC ID", Source: awsDocs + "ec2.Vpc", find: findVpc, Actions: []string{"ec2:DescribeVpcs"},
	},
	"aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": {
		Leaves: "yes: AssociateVpcCidrBlock", Finds: "ec2 describe-vpcs of its VPC: the association of its CIDR",
		ID: "association ID", Source: awsDocs + "ec2.VpcIpv4CidrBlockAssociation", find: findCidrAssociation, Actions: []string{"ec2:DescribeVpcs"},
	},
	"aws:ec2/internetGateway:InternetGateway": {
		Leaves: "yes: CreateInternetGateway, tagged in the same call, then attached", Finds: "ec2 describe-internet-gateways by its tags: " +
			"one attached to its VPC, less the gateways the state holds (a detached one, which may be an earlier stack's, is reported)",
		ID: "internet gateway ID", Source: awsDocs + "ec2.InternetGateway", find: findInternetGateway, Actions: []string{"ec2:DescribeInternetGateways"},
	},
	"aws:ec2/routeTable:RouteTable": {
		Leaves: "yes: CreateRouteTable, tagged in the same call, then its routes", Finds: "ec2 describe-route-tables by VPC and tags, less the tables the state holds",
		ID: "route table ID", Source: awsDocs + "ec2.RouteTable", find: findRouteTable, Actions: []string{"ec2:DescribeRouteTables"},
	},
	"aws:ec2/routeTableAssociation:RouteTableAssociation": {
		Leaves: "yes: AssociateRouteTable", Finds: "ec2 describe-route-tables of its table: the association of its subnet",
		ID: "<subnet ID>/<route table ID>", Source: awsDocs + "ec2.RouteTableAssociation", find: findRouteTableAssociation, Actions: []string{"ec2:DescribeRouteTables"},
	},
	"aws:ec2/subnet:Subnet": {
		Leaves: "yes: CreateSubnet", Finds: "ec2 describe-subnets by VPC and CIDR (a CIDR is unique in a VPC)",
		ID: "subnet ID", Source: awsDocs + "ec2.Subnet", find: findSubnet, Actions: []string{"ec2:DescribeSubnets"},
	},
	"aws:ec2/eip:Eip": {
		Leaves: "yes: AllocateAddress, tagged in the same call", Finds: "ec2 describe-addresses by its tags, less the addresses the state holds; " +
			"one found is reported, never adopted (an address has no creation time to tell it from an earlier stack's)",
		ID: "allocation ID", Source: awsDocs + "ec2.Eip", find: findEip, Actions: []string{"ec2:DescribeAddresses"},
	},
	"aws:ec2/natGateway:NatGateway": {
		Leaves: "yes: CreateNatGateway, tagged in the same call", Finds: "ec2 describe-nat-gateways by subnet and tags, not failed or deleted, " +
			"less the gateways the state holds",
		ID: "NAT gateway ID", Source: awsDocs + "ec2.NatGateway", find: findNatGateway, Actions: []string{"ec2:DescribeNatGateways"},
	},

	// EKS.
	"aws:eks/cluster:Cluster": {
		Leaves: "yes: CreateCluster (10 minutes to ACTIVE)", Finds: "eks describe-cluster by its name, then its role must be the one the create sent; " +
			"CREATING is waited for",
		ID: "cluster name", Source: awsDocs + "eks.Cluster", find: findCluster, Actions: []string{"eks:DescribeCluster"},
	},
	"aws:eks/fargateProfile:FargateProfile": {
		Leaves: "yes: CreateFargateProfile (2-5 minutes to ACTIVE)", Finds: "eks describe-fargate-profile by cluster and name; CREATING is waited for",
		ID: "<cluster>:<profile name>", Source: awsDocs + "eks.FargateProfile", find: findFargateProfile, Actions: []string{"eks:DescribeFargateProfile"},
	},
	"aws:eks/addon:Addon": {
		Leaves: "yes: CreateAddon", Finds: "eks describe-addon by cluster and add-on name",
		ID: "<cluster>:<add-on name>", Source: awsDocs + "eks.Addon", find: findAddon, Actions: []string{"eks:DescribeAddon"},
	},
	"aws:eks/accessEntry:AccessEntry": {
		Leaves: "yes: CreateAccessEntry", Finds: "eks describe-access-entry by cluster and principal; the creator's entry, made with the cluster, is not adopted",
		ID: "<cluster>:<principal ARN>", Source: awsDocs + "eks.AccessEntry", find: findAccessEntry, Actions: []string{"eks:DescribeAccessEntry", "eks:DescribeCluster"},
	},
	"aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {
		Leaves: "yes: AssociateAccessPolicy", Finds: "eks list-associated-access-policies of the principal",
		ID: "<cluster>#<principal ARN>#<policy ARN>", Source: awsDocs + "eks.AccessPolicyAssociation", find: findAccessPolicyAssociation, Actions: []string{"eks:ListAssociatedAccessPolicies"},
	},
	"aws:eks/podIdentityAssociation:PodIdentityAssociation": {
		Leaves: "yes: CreatePodIdentityAssociation", Finds: "eks list-pod-identity-associations by cluster, namespace and service account",
		ID: "<cluster>,<association ID>", Source: awsDocs + "eks.PodIdentityAssociation", find: findPodIdentityAssociation, Actions: []string{"eks:ListPodIdentityAssociations"},
	},

	// Kubernetes.
	helmRelease: {
		Leaves: "yes: Helm writes the release record (pending-install) before the chart's objects, after its CRDs and namespace " +
			"(helm.sh/helm/v3 v3.20.2 pkg/action/install.go)",
		Finds: "the release's records (Secrets labelled owner=helm,name=<release>): deployed is imported; a record left " +
			"pending-install is deleted and the create cleared, and the next install adopts the objects it made (pkg/action/validate.go)",
		ID: "<namespace>/<release name>", Source: "pulumi-kubernetes v4.32.0 docs, Import section of helm.sh/v3.Release", find: findRelease, Actions: []string{"eks:DescribeCluster"}, viaCluster: true,
	},
	"kubernetes:karpenter.sh/v1:NodePool":                         kubeKind,
	"kubernetes:karpenter.k8s.aws/v1:EC2NodeClass":                kubeKind,
	"kubernetes:storage.k8s.io/v1:StorageClass":                   kubeKind,
	"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": kubeKind,

	// Pulumi Cloud (deploy/).
	"pulumiservice:index:Stack": {
		Leaves: "yes: creates the stack", Finds: "GET /api/stacks/{org}/{project}/{stack}",
		ID: "<org>/<project>/<stack>", Source: serviceCode + "stack.go stackResourceID", find: findCloudStack,
	},
	"pulumiservice:index:Team": {
		Leaves: "yes: creates the team", Finds: "GET /api/orgs/{org}/teams/{team}",
		ID: "<org>/<team>", Source: serviceCode + "team.go Create", find: findTeam,
	},
	"pulumiservice:index:OrganizationRole": {
		Leaves: "yes: creates the role", Finds: "GET /api/orgs/{org}/roles: the one of its name",
		ID: "<org>/<role ID>", Source: serviceCode + "organization_role.go Read", find: findOrganizationRole,
	},
	"pulumiservice:index:TeamRoleAssignment": {
		Leaves: "yes: gives the team the role", Finds: "GET /api/orgs/{org}/teams/{team}: its roleIds",
		ID: "<org>/<team>/<role ID>", Source: serviceCode + "team_role_assignment.go", find: findTeamRoleAssignment,
	},
	"pulumiservice:index:DriftSchedule": {
		Leaves: "yes: creates the schedule", Finds: "GET /api/stacks/{org}/{project}/{stack}/deployments/schedules: the one detect-drift schedule",
		ID: "<org>/<project>/<stack>/drift/<schedule ID>", Source: serviceCode + "ttl_schedules.go stackScheduleID", find: scheduleFinder("detect-drift", "drift"),
	},
	"pulumiservice:index:TtlSchedule": {
		Leaves: "yes: creates the schedule", Finds: "GET /api/stacks/{org}/{project}/{stack}/deployments/schedules: the one destroy schedule",
		ID: "<org>/<project>/<stack>/ttl/<schedule ID>", Source: serviceCode + "ttl_schedules.go stackScheduleID", find: scheduleFinder("destroy", "ttl"),
	},
	"pulumiservice:index:DeploymentSchedule": {
		Leaves: "yes: creates the schedule", Finds: "GET /api/stacks/{org}/{project}/{stack}/deployments/schedules: the one update schedule",
		ID: "<org>/<project>/<stack>/<schedule ID>", Source: serviceCode + "deployment_schedules.go deploymentScheduleID", find: scheduleFinder("update", ""),
	},
}

// kubeKind is a Kubernetes object the program applies.
var kubeKind = Kind{
	Leaves: "yes: the object", Finds: "GET of the object by its name (autonamed names are in the recorded inputs); one being deleted is left to a person",
	ID: "<namespace>/<name>, or <name> when cluster-scoped", Source: k8sDocs, find: findKubeObject, Actions: []string{"eks:DescribeCluster"}, viaCluster: true,
}
