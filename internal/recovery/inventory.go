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
	// Find looks, for the types the recovery resolves by itself; nil when
	// there is nothing to find (the create is cleared) or when a person
	// decides (Look).
	Find func(ctx context.Context, l Lookups, t Target) (Found, error)
	// viaCluster: find reads the cluster's API, not AWS.
	viaCluster bool
	// Look is the command a person runs to find the object, and IDFrom its
	// import ID where the recorded inputs make it: templates whose
	// {input}, {a.b} and {tags:KEY} are the pending create's inputs and
	// {region} its provider's region (see render). Being stuck on these is
	// cheap, and telling a leftover from this run's object is not.
	Look, IDFrom string
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
		Finds:  "its recorded inputs: one without a create command is cleared",
		Find:   findCommand,
	},

	// IAM.
	"aws:iam/serviceLinkedRole:ServiceLinkedRole": {
		Leaves: "yes: CreateServiceLinkedRole, but the account's role: the next `pulumi up` adopts it by import (karpenter/spot.go), " +
			"so the pending create is cleared",
	},
	"aws:iam/role:Role": {
		Leaves: "yes: CreateRole", ID: "role name", Source: awsDocs + "iam.Role",
		Look: "aws iam get-role --role-name {name}", IDFrom: "{name}",
	},
	"aws:iam/policy:Policy": {
		Leaves: "yes: CreatePolicy", ID: "policy ARN", Source: awsDocs + "iam.Policy",
		Look: "aws iam list-policies --scope Local --query \"Policies[?PolicyName=='{name}'].[Arn,CreateDate]\"",
	},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": {
		Leaves: "yes: AttachRolePolicy", ID: "<role name>/<policy ARN>", Source: awsDocs + "iam.RolePolicyAttachment",
		Look: "aws iam list-attached-role-policies --role-name {role}", IDFrom: "{role}/{policyArn}",
	},
	"aws:iam/openIdConnectProvider:OpenIdConnectProvider": {
		Leaves: "yes: CreateOpenIDConnectProvider", ID: "provider ARN", Source: awsDocs + "iam.OpenIdConnectProvider",
		Look: "aws iam list-open-id-connect-providers (the one whose ARN ends in the host and path of {url})",
	},

	// SQS and EventBridge.
	"aws:sqs/queue:Queue": {
		Leaves: "yes: CreateQueue", Finds: "sqs get-queue-url by its name",
		ID: "queue URL", Source: awsDocs + "sqs.Queue", Find: findQueue, Actions: []string{"sqs:GetQueueUrl", "sqs:GetQueueAttributes"},
	},
	"aws:sqs/queuePolicy:QueuePolicy": {
		Leaves: "yes: SetQueueAttributes (Policy)", Finds: "sqs get-queue-attributes Policy of the queue",
		ID: "queue URL", Source: awsDocs + "sqs.QueuePolicy", Find: findQueuePolicy, Actions: []string{"sqs:GetQueueAttributes"},
	},
	"aws:cloudwatch/eventRule:EventRule": {
		Leaves: "yes: PutRule", Finds: "events describe-rule by its name and bus",
		ID: "<rule name> on the default bus, else <bus>/<rule name>", Source: awsDocs + "cloudwatch.EventRule", Find: findEventRule, Actions: []string{"events:DescribeRule"},
	},
	"aws:cloudwatch/eventTarget:EventTarget": {
		Leaves: "yes: PutTargets", Finds: "events list-targets-by-rule, the target with its targetId",
		ID: "<rule name>/<target ID> on the default bus, else <bus>/<rule name>/<target ID>", Source: awsDocs + "cloudwatch.EventTarget", Find: findEventTarget, Actions: []string{"events:ListTargetsByRule"},
	},

	// Logs, KMS, EC2.
	"aws:cloudwatch/logGroup:LogGroup": {
		Leaves: "yes: CreateLogGroup", ID: "log group name", Source: awsDocs + "cloudwatch.LogGroup",
		Look: "aws logs describe-log-groups --log-group-name-prefix {name} --region {region}", IDFrom: "{name}",
	},
	"aws:kms/key:Key": {
		Leaves: "yes: CreateKey, tagged nodeless-eks/cluster in the same call", ID: "key ID", Source: awsDocs + "kms.Key",
		Look: "aws resourcegroupstaggingapi get-resources --resource-type-filters kms:key " +
			"--tag-filters Key=nodeless-eks/cluster,Values={tags:nodeless-eks/cluster} --region {region}",
	},
	"aws:ec2/securityGroup:SecurityGroup": {
		Leaves: "yes: CreateSecurityGroup, then the provider revokes EC2's default allow-all egress", ID: "security group ID",
		Source: awsDocs + "ec2.SecurityGroup",
		Look:   "aws ec2 describe-security-groups --filters Name=vpc-id,Values={vpcId} Name=group-name,Values={name} --region {region}",
	},
	"aws:ec2/securityGroupRule:SecurityGroupRule": {
		Leaves: "yes: AuthorizeSecurityGroupIngress/Egress, all of its sources in one call",
		ID:     "<group ID>_<ingress|egress>_<protocol>_<from port>_<to port>_<source>[_<source>...] (source: CIDR, security group ID or self)",
		Source: "terraform-provider-aws internal/service/ec2/vpc_security_group_rule.go validateSecurityGroupRuleImportString, which pulumi-aws v6 bridges",
		Look:   "aws ec2 describe-security-group-rules --filters Name=group-id,Values={securityGroupId} --region {region}",
	},
	"aws:ec2/vpc:Vpc": {
		Leaves: "yes: CreateVpc, tagged in the same call", Finds: "ec2 describe-vpcs by every tag it was given and its CIDR, less the VPCs the state holds",
		ID: "VPC ID", Source: awsDocs + "ec2.Vpc", Find: findVpc, Actions: []string{"ec2:DescribeVpcs"},
	},
	"aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": {
		Leaves: "yes: AssociateVpcCidrBlock", ID: "association ID", Source: awsDocs + "ec2.VpcIpv4CidrBlockAssociation",
		Look: "aws ec2 describe-vpcs --vpc-ids {vpcId} --query \"Vpcs[0].CidrBlockAssociationSet[?CidrBlock=='{cidrBlock}']\" --region {region}",
	},
	"aws:ec2/internetGateway:InternetGateway": {
		Leaves: "yes: CreateInternetGateway, tagged in the same call, then attached", ID: "internet gateway ID",
		Source: awsDocs + "ec2.InternetGateway",
		Look:   "aws ec2 describe-internet-gateways --filters Name=tag:Name,Values={tags:Name} --region {region}",
	},
	"aws:ec2/routeTable:RouteTable": {
		Leaves: "yes: CreateRouteTable, tagged in the same call, then its routes", ID: "route table ID", Source: awsDocs + "ec2.RouteTable",
		Look: "aws ec2 describe-route-tables --filters Name=vpc-id,Values={vpcId} Name=tag:Name,Values={tags:Name} --region {region}",
	},
	"aws:ec2/routeTableAssociation:RouteTableAssociation": {
		Leaves: "yes: AssociateRouteTable", ID: "<subnet ID>/<route table ID>", Source: awsDocs + "ec2.RouteTableAssociation",
		Look:   "aws ec2 describe-route-tables --route-table-ids {routeTableId} --query \"RouteTables[0].Associations[?SubnetId=='{subnetId}']\" --region {region}",
		IDFrom: "{subnetId}/{routeTableId}",
	},
	"aws:ec2/subnet:Subnet": {
		Leaves: "yes: CreateSubnet", ID: "subnet ID", Source: awsDocs + "ec2.Subnet",
		Look: "aws ec2 describe-subnets --filters Name=vpc-id,Values={vpcId} Name=cidr-block,Values={cidrBlock} --region {region}",
	},
	"aws:ec2/eip:Eip": {
		Leaves: "yes: AllocateAddress, tagged in the same call", Finds: "ec2 describe-addresses by its tags, less the addresses the state holds; " +
			"one found is reported, never adopted (an address has no creation time to tell it from an earlier stack's)",
		ID: "allocation ID", Source: awsDocs + "ec2.Eip", Find: findEip, Actions: []string{"ec2:DescribeAddresses"},
	},
	"aws:ec2/natGateway:NatGateway": {
		Leaves: "yes: CreateNatGateway, tagged in the same call", Finds: "ec2 describe-nat-gateways by subnet and tags, not failed or deleted, " +
			"less the gateways the state holds",
		ID: "NAT gateway ID", Source: awsDocs + "ec2.NatGateway", Find: findNatGateway, Actions: []string{"ec2:DescribeNatGateways"},
	},

	// EKS.
	"aws:eks/cluster:Cluster": {
		Leaves: "yes: CreateCluster (10 minutes to ACTIVE)", Finds: "eks describe-cluster by its name, then its role must be the one the create sent; " +
			"CREATING is waited for",
		ID: "cluster name", Source: awsDocs + "eks.Cluster", Find: findCluster, Actions: []string{"eks:DescribeCluster"},
	},
	"aws:eks/fargateProfile:FargateProfile": {
		Leaves: "yes: CreateFargateProfile (2-5 minutes to ACTIVE)", Finds: "eks describe-fargate-profile by cluster and name; CREATING is waited for",
		ID: "<cluster>:<profile name>", Source: awsDocs + "eks.FargateProfile", Find: findFargateProfile, Actions: []string{"eks:DescribeFargateProfile"},
	},
	"aws:eks/addon:Addon": {
		Leaves: "yes: CreateAddon", Finds: "eks describe-addon by cluster and add-on name",
		ID: "<cluster>:<add-on name>", Source: awsDocs + "eks.Addon", Find: findAddon, Actions: []string{"eks:DescribeAddon"},
	},
	"aws:eks/accessEntry:AccessEntry": {
		Leaves: "yes: CreateAccessEntry", ID: "<cluster>:<principal ARN>", Source: awsDocs + "eks.AccessEntry",
		Look:   "aws eks describe-access-entry --cluster-name {clusterName} --principal-arn {principalArn} --region {region}",
		IDFrom: "{clusterName}:{principalArn}",
	},
	"aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {
		Leaves: "yes: AssociateAccessPolicy", ID: "<cluster>#<principal ARN>#<policy ARN>", Source: awsDocs + "eks.AccessPolicyAssociation",
		Look:   "aws eks list-associated-access-policies --cluster-name {clusterName} --principal-arn {principalArn} --region {region}",
		IDFrom: "{clusterName}#{principalArn}#{policyArn}",
	},
	"aws:eks/podIdentityAssociation:PodIdentityAssociation": {
		Leaves: "yes: CreatePodIdentityAssociation", ID: "<cluster>,<association ID>", Source: awsDocs + "eks.PodIdentityAssociation",
		Look: "aws eks list-pod-identity-associations --cluster-name {clusterName} --namespace {namespace} --service-account {serviceAccount} " +
			"--region {region} (then compare each association's roleArn with {roleArn})",
	},

	// Kubernetes.
	helmRelease: {
		Leaves: "yes: Helm writes the release record (pending-install) before the chart's objects, after its CRDs and namespace " +
			"(helm.sh/helm/v3 v3.20.2 pkg/action/install.go)",
		Finds: "the release's records (Secrets labelled owner=helm,name=<release>): deployed is imported; a record left " +
			"pending-install is deleted and the create cleared, and the next install adopts the objects it made (pkg/action/validate.go)",
		ID: "<namespace>/<release name>", Source: "pulumi-kubernetes v4.32.0 docs, Import section of helm.sh/v3.Release", Find: findRelease, Actions: []string{"eks:DescribeCluster"}, viaCluster: true,
	},
	"kubernetes:karpenter.sh/v1:NodePool":                         kubeKind,
	"kubernetes:karpenter.k8s.aws/v1:EC2NodeClass":                kubeKind,
	"kubernetes:storage.k8s.io/v1:StorageClass":                   kubeKind,
	"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": kubeKind,

	// Pulumi Cloud (deploy/).
	"pulumiservice:index:Stack": {
		Leaves: "yes: creates the stack", ID: "<org>/<project>/<stack>", Source: serviceCode + "stack.go stackResourceID",
		Look: "pulumi stack ls --organization {organizationName} --project {projectName}", IDFrom: "{organizationName}/{projectName}/{stackName}",
	},
	"pulumiservice:index:Team": {
		Leaves: "yes: creates the team", ID: "<org>/<team>", Source: serviceCode + "team.go Create",
		Look: cloudAPI + "/api/orgs/{organizationName}/teams/{name}", IDFrom: "{organizationName}/{name}",
	},
	"pulumiservice:index:OrganizationRole": {
		Leaves: "yes: creates the role", ID: "<org>/<role ID>", Source: serviceCode + "organization_role.go Read",
		Look: cloudAPI + "/api/orgs/{organizationName}/roles (the role named {name})",
	},
	"pulumiservice:index:TeamRoleAssignment": {
		Leaves: "yes: gives the team the role", ID: "<org>/<team>/<role ID>", Source: serviceCode + "team_role_assignment.go",
		Look: cloudAPI + "/api/orgs/{organizationName}/teams/{teamName} (its roleIds)", IDFrom: "{organizationName}/{teamName}/{roleId}",
	},
	"pulumiservice:index:DriftSchedule":      schedule("detect-drift", "drift/", "ttl_schedules.go stackScheduleID"),
	"pulumiservice:index:TtlSchedule":        schedule("destroy", "ttl/", "ttl_schedules.go stackScheduleID"),
	"pulumiservice:index:DeploymentSchedule": schedule("update", "", "deployment_schedules.go deploymentScheduleID"),
}

// schedule is a Pulumi Cloud deployment schedule of one operation, whose
// import ID carries idKind before the schedule's ID.
func schedule(operation, idKind, source string) Kind {
	return Kind{Leaves: "yes: creates the schedule", ID: "<org>/<project>/<stack>/" + idKind + "<schedule ID>", Source: serviceCode + source,
		Look: cloudAPI + "/api/stacks/{organization}/{project}/{stack}/deployments/schedules (the " + operation + " schedule)"}
}

// kubeKind is a Kubernetes object the program applies; its namespace, when
// it has one, is part of its ID.
var kubeKind = Kind{
	Leaves: "yes: the object", ID: "<namespace>/<name>, or <name> when cluster-scoped", Source: k8sDocs,
	Look: "kubectl get {kubeResource} {metadata.name} -o yaml", IDFrom: "{metadata.name}",
}

// cloudAPI reads Pulumi Cloud's REST API with the user's token.
const cloudAPI = "curl -s -H \"Authorization: token $PULUMI_ACCESS_TOKEN\" https://api.pulumi.com"
