package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/testkit/moto"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeVPC is EC2 as the sweep sees one VPC: its interfaces and groups, a
// group that another group's rule names refuses its deletion
// (DependencyViolation), and each round the interfaces EKS and the load
// balancers still hold go after their own delay.
type fakeVPC struct {
	gone   bool
	nats   []map[string]any
	enis   []eni
	groups []securityGroup
	rules  []securityGroupRule
	// endpoints are the VPC's endpoints; a deleted one is "deleting" (the
	// VpcEndpoint State values, EC2 API reference), unless unsuccessful
	// names the code its delete answers with, in an Unsuccessful item and
	// exit 0 (DeleteVpcEndpoints' response: Unsuccessful, UnsuccessfulItem).
	endpoints    []map[string]any
	unsuccessful string
	// goAfter removes an interface by ID once that many rounds passed.
	goAfter map[string]int
	// refuse answers every delete with this AWS error code.
	refuse string
	// instances are the states of the instances that exist, by ID; any
	// other is InvalidInstanceID.NotFound (EC2 API reference, error codes).
	instances map[string]string
	rounds    int
	calls     []string
}

func (f *fakeVPC) aws(_ context.Context, args ...string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	arg := func(name string) string {
		i := slices.Index(args, name)
		return args[i+1]
	}
	switch args[1] {
	case "describe-vpcs":
		if f.gone {
			return nil, awscli.NewError(args, "An error occurred (InvalidVpcID.NotFound) when calling the DescribeVpcs operation", errors.New("exit status 254"))
		}
		return []byte(`{"Vpcs":[{}]}`), nil
	case "describe-nat-gateways":
		return json.Marshal(map[string]any{"NatGateways": f.nats})
	case "describe-vpc-endpoints":
		return json.Marshal(map[string]any{"VpcEndpoints": f.endpoints})
	case "delete-vpc-endpoints":
		if f.unsuccessful != "" {
			return []byte(`{"Unsuccessful": [{"Error": {"Code": "` + f.unsuccessful + `", "Message": "no"}, "ResourceId": "x"}]}`), nil
		}
		for _, e := range f.endpoints {
			if e["VpcEndpointId"] == arg("--vpc-endpoint-ids") {
				e["State"] = "deleting"
			}
		}
		return []byte(`{"Unsuccessful": []}`), nil
	case "describe-instances":
		id := arg("--instance-ids")
		state, ok := f.instances[id]
		if !ok {
			return nil, awscli.NewError(args, "An error occurred (InvalidInstanceID.NotFound) when calling the DescribeInstances operation: "+
				"The instance ID '"+id+"' does not exist", errors.New("exit status 254"))
		}
		return json.Marshal(map[string]any{"Reservations": []any{map[string]any{"Instances": []any{map[string]any{"State": map[string]any{"Name": state}}}}}})
	case "describe-network-interfaces":
		f.rounds++
		var kept []eni
		for _, e := range f.enis {
			if n, ok := f.goAfter[e.NetworkInterfaceId]; !ok || f.rounds <= n {
				kept = append(kept, e)
			}
		}
		f.enis = kept
		return json.Marshal(map[string]any{"NetworkInterfaces": f.enis})
	case "delete-network-interface":
		if f.refuse != "" {
			return nil, awscli.NewError(args, "An error occurred ("+f.refuse+") when calling the DeleteNetworkInterface operation", errors.New("exit status 254"))
		}
		f.enis = slices.DeleteFunc(f.enis, func(e eni) bool { return e.NetworkInterfaceId == arg("--network-interface-id") })
		return nil, nil
	case "describe-security-groups":
		return json.Marshal(map[string]any{"SecurityGroups": f.groups})
	case "describe-security-group-rules":
		groups := strings.Split(strings.TrimPrefix(arg("--filters"), "Name=group-id,Values="), ",")
		var out []securityGroupRule
		for _, r := range f.rules {
			if slices.Contains(groups, r.GroupId) {
				out = append(out, r)
			}
		}
		return json.Marshal(map[string]any{"SecurityGroupRules": out})
	case "revoke-security-group-ingress", "revoke-security-group-egress":
		f.rules = slices.DeleteFunc(f.rules, func(r securityGroupRule) bool { return r.SecurityGroupRuleId == arg("--security-group-rule-ids") })
		return nil, nil
	case "delete-security-group":
		id := arg("--group-id")
		for _, r := range f.rules {
			if r.ReferencedGroupInfo.GroupId == id {
				return nil, awscli.NewError(args, "An error occurred (DependencyViolation): resource "+id+" has a dependent object", errors.New("exit status 254"))
			}
		}
		f.groups = slices.DeleteFunc(f.groups, func(g securityGroup) bool { return g.GroupId == id })
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected call %v", args)
}

// sweepWith runs Sweep on f with a fake clock: 10 s a round, 2 minutes
// at most.
func sweepWith(f *fakeVPC) (string, time.Duration, error) {
	var log bytes.Buffer
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	start := now
	err := Sweep(context.Background(), f.aws, Network{VpcID: "vpc-1", Region: "eu-west-1", ClusterName: "eks-demo", Keep: []string{"sg-node"},
		Timeout: 2 * time.Minute, Interval: 10 * time.Second, ReportEvery: 30 * time.Second, Log: &log,
		Now: func() time.Time { return now }, Sleep: func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil }})
	return log.String(), now.Sub(start), err
}

// cniENI is a detached interface of the VPC CNI's, tagged as it tags them
// (amazon-vpc-cni-k8s pkg/awsutils) and, with owner, with the cluster's
// tag (ADDITIONAL_ENI_TAGS).
func cniENI(id, owner, created, instance string) eni {
	e := eni{NetworkInterfaceId: id, Status: "available", Description: "aws-K8S-" + instance, InterfaceType: "interface",
		TagSet: []tag{{Key: cniInstanceTag, Value: instance}}}
	if created != "" {
		e.TagSet = append(e.TagSet, tag{Key: cniCreatedAtTag, Value: created})
	}
	if owner != "" {
		e.TagSet = append(e.TagSet, tag{Key: clusterTagKey, Value: owner})
	}
	return e
}

// TestSweepDecidesTheCNIsInterfacesByTagAgeAndInstance: a detached
// interface of the VPC CNI's goes when it is this cluster's (its tag) and
// older than the CNI's own 5-minute cool-down, or, untagged (an upgraded
// stack's), once its instance no longer exists; another cluster's never,
// one of a running instance never, and a young one once it is old enough.
func TestSweepDecidesTheCNIsInterfacesByTagAgeAndInstance(t *testing.T) {
	f := &fakeVPC{
		enis: []eni{
			cniENI("eni-own", "eks-demo", "2026-12-04T10:00:00Z", "i-gone1"),
			cniENI("eni-young", "eks-demo", "2026-12-04T11:56:00Z", "i-gone2"), // 4 minutes before the sweep
			cniENI("eni-other", "other-cluster", "2026-12-04T10:00:00Z", "i-gone3"),
			cniENI("eni-untagged", "", "2026-12-04T10:00:00Z", "i-gone4"),
			cniENI("eni-ended", "", "2026-12-04T10:00:00Z", "i-ended"),
			cniENI("eni-running", "", "2026-12-04T10:00:00Z", "i-running"),
			cniENI("eni-ageless", "eks-demo", "", "i-gone5"),
		},
		instances: map[string]string{"i-ended": "terminated", "i-running": "running"},
	}
	log, took, err := sweepWith(f)
	t.Log(log)
	require.Error(t, err)
	var left []string
	for _, e := range f.enis {
		left = append(left, e.NetworkInterfaceId)
	}
	assert.Equal(t, []string{"eni-other", "eni-running", "eni-ageless"}, left)
	assert.Contains(t, log, "deleted network interface eni-young", "deleted once past the cool-down")
	assert.GreaterOrEqual(t, took, time.Minute, "the young one was waited for")
	for _, want := range []string{
		"network interface eni-other (aws-K8S-i-gone3, available, cluster other-cluster's)",
		"network interface eni-running (aws-K8S-i-running, available, untagged, and its instance i-running is running)",
		"network interface eni-ageless (aws-K8S-i-gone5, available, no node.k8s.amazonaws.com/createdAt tag",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestSweepDeletesWhatTheClusterLeftAndWaitsForTheRest(t *testing.T) {
	tagged := func(k, v string) []tag { return []tag{{Key: k, Value: v}} }
	f := &fakeVPC{
		enis: []eni{
			cniENI("eni-cni", "eks-demo", "2026-12-04T10:00:00Z", "i-0abc"),
			{NetworkInterfaceId: "eni-eks", Status: "in-use", Description: "Amazon EKS eks-demo", InterfaceType: "interface"},
			// The stack's own NAT gateway, which Pulumi deletes after the sweep.
			{NetworkInterfaceId: "eni-nat", Status: "in-use", Description: "Interface for NAT Gateway nat-1", InterfaceType: "nat_gateway"},
		},
		nats: []map[string]any{{"NatGatewayId": "nat-1", "State": "available", "Tags": []tag{{Key: "nodeless-eks/cluster", Value: "eks-demo"}},
			"NatGatewayAddresses": []map[string]any{{"NetworkInterfaceId": "eni-nat"}}}},
		groups: []securityGroup{
			{GroupId: "sg-default", GroupName: "default"},
			{GroupId: "sg-node", GroupName: "eks-demo-node-1a2b"},
			{GroupId: "sg-lb", GroupName: "k8s-traffic-eks-demo-1a2b", Tags: tagged("elbv2.k8s.aws/cluster", "eks-demo")},
			{GroupId: "sg-eks", GroupName: "eks-cluster-sg-eks-demo-1", Tags: tagged("aws:eks:cluster-name", "eks-demo")},
			{GroupId: "sg-elb", GroupName: "k8s-elb-a1b2c3", Tags: tagged("kubernetes.io/cluster/eks-demo", "owned")},
		},
		rules:   []securityGroupRule{{SecurityGroupRuleId: "sgr-1", GroupId: "sg-node", ReferencedGroupInfo: struct{ GroupId string }{"sg-lb"}}},
		goAfter: map[string]int{"eni-eks": 3},
	}
	log, took, err := sweepWith(f)
	t.Log(log)
	require.NoError(t, err)
	assert.Equal(t, []eni{{NetworkInterfaceId: "eni-nat", Status: "in-use", Description: "Interface for NAT Gateway nat-1", InterfaceType: "nat_gateway"}},
		f.enis, "the CNI's is deleted, EKS's went, the stack's NAT gateway's is Pulumi's to delete after the sweep")
	assert.Equal(t, []string{"sg-default", "sg-node"}, []string{f.groups[0].GroupId, f.groups[1].GroupId}, "the default group and the stack's own node group stay")
	assert.Len(t, f.groups, 2)
	assert.Contains(t, f.calls, "ec2 revoke-security-group-ingress --group-id sg-node --security-group-rule-ids sgr-1",
		"the node group's rule that names the LB controller's group goes first")
	assert.Contains(t, log, "deleted network interface eni-cni (aws-K8S-i-0abc), which the VPC CNI left")
	assert.Contains(t, log, "deleted security group sg-lb (k8s-traffic-eks-demo-1a2b)")
	assert.Contains(t, log, "deleted security group sg-eks (eks-cluster-sg-eks-demo-1)")
	assert.Contains(t, log, "deleted security group sg-elb (k8s-elb-a1b2c3)", "the in-tree controller's group of this cluster's Classic ELB")
	assert.Contains(t, log, "waiting for 1 object(s) to go")
	assert.Equal(t, 30*time.Second, took, "done at the round that no longer sees EKS's interface (the fourth)")
}

func TestSweepFailsAtItsBoundNamingWhatIsNotTheStacks(t *testing.T) {
	f := &fakeVPC{
		enis: []eni{{NetworkInterfaceId: "eni-gd", Status: "in-use", Description: "VPC Endpoint Interface vpce-0gd", InterfaceType: "vpc_endpoint"},
			{NetworkInterfaceId: "eni-hand", Status: "available", Description: "made by hand"},
			// The VPC CNI's on a node that still runs: attached, not left.
			func() eni {
				e := cniENI("eni-live", "eks-demo", "2026-12-04T10:00:00Z", "i-0live")
				e.Status = "in-use"
				return e
			}(),
			{NetworkInterfaceId: "eni-nat2", Status: "in-use", Description: "Interface for NAT Gateway nat-2", InterfaceType: "nat_gateway"}},
		nats: []map[string]any{{"NatGatewayId": "nat-2", "State": "available", "Tags": []tag{{Key: "nodeless-eks/cluster", Value: "another"}},
			"NatGatewayAddresses": []map[string]any{{"NetworkInterfaceId": "eni-nat2"}}}},
		groups: []securityGroup{{GroupId: "sg-gd", GroupName: "GuardDutyManagedSecurityGroup-vpc-1"},
			{GroupId: "sg-other", GroupName: "k8s-traffic-other", Tags: []tag{{Key: "elbv2.k8s.aws/cluster", Value: "other-cluster"}}},
			{GroupId: "sg-eks-other", GroupName: "eks-cluster-sg-other-cluster-1", Tags: []tag{{Key: "aws:eks:cluster-name", Value: "other-cluster"}}},
			// The in-tree controller's Classic ELB groups: another cluster's,
			// and one this cluster only shares.
			{GroupId: "sg-elb-other", GroupName: "k8s-elb-d4e5f6", Tags: []tag{{Key: "kubernetes.io/cluster/other-cluster", Value: "owned"}}},
			{GroupId: "sg-elb-shared", GroupName: "k8s-elb-g7h8i9", Tags: []tag{{Key: "kubernetes.io/cluster/eks-demo", Value: "shared"}}}},
	}
	log, took, err := sweepWith(f)
	t.Log(log)
	require.Error(t, err)
	assert.Equal(t, 2*time.Minute, took, "it fails at its bound, no later")
	for _, want := range []string{
		"VPC vpc-1 still holds, after 2m0s, what blocks its subnets' and its deletion",
		"network interface eni-gd (VPC Endpoint Interface vpce-0gd, in-use, vpc_endpoint): delete what owns it (vpc_endpoint)",
		"network interface eni-hand (made by hand, available): aws ec2 delete-network-interface --region eu-west-1 --network-interface-id eni-hand",
		"security group sg-gd (GuardDutyManagedSecurityGroup-vpc-1): aws ec2 delete-security-group --region eu-west-1 --group-id sg-gd",
		"security group sg-other (k8s-traffic-other)",
		"security group sg-eks-other (eks-cluster-sg-other-cluster-1)",
		"network interface eni-live (aws-K8S-i-0live, in-use): delete what it is attached to",
		"network interface eni-nat2 (Interface for NAT Gateway nat-2, in-use, nat_gateway): delete what owns it (nat_gateway)",
		"then run `pulumi destroy` again",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Len(t, f.enis, 4, "another's interface, and one attached, is never deleted")
	assert.Len(t, f.groups, 5, "another cluster's groups are never deleted")
}

// TestSweepChangesOnlyTheStacksGroups: the LB controller's group goes
// once the stack's node group's rule naming it is revoked
// (TestSweepDeletesWhatTheClusterLeftAndWaitsForTheRest); a rule of a
// group that is not the stack's stays, and the group it names is left
// unchanged, said so with both commands.
func TestSweepChangesOnlyTheStacksGroups(t *testing.T) {
	ref := func(id, group, names string) securityGroupRule {
		return securityGroupRule{SecurityGroupRuleId: id, GroupId: group, ReferencedGroupInfo: struct{ GroupId string }{names}}
	}
	f := &fakeVPC{
		groups: []securityGroup{{GroupId: "sg-node", GroupName: "eks-demo-node-1a2b"},
			{GroupId: "sg-lb", GroupName: "k8s-traffic-eks-demo-1a2b", Tags: []tag{{Key: "elbv2.k8s.aws/cluster", Value: "eks-demo"}}},
			{GroupId: "sg-bastion", GroupName: "bastion"}},
		rules: []securityGroupRule{ref("sgr-node", "sg-node", "sg-lb"), ref("sgr-bastion", "sg-bastion", "sg-lb")},
	}
	_, _, err := sweepWith(f)
	require.Error(t, err)
	assert.Len(t, f.rules, 2, "another's rule is kept, and the stack's too while the group cannot go")
	assert.Len(t, f.groups, 3)
	assert.Contains(t, err.Error(), "security group sg-lb (k8s-traffic-eks-demo-1a2b, named by rule sgr-bastion of group sg-bastion, which is not this stack's): "+
		"if that group's owner agrees, aws ec2 revoke-security-group-ingress --region eu-west-1 --group-id sg-bastion --security-group-rule-ids sgr-bastion, "+
		"then aws ec2 delete-security-group --region eu-west-1 --group-id sg-lb")
	assert.NotContains(t, f.calls, "ec2 delete-security-group --group-id sg-lb", "no delete AWS would refuse")
}

// TestSweepFailsFastOnWhatNeverGoes: GuardDuty's endpoint and group, and
// an interface made by hand, stay until someone removes them
// (terraform-provider-aws #46747): with only those left the sweep fails
// after its settle, not at its bound; a load balancer's interface, which
// goes by itself, keeps it waiting.
func TestSweepFailsFastOnWhatNeverGoes(t *testing.T) {
	never := func() *fakeVPC {
		return &fakeVPC{
			enis: []eni{{NetworkInterfaceId: "eni-gd", Status: "in-use", Description: "VPC Endpoint Interface vpce-0gd", InterfaceType: "vpc_endpoint"},
				{NetworkInterfaceId: "eni-hand", Status: "available", Description: "made by hand", InterfaceType: "interface"},
				// A Classic ELB's, which no controller here deletes, and
				// another cluster's EKS interface.
				{NetworkInterfaceId: "eni-clb", Status: "in-use", Description: "ELB my-classic", InterfaceType: "interface"},
				{NetworkInterfaceId: "eni-other", Status: "in-use", Description: "Amazon EKS other-cluster", InterfaceType: "interface"}},
			groups: []securityGroup{{GroupId: "sg-gd", GroupName: "GuardDutyManagedSecurityGroup-vpc-1"}},
		}
	}
	_, took, err := sweepWith(never())
	require.Error(t, err)
	assert.Equal(t, stuckSettle, took, "failed after its settle, before its 2-minute bound")
	assert.Contains(t, err.Error(), "nothing in this destroy deletes any of it")
	assert.Contains(t, err.Error(), "security group sg-gd (GuardDutyManagedSecurityGroup-vpc-1)")

	f := never()
	f.enis = append(f.enis, eni{NetworkInterfaceId: "eni-nlb", Status: "in-use", Description: "ELB net/k8s-default-web-1a2b/3c4d",
		InterfaceType: "network_load_balancer"})
	_, took, err = sweepWith(f)
	require.Error(t, err)
	assert.Equal(t, 2*time.Minute, took, "a deleted load balancer's interface goes by itself: it waits for it up to its bound")
	assert.Contains(t, err.Error(), "still holds, after 2m0s")
}

// TestSweepDeletesGuardDutysEndpointAndGroup: GuardDuty's
// runtime-monitoring endpoint (its service and GuardDuty's tag) and group
// (its name and tag) go, and the sweep waits for the endpoint's interface;
// an endpoint of that service made by hand and a group of that name in
// another VPC stay, named.
func TestSweepDeletesGuardDutysEndpointAndGroup(t *testing.T) {
	guardDuty := []tag{{Key: "GuardDutyManaged", Value: "true"}}
	f := &fakeVPC{
		endpoints: []map[string]any{
			{"VpcEndpointId": "vpce-gd", "ServiceName": "com.amazonaws.eu-west-1.guardduty-data", "State": "available", "Tags": guardDuty,
				"NetworkInterfaceIds": []string{"eni-gd"}},
			{"VpcEndpointId": "vpce-fips", "ServiceName": "com.amazonaws.eu-west-1.guardduty-data-fips", "State": "available", "Tags": guardDuty},
			{"VpcEndpointId": "vpce-hand", "ServiceName": "com.amazonaws.eu-west-1.guardduty-data", "State": "available",
				"NetworkInterfaceIds": []string{"eni-hand"}},
		},
		enis: []eni{
			{NetworkInterfaceId: "eni-gd", Status: "in-use", Description: "VPC Endpoint Interface vpce-gd", InterfaceType: "vpc_endpoint"},
			{NetworkInterfaceId: "eni-hand", Status: "in-use", Description: "VPC Endpoint Interface vpce-hand", InterfaceType: "vpc_endpoint"},
		},
		groups: []securityGroup{{GroupId: "sg-gd", GroupName: "GuardDutyManagedSecurityGroup-vpc-1", Tags: guardDuty},
			{GroupId: "sg-gd-other", GroupName: "GuardDutyManagedSecurityGroup-vpc-2", Tags: guardDuty}},
		goAfter: map[string]int{"eni-gd": 3},
	}
	log, took, err := sweepWith(f)
	t.Log(log)
	require.Error(t, err)
	assert.Contains(t, log, "deleted VPC endpoint vpce-gd (com.amazonaws.eu-west-1.guardduty-data), which GuardDuty made for runtime monitoring")
	assert.Contains(t, log, "deleted security group sg-gd (GuardDutyManagedSecurityGroup-vpc-1), which GuardDuty's runtime monitoring left")
	assert.Equal(t, "deleting", f.endpoints[0]["State"])
	assert.Equal(t, "deleting", f.endpoints[1]["State"], "its FIPS endpoint too")
	assert.Equal(t, "available", f.endpoints[2]["State"], "an endpoint without GuardDuty's tag is not GuardDuty's")
	assert.Equal(t, 30*time.Second+stuckSettle, took, "it waits for GuardDuty's interface, then fails fast on the rest")
	assert.Contains(t, err.Error(), "network interface eni-hand (VPC Endpoint Interface vpce-hand")
	assert.Contains(t, err.Error(), "security group sg-gd-other (GuardDutyManagedSecurityGroup-vpc-2)")
	assert.NotContains(t, err.Error(), "eni-gd ")
}

// TestSweepReadsAnEndpointsRefusal: DeleteVpcEndpoints answers a refusal
// of one endpoint in its Unsuccessful list, exit 0; an endpoint already
// gone counts as deleted, another refusal is an error, and one of IAM's
// fails the sweep at once.
func TestSweepReadsAnEndpointsRefusal(t *testing.T) {
	endpoint := func(code string) *fakeVPC {
		return &fakeVPC{unsuccessful: code, endpoints: []map[string]any{{"VpcEndpointId": "vpce-gd",
			"ServiceName": "com.amazonaws.eu-west-1.guardduty-data", "State": "available", "Tags": []tag{{Key: "GuardDutyManaged", Value: "true"}}}}}
	}
	_, _, err := sweepWith(endpoint("InvalidVpcEndpoint.NotFound"))
	require.NoError(t, err)
	_, took, err := sweepWith(endpoint("UnauthorizedOperation"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the credentials that run the destroy may not do this")
	assert.Zero(t, took)
	_, took, err = sweepWith(endpoint("InvalidParameter"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(InvalidParameter)")
	assert.Equal(t, 2*time.Minute, took, "tried again until the bound")
}

// TestSweepSaysWhyADeleteFailed: a delete AWS refuses for a reason a wait
// may change is retried and, at the bound, named with what AWS said; one
// the credentials may not make fails the sweep at once.
func TestSweepSaysWhyADeleteFailed(t *testing.T) {
	cni := func() []eni {
		return []eni{cniENI("eni-cni", "eks-demo", "2026-12-04T10:00:00Z", "i-0abc")}
	}
	_, took, err := sweepWith(&fakeVPC{enis: cni(), refuse: "InvalidNetworkInterface.InUse"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "network interface eni-cni (aws-K8S-i-0abc, available, its delete failed: aws ec2 delete-network-interface")
	assert.Contains(t, err.Error(), "(InvalidNetworkInterface.InUse)")
	assert.GreaterOrEqual(t, took, 2*time.Minute, "retried until the bound")

	_, took, err = sweepWith(&fakeVPC{enis: cni(), refuse: "UnauthorizedOperation"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(UnauthorizedOperation)")
	assert.Contains(t, err.Error(), "the credentials that run the destroy may not do this")
	assert.Zero(t, took, "at once: no wait changes a permission")
}

func TestSweepOfAVpcThatIsGone(t *testing.T) {
	log, _, err := sweepWith(&fakeVPC{gone: true})
	require.NoError(t, err)
	assert.Contains(t, log, "VPC vpc-1 is gone")
}

// TestSweepAgainstMoto runs the sweep's real CLI calls against moto's EC2:
// its filters, its answers' shapes, and the account the VPC's ARN names,
// where another account's "not found" proves nothing.
func TestSweepAgainstMoto(t *testing.T) {
	s := moto.Start(t)
	other := s.In(t, moto.Other, "deployer")
	var out struct {
		Vpc              struct{ VpcId string }
		Subnet           struct{ SubnetId string }
		GroupId          string
		NetworkInterface struct{ NetworkInterfaceId string }
	}
	run := func(v any, args ...string) {
		t.Helper()
		moto.Field(t, s.AWS(t, other, args...), v)
	}
	run(&out, "ec2", "create-vpc", "--cidr-block", "10.0.0.0/16")
	vpc := out.Vpc.VpcId
	run(&out, "ec2", "create-subnet", "--vpc-id", vpc, "--cidr-block", "10.0.0.0/24")
	subnet := out.Subnet.SubnetId
	run(&out, "ec2", "create-security-group", "--group-name", "eks-demo-node", "--description", "node", "--vpc-id", vpc)
	node := out.GroupId
	run(&out, "ec2", "create-security-group", "--group-name", "k8s-traffic-eks-demo-1", "--description", "lb", "--vpc-id", vpc,
		"--tag-specifications", "ResourceType=security-group,Tags=[{Key=elbv2.k8s.aws/cluster,Value=eks-demo}]")
	lb := out.GroupId
	s.AWS(t, other, "ec2", "authorize-security-group-ingress", "--group-id", node, "--protocol", "tcp", "--port", "80", "--source-group", lb)
	run(&out, "ec2", "create-security-group", "--group-name", "eks-cluster-sg-other-1", "--description", "another cluster's", "--vpc-id", vpc,
		"--tag-specifications", "ResourceType=security-group,Tags=[{Key=aws:eks:cluster-name,Value=other}]")
	otherEKS := out.GroupId
	// GuardDuty's runtime-monitoring endpoint and group, as GuardDuty tags them.
	run(&out, "ec2", "create-security-group", "--group-name", "GuardDutyManagedSecurityGroup-"+vpc, "--description", "guardduty", "--vpc-id", vpc,
		"--tag-specifications", "ResourceType=security-group,Tags=[{Key=GuardDutyManaged,Value=true}]")
	guardDutyGroup := out.GroupId
	var endpoint struct {
		VpcEndpoint struct{ VpcEndpointId string }
	}
	run(&endpoint, "ec2", "create-vpc-endpoint", "--vpc-id", vpc, "--vpc-endpoint-type", "Interface", "--service-name",
		"com.amazonaws."+moto.Region+".guardduty-data", "--subnet-ids", subnet, "--security-group-ids", guardDutyGroup,
		"--tag-specifications", "ResourceType=vpc-endpoint,Tags=[{Key=GuardDutyManaged,Value=true}]")
	guardDutyEndpoint := endpoint.VpcEndpoint.VpcEndpointId
	run(&endpoint, "ec2", "create-vpc-endpoint", "--vpc-id", vpc, "--vpc-endpoint-type", "Interface", "--service-name",
		"com.amazonaws."+moto.Region+".guardduty-data", "--subnet-ids", subnet)
	handMadeEndpoint := endpoint.VpcEndpoint.VpcEndpointId
	cni := func(instance string, kv ...string) string {
		tags := "{Key=" + cniInstanceTag + ",Value=" + instance + "},{Key=" + cniCreatedAtTag + ",Value=2026-01-01T00:00:00Z}"
		for i := 0; i+1 < len(kv); i += 2 {
			tags += ",{Key=" + kv[i] + ",Value=" + kv[i+1] + "}"
		}
		run(&out, "ec2", "create-network-interface", "--subnet-id", subnet, "--description", "aws-K8S-"+instance, "--groups", node,
			"--tag-specifications", "ResourceType=network-interface,Tags=["+tags+"]")
		return out.NetworkInterface.NetworkInterfaceId
	}
	leaked := cni("i-0abc", clusterTagKey, "eks-demo")
	// An upgraded stack's, untagged, of an instance that no longer exists;
	// another cluster's.
	untagged, otherCNI := cni("i-0123456789abcdef0"), cni("i-0def", clusterTagKey, "other")
	run(&out, "ec2", "create-network-interface", "--subnet-id", subnet, "--description", "made by hand")
	decoy := out.NetworkInterface.NetworkInterfaceId
	// The stack's own NAT gateway (tagged) and another's: moto ignores tag
	// filters on NAT gateways, so only the tags the sweep reads tell them apart.
	var nat struct {
		AllocationId string
		NatGateway   struct {
			NatGatewayId        string
			NatGatewayAddresses []struct{ NetworkInterfaceId string }
		}
	}
	run(&nat, "ec2", "allocate-address", "--domain", "vpc")
	run(&nat, "ec2", "create-nat-gateway", "--subnet-id", subnet, "--allocation-id", nat.AllocationId,
		"--tag-specifications", "ResourceType=natgateway,Tags=[{Key=nodeless-eks/cluster,Value=eks-demo}]")
	ownNAT, ownNATENI := nat.NatGateway.NatGatewayId, nat.NatGateway.NatGatewayAddresses[0].NetworkInterfaceId
	run(&nat, "ec2", "allocate-address", "--domain", "vpc")
	run(&nat, "ec2", "create-nat-gateway", "--subnet-id", subnet, "--allocation-id", nat.AllocationId)
	otherNAT, otherNATENI := nat.NatGateway.NatGatewayId, nat.NatGateway.NatGatewayAddresses[0].NetworkInterfaceId

	env := map[string]string{EnvVpcArn: "arn:aws:ec2:" + moto.Region + ":" + moto.Other + ":vpc/" + vpc, EnvClusterName: "eks-demo",
		EnvNodeSecurityGroup: node, EnvNetworkTimeout: "1s"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	t.Run("the ambient account is refused: its VPCs are another's", func(t *testing.T) {
		err := runNetwork(ctx, getenv, &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the credentials are for account "+moto.Account)
		assert.Contains(t, err.Error(), "VPC "+vpc+" is in account "+moto.Other)
	})
	env[EnvAWSRoleArn] = "arn:aws:iam::" + moto.Other + ":role/deployer"
	t.Run("through the stack's role: the CNI's interface and the LB controller's group go, a decoy stays and is named", func(t *testing.T) {
		var log bytes.Buffer
		err := runNetwork(ctx, getenv, &log)
		t.Log(log.String())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "network interface "+decoy+" (made by hand, available): aws ec2 delete-network-interface --region "+moto.Region)
		assert.Contains(t, err.Error(), "network interface "+otherNATENI, "another's NAT gateway's")
		assert.Contains(t, err.Error(), "security group "+otherEKS+" (eks-cluster-sg-other-1): aws ec2 delete-security-group", "another cluster's")
		assert.NotContains(t, err.Error(), ownNATENI, "the stack's own NAT gateway's is Pulumi's to delete")
		assert.NotContains(t, err.Error(), leaked)
		assert.Contains(t, log.String(), "deleted network interface "+leaked)
		assert.Contains(t, log.String(), "deleted network interface "+untagged, "moto says its instance is not found")
		assert.Contains(t, err.Error(), "network interface "+otherCNI+" (aws-K8S-i-0def, available, cluster other's)")
		assert.Contains(t, log.String(), "deleted security group "+lb)
		assert.Contains(t, log.String(), "deleted VPC endpoint "+guardDutyEndpoint)
		assert.Contains(t, log.String(), "deleted security group "+guardDutyGroup)
		assert.NotContains(t, log.String(), handMadeEndpoint, "without GuardDuty's tag it is not GuardDuty's")
		var endpoints struct {
			VpcEndpoints []struct{ VpcEndpointId, State string }
		}
		run(&endpoints, "ec2", "describe-vpc-endpoints", "--vpc-endpoint-ids", handMadeEndpoint)
		assert.NotEqual(t, "deleted", strings.ToLower(endpoints.VpcEndpoints[0].State))
		var rules struct{ SecurityGroupRules []securityGroupRule }
		run(&rules, "ec2", "describe-security-group-rules", "--filters", "Name=group-id,Values="+node)
		for _, r := range rules.SecurityGroupRules {
			assert.NotEqual(t, lb, r.ReferencedGroupInfo.GroupId, "the node group's rule naming the LB group was revoked")
		}
	})
	t.Run("once the decoys are gone, nothing is left but the stack's NAT gateway", func(t *testing.T) {
		s.AWS(t, other, "ec2", "delete-network-interface", "--network-interface-id", decoy)
		s.AWS(t, other, "ec2", "delete-network-interface", "--network-interface-id", otherCNI)
		s.AWS(t, other, "ec2", "delete-nat-gateway", "--nat-gateway-id", otherNAT)
		s.AWS(t, other, "ec2", "delete-network-interface", "--network-interface-id", otherNATENI)
		s.AWS(t, other, "ec2", "delete-security-group", "--group-id", otherEKS)
		s.AWS(t, other, "ec2", "delete-vpc-endpoints", "--vpc-endpoint-ids", handMadeEndpoint)
		require.NoError(t, runNetwork(ctx, getenv, &bytes.Buffer{}))
	})
	t.Run("a VPC that is gone, in its own account, has nothing left", func(t *testing.T) {
		s.AWS(t, other, "ec2", "delete-nat-gateway", "--nat-gateway-id", ownNAT)
		s.AWS(t, other, "ec2", "delete-network-interface", "--network-interface-id", ownNATENI)
		s.AWS(t, other, "ec2", "delete-subnet", "--subnet-id", subnet)
		s.AWS(t, other, "ec2", "delete-security-group", "--group-id", node)
		s.AWS(t, other, "ec2", "delete-vpc", "--vpc-id", vpc)
		var log bytes.Buffer
		require.NoError(t, runNetwork(ctx, getenv, &log))
		assert.Contains(t, log.String(), "is gone")
	})
}
