// Package tokens names the resource types the tests look registrations up
// by, as the providers' schemas spell them.
package tokens

// AWS (pulumi-aws v6) and pulumi-eks.
const (
	AccessEntry             = "aws:eks/accessEntry:AccessEntry"
	AccessPolicyAssociation = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
	Addon                   = "aws:eks/addon:Addon"
	EKSCluster              = "eks:index:Cluster"
	EventRule               = "aws:cloudwatch/eventRule:EventRule"
	EventTarget             = "aws:cloudwatch/eventTarget:EventTarget"
	FargateProfile          = "aws:eks/fargateProfile:FargateProfile"
	KMSKey                  = "aws:kms/key:Key"
	LogGroup                = "aws:cloudwatch/logGroup:LogGroup"
	PodIdentityAssociation  = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
	Policy                  = "aws:iam/policy:Policy"
	Queue                   = "aws:sqs/queue:Queue"
	QueuePolicy             = "aws:sqs/queuePolicy:QueuePolicy"
	Role                    = "aws:iam/role:Role"
	RolePolicyAttachment    = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
	SecurityGroup           = "aws:ec2/securityGroup:SecurityGroup"
	SecurityGroupRule       = "aws:ec2/securityGroupRule:SecurityGroupRule"
	ServiceLinkedRole       = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
	Vpc                     = "aws:ec2/vpc:Vpc"
	VpcCidrAssociation      = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
	Subnet                  = "aws:ec2/subnet:Subnet"
	InternetGateway         = "aws:ec2/internetGateway:InternetGateway"
	RouteTable              = "aws:ec2/routeTable:RouteTable"
	Route                   = "aws:ec2/route:Route"
	VpcEndpoint             = "aws:ec2/vpcEndpoint:VpcEndpoint"
	DefaultSecurityGroup    = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
	FlowLog                 = "aws:ec2/flowLog:FlowLog"
	RouteTableAssociation   = "aws:ec2/routeTableAssociation:RouteTableAssociation"
	Eip                     = "aws:ec2/eip:Eip"
	NatGateway              = "aws:ec2/natGateway:NatGateway"
)

// Kubernetes (pulumi-kubernetes v4), Karpenter's CRDs and pulumi-command.
const (
	Command            = "command:local:Command"
	ConfigGroup        = "kubernetes:yaml/v2:ConfigGroup"
	EC2NodeClass       = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
	HelmRelease        = "kubernetes:helm.sh/v3:Release"
	KubernetesProvider = "pulumi:providers:kubernetes"
	NodePool           = "kubernetes:karpenter.sh/v1:NodePool"
	StorageClass       = "kubernetes:storage.k8s.io/v1:StorageClass"
)
