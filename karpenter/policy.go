package karpenter

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"
)

// PolicyScope is what the controller's permissions are scoped to.
type PolicyScope struct {
	Partition, Region, AccountID, ClusterName string
	// NodeRoleArn is the only role the controller may pass, and only to EC2.
	NodeRoleArn string
	// QueueArn is the only queue the controller may read and delete from.
	QueueArn string
}

// statement is one IAM policy statement.
type statement struct {
	Sid       string         `json:"Sid,omitempty"`
	Effect    string         `json:"Effect"`
	Principal any            `json:"Principal,omitempty"`
	Action    any            `json:"Action"`
	Resource  any            `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

type policyDocument struct {
	Version   string      `json:"Version"`
	Id        string      `json:"Id,omitempty"`
	Statement []statement `json:"Statement"`
}

func (d policyDocument) json() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encoding IAM policy: %w", err)
	}
	return string(b), nil
}

// ControllerTrustPolicy lets only the karpenter service account, through
// the cluster's OIDC provider (IRSA), assume the controller role. Pod
// Identity would be simpler, but its agent does not run on Fargate.
func ControllerTrustPolicy(oidcProviderArn, oidcIssuer string) (string, error) {
	return policyDocument{
		Version: "2012-10-17",
		Statement: []statement{{
			Effect:    "Allow",
			Principal: map[string]string{"Federated": oidcProviderArn},
			Action:    "sts:AssumeRoleWithWebIdentity",
			Condition: map[string]any{"StringEquals": map[string]string{
				oidcIssuer + ":sub": "system:serviceaccount:" + Namespace + ":" + ServiceAccount,
				oidcIssuer + ":aud": "sts.amazonaws.com",
			}},
		}},
	}.json()
}

// NodeTrustPolicy lets EC2 instances assume the node role.
func NodeTrustPolicy() (string, error) {
	return policyDocument{
		Version: "2012-10-17",
		Statement: []statement{{
			Effect:    "Allow",
			Principal: map[string]string{"Service": "ec2.amazonaws.com"},
			Action:    "sts:AssumeRole",
		}},
	}.json()
}

// ControllerPolicy is Karpenter's reference controller policy for v1.14 (the
// getting-started CloudFormation template: node lifecycle, IAM integration,
// EKS integration, interruption, resource discovery), statement for
// statement, scoped to one cluster, region, node role and queue. The
// template's reads include ec2:DescribeInstanceStatus,
// ec2:DescribePlacementGroups and arc-zonal-shift:GetManagedResource (here
// limited to this cluster). It serves v1.15.2 too: the AWS calls the
// controller makes (pkg/aws/sdk.go) differ from v1.14.3's only by
// ec2:RebootInstances, which only the rebootForRepair gate uses, and the
// program leaves it off (test/kubecheck reads the rendered chart); no
// v1.15 template could be read here (the newest snapshot of the
// repository ends at v1.14.1, its preview template equal to v1.14's).
func ControllerPolicy(s PolicyScope) (string, error) {
	ec2ARN := func(resource string) string {
		return fmt.Sprintf("arn:%s:ec2:%s:%s", s.Partition, s.Region, resource)
	}
	instanceProfiles := fmt.Sprintf("arn:%s:iam::%s:instance-profile/*", s.Partition, s.AccountID)
	clusterArn := awsaccount.Account{Partition: s.Partition, ID: s.AccountID}.ClusterARN(s.Region, s.ClusterName)
	ownedTag := "kubernetes.io/cluster/" + s.ClusterName
	taggable := []string{
		ec2ARN("*:fleet/*"), ec2ARN("*:instance/*"), ec2ARN("*:volume/*"),
		ec2ARN("*:network-interface/*"), ec2ARN("*:launch-template/*"), ec2ARN("*:spot-instances-request/*"),
	}
	requestTagsForCluster := map[string]any{
		"aws:RequestTag/" + ownedTag:          "owned",
		"aws:RequestTag/eks:eks-cluster-name": s.ClusterName,
	}

	return policyDocument{Version: "2012-10-17", Statement: []statement{
		// Node lifecycle.
		{
			Sid: "AllowScopedEC2InstanceAccessActions", Effect: "Allow",
			Action: []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource: []string{
				ec2ARN(":image/*"), ec2ARN(":snapshot/*"), ec2ARN("*:security-group/*"),
				ec2ARN("*:subnet/*"), ec2ARN("*:capacity-reservation/*"), ec2ARN("*:placement-group/*"),
			},
		},
		{
			Sid: "AllowScopedEC2LaunchTemplateAccessActions", Effect: "Allow",
			Action:   []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource: ec2ARN("*:launch-template/*"),
			Condition: map[string]any{
				"StringEquals": map[string]any{"aws:ResourceTag/" + ownedTag: "owned"},
				"StringLike":   map[string]any{"aws:ResourceTag/karpenter.sh/nodepool": "*"},
			},
		},
		{
			Sid: "AllowScopedEC2InstanceActionsWithTags", Effect: "Allow",
			Action:   []string{"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
			Resource: taggable,
			Condition: map[string]any{
				"StringEquals": requestTagsForCluster,
				"StringLike":   map[string]any{"aws:RequestTag/karpenter.sh/nodepool": "*"},
			},
		},
		{
			Sid: "AllowScopedResourceCreationTagging", Effect: "Allow",
			Action:   "ec2:CreateTags",
			Resource: taggable,
			Condition: map[string]any{
				"StringEquals": merge(requestTagsForCluster, map[string]any{
					"ec2:CreateAction": []string{"RunInstances", "CreateFleet", "CreateLaunchTemplate"},
				}),
				"StringLike": map[string]any{"aws:RequestTag/karpenter.sh/nodepool": "*"},
			},
		},
		{
			Sid: "AllowScopedResourceTagging", Effect: "Allow",
			Action:   "ec2:CreateTags",
			Resource: ec2ARN("*:instance/*"),
			Condition: map[string]any{
				"StringEquals":         map[string]any{"aws:ResourceTag/" + ownedTag: "owned"},
				"StringLike":           map[string]any{"aws:ResourceTag/karpenter.sh/nodepool": "*"},
				"StringEqualsIfExists": map[string]any{"aws:RequestTag/eks:eks-cluster-name": s.ClusterName},
				"ForAllValues:StringEquals": map[string]any{
					"aws:TagKeys": []string{"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"},
				},
			},
		},
		{
			Sid: "AllowScopedDeletion", Effect: "Allow",
			Action:   []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
			Resource: []string{ec2ARN("*:instance/*"), ec2ARN("*:launch-template/*")},
			Condition: map[string]any{
				"StringEquals": map[string]any{"aws:ResourceTag/" + ownedTag: "owned"},
				"StringLike":   map[string]any{"aws:ResourceTag/karpenter.sh/nodepool": "*"},
			},
		},
		// IAM integration.
		{
			Sid: "AllowPassingInstanceRole", Effect: "Allow",
			Action:   "iam:PassRole",
			Resource: s.NodeRoleArn,
			Condition: map[string]any{"StringEquals": map[string]any{
				"iam:PassedToService": []string{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"},
			}},
		},
		{
			Sid: "AllowScopedInstanceProfileCreationActions", Effect: "Allow",
			Action:   "iam:CreateInstanceProfile",
			Resource: instanceProfiles,
			Condition: map[string]any{
				"StringEquals": merge(requestTagsForCluster, map[string]any{
					"aws:RequestTag/topology.kubernetes.io/region": s.Region,
				}),
				"StringLike": map[string]any{"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
			},
		},
		{
			Sid: "AllowScopedInstanceProfileTagActions", Effect: "Allow",
			Action:   "iam:TagInstanceProfile",
			Resource: instanceProfiles,
			Condition: map[string]any{
				"StringEquals": merge(requestTagsForCluster, map[string]any{
					"aws:ResourceTag/" + ownedTag:                   "owned",
					"aws:ResourceTag/topology.kubernetes.io/region": s.Region,
					"aws:RequestTag/topology.kubernetes.io/region":  s.Region,
				}),
				"StringLike": map[string]any{
					"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
					"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass":  "*",
				},
			},
		},
		{
			Sid: "AllowScopedInstanceProfileActions", Effect: "Allow",
			Action:   []string{"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"},
			Resource: instanceProfiles,
			Condition: map[string]any{
				"StringEquals": map[string]any{
					"aws:ResourceTag/" + ownedTag:                   "owned",
					"aws:ResourceTag/topology.kubernetes.io/region": s.Region,
				},
				"StringLike": map[string]any{"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
			},
		},
		{
			Sid: "AllowInstanceProfileReadActions", Effect: "Allow",
			Action:   "iam:GetInstanceProfile",
			Resource: instanceProfiles,
		},
		{
			Sid: "AllowUnscopedInstanceProfileListAction", Effect: "Allow",
			Action:   "iam:ListInstanceProfiles",
			Resource: "*",
		},
		// EKS integration.
		{
			Sid: "AllowAPIServerEndpointDiscovery", Effect: "Allow",
			Action:   "eks:DescribeCluster",
			Resource: clusterArn,
		},
		{
			Sid: "AllowZonalShiftReadActions", Effect: "Allow",
			Action:   "arc-zonal-shift:GetManagedResource",
			Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{
				"arc-zonal-shift:ResourceIdentifier": clusterArn,
			}},
		},
		// Interruption handling.
		{
			Sid: "AllowInterruptionQueueActions", Effect: "Allow",
			Action:   []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
			Resource: s.QueueArn,
		},
		// Resource discovery.
		{
			Sid: "AllowRegionalReadActions", Effect: "Allow",
			Action: []string{
				"ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
				"ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
				"ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
				"ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
			},
			Resource:  "*",
			Condition: map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": s.Region}},
		},
		{
			Sid: "AllowSSMReadActions", Effect: "Allow",
			Action:   "ssm:GetParameter",
			Resource: fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", s.Partition, s.Region),
		},
		{
			Sid: "AllowPricingReadActions", Effect: "Allow",
			Action:   "pricing:GetProducts",
			Resource: "*",
		},
	}}.json()
}

// QueuePolicy lets EventBridge (and SQS itself) send to the interruption
// queue and refuses any access that is not over TLS.
func QueuePolicy(queueArn string) (string, error) {
	return policyDocument{Version: "2012-10-17", Id: "EC2InterruptionPolicy", Statement: []statement{
		{
			Sid: "AllowEventDelivery", Effect: "Allow",
			Principal: map[string]any{"Service": []string{"events.amazonaws.com", "sqs.amazonaws.com"}},
			Action:    "sqs:SendMessage",
			Resource:  queueArn,
		},
		{
			Sid: "DenyHTTP", Effect: "Deny",
			Principal: "*",
			Action:    "sqs:*",
			Resource:  queueArn,
			Condition: map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		},
	}}.json()
}

func merge(maps ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
