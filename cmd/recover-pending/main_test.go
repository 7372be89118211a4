package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSplitDecision(t *testing.T) {
	urn := "urn:pulumi:dev::nodeless-eks::nodeless-eks:cluster:Cluster$aws:ec2/securityGroupRule:SecurityGroupRule::eks-demo-node-egress"
	got, id, err := splitDecision(urn + "=sg-1_egress_-1_0_0_0.0.0.0/0")
	assert.NoError(t, err)
	assert.Equal(t, urn, got)
	assert.Equal(t, "sg-1_egress_-1_0_0_0.0.0.0/0", id)

	_, id, err = splitDecision("urn:pulumi:dev::p::aws:sqs/queuePolicy:QueuePolicy::q=https://sqs.eu-west-1.amazonaws.com/1/q?a=b")
	assert.NoError(t, err)
	assert.Equal(t, "https://sqs.eu-west-1.amazonaws.com/1/q?a=b", id, "an ID may hold '='")

	// IDs that hold "::": IAM ARNs, alone or within an ID.
	for urn, id := range map[string]string{
		"urn:pulumi:dev::nodeless-eks::nodeless-eks:karpenter:Karpenter$aws:iam/policy:Policy::eks-demo-karpenter-controller":        "arn:aws:iam::123456789012:policy/eks-demo-karpenter-controller-9f8e7d6",
		"urn:pulumi:dev::nodeless-eks::eks:index:Cluster$aws:iam/openIdConnectProvider:OpenIdConnectProvider::eks-demo-oidcProvider": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC",
		"urn:pulumi:dev::nodeless-eks::aws:eks/accessPolicyAssociation:AccessPolicyAssociation::ops":                                 "eks-demo#arn:aws:iam::123456789012:role/ops#arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
		// A name may hold "::" (all that follows the type is the name).
		"urn:pulumi:dev::p::kubernetes:yaml/v2:ConfigGroup$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::crds::x": "x",
	} {
		got, gotID, err := splitDecision(urn + "=" + id)
		assert.NoError(t, err, urn)
		assert.Equal(t, urn, got)
		assert.Equal(t, id, gotID)
	}

	for _, bad := range []string{"sg-1", "urn:pulumi:dev::p::t::n", "urn:pulumi:dev::p::t::n=", "role=r",
		"urn:pulumi:dev::p::t=arn:aws:iam::1:role/r", "urn:pulumi:dev::p::t::=id", "arn:aws:iam::1:role/r=urn:pulumi:dev::p::t::n"} {
		_, _, err := splitDecision(bad)
		assert.Error(t, err, bad)
	}
}
