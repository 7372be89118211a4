package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakeaws/pulumieks"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkthrough is what deploy/'s TestWalkthrough leaves in
// testdata/walkthrough.golden.json: each root stack file as deploy/'s
// checklist writes it, its deploy role's policy and boundary, and the
// actions deploy/ holds each type of this program to.
type walkthrough struct {
	Actions map[string][]string
	Stacks  []struct {
		Name, Account, Region, StackFile, Boundary string
		DeployerPolicy                             iampolicy.Document
	}
}

// TestWalkthroughStacksUnderTheirDeployRoles runs this program, under
// mocks, with each stack file of deploy/'s walkthrough (production,
// staging, the review template as a review stack), and evaluates every
// request its registrations and lookups make, each with its resource ARN
// and the condition keys the deploy role's policy reads, against the
// deployer policy deploy/ registered for that stack: the stack file a
// team writes from the checklist deploys under the role it gets, with
// nothing denied.
func TestWalkthroughStacksUnderTheirDeployRoles(t *testing.T) {
	raw, err := os.ReadFile("testdata/walkthrough.golden.json")
	require.NoError(t, err, "written by deploy/'s TestWalkthrough")
	var w walkthrough
	require.NoError(t, json.Unmarshal(raw, &w))
	require.Len(t, w.Stacks, 3)
	for _, st := range w.Stacks {
		t.Run(st.Name, func(t *testing.T) {
			stack := st.Name
			if stack == "pr" {
				stack = "pr-42" // a review stack, with the template's file
			}
			file := filepath.Join(t.TempDir(), "Pulumi."+stack+".yaml")
			require.NoError(t, os.WriteFile(file, []byte(st.StackFile), 0o644))
			cfg := stackConfig(t, file)
			vpc := cfg[testProject+":vpcName"]
			acct := &fakeaws.Account{Vpc: fakeaws.VpcNamed(vpc), ClusterName: cfg[testProject+":clusterName"], CallerAccount: st.Account}
			if acct.ClusterName == "" {
				acct.ClusterName = names.DefaultClusterName(testProject, stack)
			}
			rec := acct.Recorder(testProject, stack)
			res := rec.Run(t, cfg, false, pulumieks.WithStandIn(testProgram))
			require.NoError(t, res.Err)

			e := &deployRequests{region: st.Region, account: st.Account, cluster: acct.ClusterName, rec: rec}
			checked := 0
			for _, reg := range programRegistrations(rec) {
				if exempt(reg.Type) {
					continue
				}
				actions, ok := w.Actions[reg.Type]
				require.Truef(t, ok, "%s registers %s, which deploy/'s deployerActions does not cover", stack, reg.Type)
				for _, a := range actions {
					for _, req := range e.resource(reg, a) {
						checked++
						d := iamtest.Evaluate(st.DeployerPolicy, nil, req)
						assert.Equalf(t, iamtest.Allowed, d, "%s: %s %s needs %s on %s with %v", stack, reg.Type, reg.Name, a, req.Resource, req.Context)
					}
				}
			}
			for _, inv := range rec.Invocations() {
				for _, a := range w.Actions[inv.Token] {
					req := e.lookup(inv, a)
					checked++
					assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(st.DeployerPolicy, nil, req), "%s: %s needs %s on %s", stack, inv.Token, a, req.Resource)
				}
			}
			assert.Greater(t, checked, 150, "every registration's requests were evaluated")
			for _, role := range rec.OfType(tokens.Role) {
				assert.Equalf(t, st.Boundary, role.Inputs["permissionsBoundary"].StringValue(), "%s carries the stack's boundary", role.Name)
			}
		})
	}
}

// exempt are the types that need no AWS permission of the deploy role:
// components, and what goes through the cluster's Kubernetes API.
func exempt(typ string) bool {
	for _, p := range []string{"kubernetes:", "pulumi:providers:kubernetes", "nodeless-eks:", "command:"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// deployRequests builds, for one stack in its account and region, the
// requests that a registration's actions make: the ARN AWS authorizes
// each on, and the condition keys of the request.
type deployRequests struct {
	region, account, cluster string
	rec                      *mock.Recorder
}

func (e *deployRequests) arn(service, res string) string {
	return "arn:aws:" + service + ":" + e.region + ":" + e.account + ":" + res
}
func (e *deployRequests) iam(res string) string { return "arn:aws:iam::" + e.account + ":" + res }

// physical is a resource's name: the one the program gives, else
// pulumi-aws's autoname (the fake engine's suffix, as its state says).
func physical(reg *mock.Registration, input string) string {
	if v, ok := reg.Inputs[resource.PropertyKey(input)]; ok && v.IsString() && v.StringValue() != "" {
		return v.StringValue()
	}
	return reg.Name + fakeaws.Suffix
}

// rolePath is a role's or policy's IAM path.
func rolePath(reg *mock.Registration) string {
	if v, ok := reg.Inputs["path"]; ok && v.IsString() {
		return v.StringValue()
	}
	return "/"
}

// roleNamed finds the role registration whose physical name is name.
func (e *deployRequests) roleNamed(name string) *mock.Registration {
	for _, r := range e.rec.OfType(tokens.Role) {
		if physical(r, "name") == name {
			return r
		}
	}
	return nil
}

// roleOfArn finds the role registration an ARN names.
func (e *deployRequests) roleOfArn(arn string) *mock.Registration {
	return e.roleNamed(arn[strings.LastIndex(arn, "/")+1:])
}

func (e *deployRequests) req(action, res string, ctx map[string][]string) iamtest.Request {
	if ctx == nil {
		ctx = map[string][]string{}
	}
	region := e.region
	if strings.HasPrefix(action, "iam:") {
		region = "us-east-1" // IAM is global; its requests name us-east-1
	}
	ctx["aws:RequestedRegion"] = []string{region}
	return iamtest.Request{Action: action, Resource: res, Context: ctx}
}

// passRole is iam:PassRole of the role an input names, to service.
func (e *deployRequests) passRole(arn, service string) []iamtest.Request {
	return []iamtest.Request{e.req("iam:PassRole", arn, map[string][]string{"iam:PassedToService": {service}})}
}

// describe reports the actions that take no resource-level scope, which
// the deployer policy grants on "*" in the stack's region.
func describe(action string) bool {
	_, verb, _ := strings.Cut(action, ":")
	return strings.HasPrefix(verb, "Describe") && action != "eks:DescribeCluster" && action != "eks:DescribeAddon" &&
		action != "eks:DescribeFargateProfile" && action != "eks:DescribeAccessEntry" && action != "eks:DescribePodIdentityAssociation" &&
		action != "eks:DescribeUpdate" && action != "events:DescribeRule" && action != "kms:DescribeKey"
}

// resource is the requests one action of one registration makes.
func (e *deployRequests) resource(reg *mock.Registration, action string) []iamtest.Request {
	str := func(k string) string {
		if v, ok := reg.Inputs[resource.PropertyKey(k)]; ok && v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	if describe(action) {
		return []iamtest.Request{e.req(action, "*", nil)}
	}
	cluster := e.arn("eks", "cluster/"+e.cluster)
	switch reg.Type {
	case tokens.Role:
		ctx := map[string][]string{}
		if b := str("permissionsBoundary"); b != "" {
			ctx["iam:PermissionsBoundary"] = []string{b}
		}
		return []iamtest.Request{e.req(action, e.iam("role"+rolePath(reg)+physical(reg, "name")), ctx)}
	case tokens.Policy:
		return []iamtest.Request{e.req(action, e.iam("policy"+rolePath(reg)+physical(reg, "name")), nil)}
	case tokens.RolePolicyAttachment:
		role := e.roleNamed(str("role"))
		ctx := map[string][]string{"iam:PolicyARN": {str("policyArn")}}
		path := "/"
		if role != nil {
			path = rolePath(role)
			if b := role.Inputs["permissionsBoundary"].StringValue(); b != "" {
				ctx["iam:PermissionsBoundary"] = []string{b}
			}
		}
		return []iamtest.Request{e.req(action, e.iam("role"+path+str("role")), ctx)}
	case tokens.Queue:
		return []iamtest.Request{e.req(action, e.arn("sqs", physical(reg, "name")), nil)}
	case tokens.QueuePolicy:
		url := str("queueUrl")
		return []iamtest.Request{e.req(action, e.arn("sqs", url[strings.LastIndex(url, "/")+1:]), nil)}
	case tokens.EventRule:
		return []iamtest.Request{e.req(action, e.arn("events", "rule/"+physical(reg, "name")), nil)}
	case tokens.EventTarget:
		return []iamtest.Request{e.req(action, e.arn("events", "rule/"+str("rule")), nil)}
	case tokens.LogGroup:
		return []iamtest.Request{e.req(action, e.arn("logs", "log-group:"+str("name")), nil)}
	case tokens.SecurityGroup:
		discovery := reg.Inputs["tags"].ObjectValue()[names.DiscoveryTagKey].StringValue()
		switch action {
		case "ec2:CreateSecurityGroup":
			return []iamtest.Request{
				e.req(action, e.arn("ec2", "security-group/*"), map[string][]string{"aws:RequestTag/" + names.DiscoveryTagKey: {discovery}}),
				e.req(action, e.arn("ec2", "vpc/"+str("vpcId")), nil),
			}
		case "ec2:CreateTags":
			return []iamtest.Request{e.req(action, e.arn("ec2", "security-group/*"), map[string][]string{"ec2:CreateAction": {"CreateSecurityGroup"}})}
		}
		return []iamtest.Request{e.req(action, e.arn("ec2", "security-group/sg-"+reg.Name),
			map[string][]string{"aws:ResourceTag/" + names.DiscoveryTagKey: {discovery}})}
	case tokens.SecurityGroupRule:
		ingress := str("type") == "ingress"
		if strings.HasSuffix(action, "Ingress") != ingress && (strings.HasSuffix(action, "Ingress") || strings.HasSuffix(action, "Egress")) {
			return nil // a rule is one direction's
		}
		ctx := map[string][]string{"aws:ResourceTag/" + names.DiscoveryTagKey: {e.cluster}}
		if str("securityGroupId") == "sg-eks-cluster" { // EKS's cluster group carries its own tag
			ctx = map[string][]string{"aws:ResourceTag/aws:eks:cluster-name": {e.cluster}}
		}
		return []iamtest.Request{e.req(action, e.arn("ec2", "security-group/"+str("securityGroupId")), ctx),
			e.req(action, e.arn("ec2", "security-group-rule/*"), nil)}
	case tokens.KMSKey:
		tag := reg.Inputs["tags"].ObjectValue()[names.ClusterTagKey].StringValue()
		if action == "kms:CreateKey" {
			return []iamtest.Request{e.req(action, "*", map[string][]string{"aws:RequestTag/" + names.ClusterTagKey: {tag}})}
		}
		ctx := map[string][]string{"aws:ResourceTag/" + names.ClusterTagKey: {tag}}
		if action == "kms:ScheduleKeyDeletion" {
			ctx["kms:ScheduleKeyDeletionPendingWindowInDays"] = []string{strconv.Itoa(int(reg.Inputs["deletionWindowInDays"].NumberValue()))}
		}
		return []iamtest.Request{e.req(action, e.arn("kms", "key/"+reg.Name+"-0000"), ctx)}
	case tokens.Addon:
		if action == "iam:PassRole" {
			if arn := str("serviceAccountRoleArn"); arn != "" {
				return e.passRole(arn, "eks.amazonaws.com")
			}
			return nil
		}
		return []iamtest.Request{e.req(action, cluster, nil), e.req(action, e.arn("eks", "addon/"+e.cluster+"/"+str("addonName")+"/1a2b3c4d"), nil)}
	case tokens.FargateProfile:
		if action == "iam:PassRole" {
			return e.passRole(str("podExecutionRoleArn"), "eks-fargate-pods.amazonaws.com")
		}
		return []iamtest.Request{e.req(action, cluster, nil), e.req(action, e.arn("eks", "fargateprofile/"+e.cluster+"/"+physical(reg, "fargateProfileName")+"/1a2b3c4d"), nil)}
	case tokens.AccessEntry:
		return []iamtest.Request{e.req(action, cluster, nil), e.req(action, e.arn("eks", "access-entry/"+e.cluster+"/role/"+e.account+"/x/1a2b3c4d"), nil)}
	case tokens.AccessPolicyAssociation:
		return []iamtest.Request{e.req(action, "arn:aws:eks::aws:cluster-access-policy/"+str("policyArn")[strings.LastIndex(str("policyArn"), "/")+1:], nil),
			e.req(action, e.arn("eks", "access-entry/"+e.cluster+"/role/"+e.account+"/x/1a2b3c4d"), nil)}
	case tokens.PodIdentityAssociation:
		if action == "iam:PassRole" {
			return e.passRole(str("roleArn"), "pods.eks.amazonaws.com")
		}
		return []iamtest.Request{e.req(action, cluster, nil), e.req(action, e.arn("eks", "podidentityassociation/"+e.cluster+"/a-1"), nil)}
	case tokens.EKSCluster:
		return e.eksCluster(reg, action)
	case "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/internetGateway:InternetGateway", "aws:ec2/routeTable:RouteTable",
		"aws:ec2/eip:Eip", "aws:ec2/natGateway:NatGateway", "aws:ec2/routeTableAssociation:RouteTableAssociation",
		"aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation", tokens.Route, tokens.VpcEndpoint:
		return e.network(reg, action)
	case tokens.FlowLog:
		if action == "iam:PassRole" {
			return e.passRole(str("iamRoleArn"), "vpc-flow-logs.amazonaws.com")
		}
		return e.network(reg, action)
	case tokens.DefaultSecurityGroup:
		tag := reg.Inputs["tags"].ObjectValue()[names.ClusterTagKey].StringValue()
		group := e.arn("ec2", "security-group/sg-default")
		if action == "ec2:CreateTags" { // AWS made it untagged: the adoption claims it
			return []iamtest.Request{e.req(action, group, map[string][]string{"aws:RequestTag/" + names.ClusterTagKey: {tag}})}
		}
		return []iamtest.Request{e.req(action, group, map[string][]string{"aws:ResourceTag/" + names.ClusterTagKey: {tag}})}
	case tokens.ServiceLinkedRole:
		ctx := map[string][]string{}
		if action == "iam:CreateServiceLinkedRole" {
			ctx["iam:AWSServiceName"] = []string{str("awsServiceName")}
		}
		return []iamtest.Request{e.req(action, e.iam("role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"), ctx)}
	}
	return []iamtest.Request{e.req(action, "unknown:"+reg.Type, nil)}
}

// networkTypes are, for each type of the VPC a stack makes
// (cluster/ownvpc.go), its ARN's resource type and the action that creates
// it.
var networkTypes = map[string][2]string{
	"aws:ec2/vpc:Vpc": {"vpc", "ec2:CreateVpc"}, "aws:ec2/subnet:Subnet": {"subnet", "ec2:CreateSubnet"},
	"aws:ec2/internetGateway:InternetGateway": {"internet-gateway", "ec2:CreateInternetGateway"},
	"aws:ec2/routeTable:RouteTable":           {"route-table", "ec2:CreateRouteTable"},
	"aws:ec2/eip:Eip":                         {"elastic-ip", "ec2:AllocateAddress"},
	"aws:ec2/natGateway:NatGateway":           {"natgateway", "ec2:CreateNatGateway"},
	tokens.VpcEndpoint:                        {"vpc-endpoint", "ec2:CreateVpcEndpoint"},
	tokens.FlowLog:                            {"vpc-flow-log", "ec2:CreateFlowLogs"},
	// A route is an entry of its table.
	tokens.Route: {"route-table", ""},
	// Associations act on what they associate.
	"aws:ec2/routeTableAssociation:RouteTableAssociation":             {"route-table", ""},
	"aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation": {"vpc", ""},
}

// network is the requests of one action on the VPC a stack makes, as
// EC2's service authorization reference lists each action's resources: a
// create names the new resource (tagged in the request) and what it goes
// into (the VPC, a subnet, an address); any other action names resources
// that carry the cluster's tag. Everything the program makes there
// carries names.ClusterTagKey.
func (e *deployRequests) network(reg *mock.Registration, action string) []iamtest.Request {
	kind := networkTypes[reg.Type]
	tag := e.cluster
	if tags, ok := reg.Inputs["tags"]; ok && tags.IsObject() {
		tag = tags.ObjectValue()[names.ClusterTagKey].StringValue()
	}
	own := map[string][]string{"aws:ResourceTag/" + names.ClusterTagKey: {tag}}
	existing := func(res string) iamtest.Request { return e.req(action, e.arn("ec2", res+"/"+reg.Name+"-id"), own) }
	switch {
	case action == kind[1]:
		reqs := []iamtest.Request{e.req(action, e.arn("ec2", kind[0]+"/*"), map[string][]string{"aws:RequestTag/" + names.ClusterTagKey: {tag}})}
		switch kind[0] {
		case "subnet", "route-table", "vpc-flow-log":
			reqs = append(reqs, existing("vpc"))
		case "vpc-endpoint":
			reqs = append(reqs, existing("vpc"), existing("route-table"))
		case "natgateway":
			reqs = append(reqs, existing("subnet"), existing("elastic-ip"))
		}
		return reqs
	case action == "ec2:CreateTags":
		return []iamtest.Request{e.req(action, e.arn("ec2", kind[0]+"/*"), map[string][]string{"ec2:CreateAction": {strings.TrimPrefix(kind[1], "ec2:")}})}
	case action == "ec2:AttachInternetGateway" || action == "ec2:DetachInternetGateway":
		return []iamtest.Request{existing("internet-gateway"), existing("vpc")}
	case action == "ec2:AssociateRouteTable":
		return []iamtest.Request{existing("route-table"), existing("subnet")}
	}
	return []iamtest.Request{existing(kind[0])}
}

// eksCluster is what pulumi-eks's component asks of AWS with the inputs
// the program gives it: the cluster, the program's own service role passed
// to EKS, the IRSA OIDC provider, EKS's service-linked role and the
// Secrets key. It creates no role: the program gives it its own.
func (e *deployRequests) eksCluster(reg *mock.Registration, action string) []iamtest.Request {
	service, _ := e.rec.ByURN(string(reg.Inputs["serviceRole"].ResourceReferenceValue().URN))
	switch action {
	case "iam:CreateRole", "iam:AttachRolePolicy":
		return nil
	case "iam:PassRole":
		return e.passRole(e.iam("role"+rolePath(service)+physical(service, "name")), "eks.amazonaws.com")
	case "iam:CreateOpenIDConnectProvider", "iam:GetOpenIDConnectProvider":
		return []iamtest.Request{e.req(action, e.iam("oidc-provider/oidc.eks."+e.region+".amazonaws.com/id/0123456789ABCDEF"), nil)}
	case "iam:CreateServiceLinkedRole":
		return []iamtest.Request{e.req(action, "*", map[string][]string{"iam:AWSServiceName": {"eks.amazonaws.com"}})}
	case "kms:DescribeKey", "kms:CreateGrant":
		return []iamtest.Request{e.req(action, e.arn("kms", "key/"+e.cluster+"-secrets-0000"), map[string][]string{
			"aws:ResourceTag/" + names.ClusterTagKey: {e.cluster}, "kms:GrantIsForAWSResource": {"true"}})}
	}
	return []iamtest.Request{e.req(action, e.arn("eks", "cluster/"+e.cluster), nil)}
}

// lookup is the request one action of a lookup makes.
func (e *deployRequests) lookup(inv mock.Invocation, action string) iamtest.Request {
	switch inv.Token {
	case "aws:eks/getCluster:getCluster":
		return e.req(action, e.arn("eks", "cluster/"+inv.Args["name"].StringValue()), nil)
	case "aws:ssm/getParametersByPath:getParametersByPath":
		return e.req(action, "arn:aws:ssm:"+e.region+"::parameter"+inv.Args["path"].StringValue(), nil)
	}
	return e.req(action, "*", nil)
}
