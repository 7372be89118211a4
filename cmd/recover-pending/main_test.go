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

	for _, bad := range []string{"sg-1", "urn:pulumi:dev::p::t::n", "urn:pulumi:dev::p::t::n=", "role=r"} {
		_, _, err := splitDecision(bad)
		assert.Error(t, err, bad)
	}
}
