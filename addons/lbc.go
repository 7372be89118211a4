package addons

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"nodeless-eks/internal/helmrelease"
)

// Where the AWS Load Balancer Controller runs; the Pod Identity
// association and the chart's service account must agree.
const (
	LoadBalancerControllerNamespace      = "kube-system"
	LoadBalancerControllerServiceAccount = "aws-load-balancer-controller"
	eksChartsRepository                  = "https://aws.github.io/eks-charts"
	releaseTimeoutSeconds                = 900
)

type lbcInputs struct {
	account                   awsaccount.Account
	coreDNS, podIdentityAgent *awseks.Addon
}

type lbcResources struct {
	role    *iam.Role
	release *helmrelease.Release
}

// newLoadBalancerController gives the controller an IAM role through EKS
// Pod Identity (its agent runs on the EC2 nodes, unlike on Fargate) and
// installs the chart.
func newLoadBalancerController(ctx *pulumi.Context, name string, args *Args, in lbcInputs,
	parent pulumi.ResourceOption) (*lbcResources, error) {
	tags := pulumi.ToStringMap(args.Tags)
	trust, err := PodIdentityTrustPolicy(clusterArn(in.account, args), LoadBalancerControllerNamespace, LoadBalancerControllerServiceAccount)
	if err != nil {
		return nil, err
	}
	role, err := iam.NewRole(ctx, name+"-lb-controller", args.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("AWS Load Balancer Controller (Pod Identity) of EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: pulumi.String(trust),
		Tags:             tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller role: %w", err)
	}
	permissions, err := LoadBalancerControllerPolicy(in.account.Partition)
	if err != nil {
		return nil, err
	}
	policy, err := iam.NewPolicy(ctx, name+"-lb-controller", args.IAM.Policy(&iam.PolicyArgs{
		Description: pulumi.Sprintf("AWS Load Balancer Controller of EKS cluster %s", args.ClusterName),
		Policy:      pulumi.String(permissions),
		Tags:        tags,
	}), parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller policy: %w", err)
	}
	attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-lb-controller", &iam.RolePolicyAttachmentArgs{
		Role:      role.Name,
		PolicyArn: policy.Arn,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("attaching load balancer controller policy: %w", err)
	}
	association, err := awseks.NewPodIdentityAssociation(ctx, name+"-lb-controller", &awseks.PodIdentityAssociationArgs{
		ClusterName:    args.ClusterNameOutput,
		Namespace:      pulumi.String(LoadBalancerControllerNamespace),
		ServiceAccount: pulumi.String(LoadBalancerControllerServiceAccount),
		RoleArn:        role.Arn,
		Tags:           tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller pod identity association: %w", err)
	}

	values := args.VpcID.ToStringOutput().ApplyT(func(vpcID string) map[string]any {
		return LoadBalancerControllerValues(args.ClusterName, args.Region, vpcID)
	}).(pulumi.MapOutput)
	prerequisites := append([]pulumi.Resource{in.coreDNS, in.podIdentityAgent, association, attachment}, args.NodePools...)
	release, err := helmrelease.New(ctx, name+"-lb-controller", &helmrelease.ReleaseArgs{
		Name:           pulumi.String("aws-load-balancer-controller"),
		Chart:          pulumi.String("aws-load-balancer-controller"),
		RepositoryOpts: &helmrelease.RepositoryOptsArgs{Repo: pulumi.String(eksChartsRepository)},
		Version:        pulumi.String(args.Versions.LoadBalancerControllerChart),
		Namespace:      pulumi.String(LoadBalancerControllerNamespace),
		Values:         values,
		Timeout:        pulumi.Int(releaseTimeoutSeconds),
	},
		parent, pulumi.Provider(args.Provider),
		// Its pods need nodes (the pools), DNS (CoreDNS) and credentials
		// (the agent, the association and the permissions behind it).
		pulumi.DependsOn(prerequisites),
	)
	if err != nil {
		return nil, fmt.Errorf("creating load balancer controller release: %w", err)
	}
	return &lbcResources{role: role, release: release}, nil
}

// LoadBalancerControllerValues are the aws-load-balancer-controller chart's
// values: the cluster, region and VPC are given, not discovered through
// IMDS (which the nodes' hop limit of 1 keeps from pods).
func LoadBalancerControllerValues(clusterName, region, vpcID string) map[string]any {
	return map[string]any{
		"clusterName":  clusterName,
		"region":       region,
		"vpcId":        vpcID,
		"replicaCount": 2,
		"serviceAccount": map[string]any{
			"create": true,
			"name":   LoadBalancerControllerServiceAccount,
		},
	}
}

// PodIdentityTrustPolicy lets EKS Pod Identity hand the role to one
// service account of one cluster. The conditions are the session tags Pod
// Identity sets, as AWS documents for this principal
// (https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html);
// aws:SourceArn is not documented for it and has been seen to deny
// credentials.
func PodIdentityTrustPolicy(clusterArn, namespace, serviceAccount string) (string, error) {
	b, err := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "pods.eks.amazonaws.com"},
			"Action":    []string{"sts:AssumeRole", "sts:TagSession"},
			"Condition": map[string]any{
				"StringEquals": map[string]any{
					"aws:RequestTag/eks-cluster-arn":            clusterArn,
					"aws:RequestTag/kubernetes-namespace":       namespace,
					"aws:RequestTag/kubernetes-service-account": serviceAccount,
				},
			},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("encoding pod identity trust policy: %w", err)
	}
	return string(b), nil
}
