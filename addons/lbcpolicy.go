package addons

import (
	"encoding/json"
	"fmt"
)

type statement struct {
	Effect    string         `json:"Effect"`
	Action    []string       `json:"Action"`
	Resource  any            `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

// LoadBalancerControllerPolicy is the controller's documented IAM policy
// (docs/install/iam_policy.json of kubernetes-sigs/aws-load-balancer-controller,
// the same file, blob 761d0e733c41, from v2.14.0 to v3.5.0), written out as
// statements with the partition filled in. The separate policies of the
// optional Global Accelerator and certificate-management features are not
// included; those features stay off.
// Writes to load balancers, target groups and security groups require the
// elbv2.k8s.aws/cluster tag that the controller puts on what it creates.
func LoadBalancerControllerPolicy(partition string) (string, error) {
	arn := func(rest string) string { return "arn:" + partition + ":" + rest }
	clusterTagOnRequest := map[string]any{"Null": map[string]any{"aws:RequestTag/elbv2.k8s.aws/cluster": "false"}}
	clusterTagOnResource := map[string]any{"Null": map[string]any{"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}
	retagOwned := map[string]any{"Null": map[string]any{
		"aws:RequestTag/elbv2.k8s.aws/cluster":  "true",
		"aws:ResourceTag/elbv2.k8s.aws/cluster": "false",
	}}
	loadBalancersAndTargetGroups := []string{
		arn("elasticloadbalancing:*:*:targetgroup/*/*"),
		arn("elasticloadbalancing:*:*:loadbalancer/net/*/*"),
		arn("elasticloadbalancing:*:*:loadbalancer/app/*/*"),
	}
	doc := map[string]any{"Version": "2012-10-17", "Statement": []statement{
		{
			Effect: "Allow", Action: []string{"iam:CreateServiceLinkedRole"}, Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
		},
		{
			Effect: "Allow", Resource: "*", Action: []string{
				"ec2:DescribeAccountAttributes", "ec2:DescribeAddresses", "ec2:DescribeAvailabilityZones",
				"ec2:DescribeInternetGateways", "ec2:DescribeVpcs", "ec2:DescribeVpcPeeringConnections",
				"ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeInstances",
				"ec2:DescribeNetworkInterfaces", "ec2:DescribeTags", "ec2:GetCoipPoolUsage", "ec2:DescribeCoipPools",
				"ec2:GetSecurityGroupsForVpc", "ec2:DescribeIpamPools", "ec2:DescribeRouteTables",
				"elasticloadbalancing:DescribeLoadBalancers", "elasticloadbalancing:DescribeLoadBalancerAttributes",
				"elasticloadbalancing:DescribeListeners", "elasticloadbalancing:DescribeListenerCertificates",
				"elasticloadbalancing:DescribeSSLPolicies", "elasticloadbalancing:DescribeRules",
				"elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTargetGroupAttributes",
				"elasticloadbalancing:DescribeTargetHealth", "elasticloadbalancing:DescribeTags",
				"elasticloadbalancing:DescribeTrustStores", "elasticloadbalancing:DescribeListenerAttributes",
				"elasticloadbalancing:DescribeCapacityReservation",
			},
		},
		{
			Effect: "Allow", Resource: "*", Action: []string{
				"cognito-idp:DescribeUserPoolClient", "acm:ListCertificates", "acm:DescribeCertificate",
				"iam:ListServerCertificates", "iam:GetServerCertificate",
				"waf-regional:GetWebACL", "waf-regional:GetWebACLForResource", "waf-regional:AssociateWebACL", "waf-regional:DisassociateWebACL",
				"wafv2:GetWebACL", "wafv2:GetWebACLForResource", "wafv2:AssociateWebACL", "wafv2:DisassociateWebACL",
				"shield:GetSubscriptionState", "shield:DescribeProtection", "shield:CreateProtection", "shield:DeleteProtection",
			},
		},
		{Effect: "Allow", Resource: "*", Action: []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"}},
		{Effect: "Allow", Resource: "*", Action: []string{"ec2:CreateSecurityGroup"}},
		{
			Effect: "Allow", Action: []string{"ec2:CreateTags"}, Resource: arn("ec2:*:*:security-group/*"),
			Condition: map[string]any{
				"StringEquals": map[string]any{"ec2:CreateAction": "CreateSecurityGroup"},
				"Null":         map[string]any{"aws:RequestTag/elbv2.k8s.aws/cluster": "false"},
			},
		},
		{Effect: "Allow", Action: []string{"ec2:CreateTags", "ec2:DeleteTags"}, Resource: arn("ec2:*:*:security-group/*"), Condition: retagOwned},
		{
			Effect: "Allow", Resource: "*", Condition: clusterTagOnResource,
			Action: []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:DeleteSecurityGroup"},
		},
		{
			Effect: "Allow", Resource: "*", Condition: clusterTagOnRequest,
			Action: []string{"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"},
		},
		{
			Effect: "Allow", Resource: "*", Action: []string{
				"elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteListener",
				"elasticloadbalancing:CreateRule", "elasticloadbalancing:DeleteRule",
			},
		},
		{
			Effect: "Allow", Action: []string{"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"},
			Resource: loadBalancersAndTargetGroups, Condition: retagOwned,
		},
		{
			Effect: "Allow", Action: []string{"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"},
			Resource: []string{
				arn("elasticloadbalancing:*:*:listener/net/*/*/*"), arn("elasticloadbalancing:*:*:listener/app/*/*/*"),
				arn("elasticloadbalancing:*:*:listener-rule/net/*/*/*"), arn("elasticloadbalancing:*:*:listener-rule/app/*/*/*"),
			},
		},
		{
			Effect: "Allow", Resource: "*", Condition: clusterTagOnResource, Action: []string{
				"elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:SetIpAddressType",
				"elasticloadbalancing:SetSecurityGroups", "elasticloadbalancing:SetSubnets",
				"elasticloadbalancing:DeleteLoadBalancer", "elasticloadbalancing:ModifyTargetGroup",
				"elasticloadbalancing:ModifyTargetGroupAttributes", "elasticloadbalancing:DeleteTargetGroup",
				"elasticloadbalancing:ModifyListenerAttributes", "elasticloadbalancing:ModifyCapacityReservation",
				"elasticloadbalancing:ModifyIpPools",
			},
		},
		{
			Effect: "Allow", Action: []string{"elasticloadbalancing:AddTags"}, Resource: loadBalancersAndTargetGroups,
			Condition: map[string]any{
				"StringEquals": map[string]any{"elasticloadbalancing:CreateAction": []string{"CreateTargetGroup", "CreateLoadBalancer"}},
				"Null":         map[string]any{"aws:RequestTag/elbv2.k8s.aws/cluster": "false"},
			},
		},
		{
			Effect: "Allow", Resource: arn("elasticloadbalancing:*:*:targetgroup/*/*"),
			Action: []string{"elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"},
		},
		{
			Effect: "Allow", Resource: "*", Action: []string{
				"elasticloadbalancing:SetWebAcl", "elasticloadbalancing:ModifyListener",
				"elasticloadbalancing:AddListenerCertificates", "elasticloadbalancing:RemoveListenerCertificates",
				"elasticloadbalancing:ModifyRule", "elasticloadbalancing:SetRulePriorities",
			},
		},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding load balancer controller policy: %w", err)
	}
	return string(b), nil
}
