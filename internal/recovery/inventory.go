package recovery

import "context"

// Kind is what the recovery knows of a type it decides by itself. Every
// other type's pending create is reported for a person, with its recorded
// name and tags and the -import and -clear lines (Report): a new type
// needs no entry.
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
	// Find looks; nil when a cut-off create leaves nothing, which is
	// cleared.
	Find func(ctx context.Context, l Lookups, t Target) (Found, error)
}

const awsDocs = "pulumi-aws v6.83.4 docs, Import section of "

// Inventory is what the recovery decides with no person, the kinds a kill
// most often lands in during a Deployments run: the cluster, its Fargate
// profiles and add-ons (10, 2-5 and 1-20 minutes to create), the
// interruption queue, the NAT gateway (a silent, billed duplicate that
// autonaming cannot prevent), and creates that leave nothing. Providers
// and components leave nothing either, without an entry (decide).
var Inventory = map[string]Kind{
	// The package's cleanup only records its settings in the state.
	"nodeless-eks:index:DestroyCleanup": {Leaves: "no: its create records its settings in the state and makes nothing (provider/destroycleanup.go)"},
	"command:local:Command": {
		Leaves: "no, when it has no create command (the program's commands run at delete only); one with a create command may have run it",
		Finds:  "its recorded inputs: one without a create command is cleared",
		Find:   findCommand,
	},
	"aws:iam/serviceLinkedRole:ServiceLinkedRole": {
		Leaves: "yes: CreateServiceLinkedRole, but the account's role: the next `pulumi up` adopts it by import (karpenter/spot.go), " +
			"so the pending create is cleared",
	},
	"aws:sqs/queue:Queue": {
		Leaves: "yes: CreateQueue", Finds: "sqs get-queue-url by its name",
		ID: "queue URL", Source: awsDocs + "sqs.Queue", Find: findQueue, Actions: []string{"sqs:GetQueueUrl", "sqs:GetQueueAttributes"},
	},
	"aws:ec2/natGateway:NatGateway": {
		Leaves: "yes: CreateNatGateway, tagged in the same call", Finds: "ec2 describe-nat-gateways by subnet and tags, not failed or deleted, " +
			"less the gateways the state holds",
		ID: "NAT gateway ID", Source: awsDocs + "ec2.NatGateway", Find: findNatGateway, Actions: []string{"ec2:DescribeNatGateways"},
	},
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
}
