package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownVpcStack runs a stack file with set over it, its VPC keys unset, in
// an account whose region holds no VPC of its: the stack makes one.
func ownVpcStack(t *testing.T, stackFile string, set map[string]string) stackRun {
	t.Helper()
	cfg := stackConfig(t, stackFile)
	for _, k := range []string{"vpcName", "privateSubnetNamePattern", "podSubnetNamePattern"} {
		delete(cfg, testProject+":"+k)
	}
	for k, v := range set {
		cfg[testProject+":"+k] = v
	}
	run := runProgram(t, cfg, fakeaws.Vpc{})
	require.NoError(t, run.err)
	return run
}

// TestAStackThatNamesNoVpc: without vpcName the stack makes its VPC in
// the same `pulumi up`: public, private and pod subnets in three zones,
// NAT and routes. The control plane waits for its subnets only; what runs
// pods waits for the routes to NAT as well.
func TestAStackThatNamesNoVpc(t *testing.T) {
	run := ownVpcStack(t, "Pulumi.dev.yaml", nil)
	rec := run.rec
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	vpc := rec.Get(t, tokens.Vpc, "eks-demo-vpc")
	subnet := func(tier, az string) *mock.Registration { return rec.Get(t, tokens.Subnet, "eks-demo-"+tier+"-"+az) }

	t.Run("a public, a private and a pod subnet in each of three zones, tagged for the LB controller", func(t *testing.T) {
		assert.Len(t, rec.OfType(tokens.Subnet), 9)
		for _, az := range zones {
			for tier, role := range map[string]string{"public": "kubernetes.io/role/elb", "private": "kubernetes.io/role/internal-elb", "pods": ""} {
				s := subnet(tier, az)
				tags := s.Inputs["tags"].ObjectValue()
				assert.Equal(t, "eks-demo-"+tier+"-"+az, tags["Name"].StringValue())
				assert.Equal(t, "eks-demo", tags[names.ClusterTagKey].StringValue(), "the stack's own, by its cluster's tag")
				assert.Equal(t, "dev", tags["environment"].StringValue(), "the stack's tags")
				if role != "" {
					assert.Equal(t, "1", tags[resource.PropertyKey(role)].StringValue(), "%s: the LB controller's subnet discovery", s.Name)
				}
				assert.Equal(t, az, s.Inputs["availabilityZone"].StringValue())
			}
			assert.Truef(t, strings.HasPrefix(subnet("pods", az).Inputs["cidrBlock"].StringValue(), "100.64."), "pod subnets come from the secondary CIDR")
			rec.RequireDependsOn(t, subnet("pods", az), rec.Get(t, tokens.VpcCidrAssociation, "eks-demo-pod-cidr"))
		}
		assert.Equal(t, "10.0.0.0/16", vpc.Inputs["cidrBlock"].StringValue())
		assert.Equal(t, true, vpc.Inputs["enableDnsHostnames"].V, "EKS needs DNS hostnames")
		assert.Equal(t, "100.64.0.0/16", rec.Get(t, tokens.VpcCidrAssociation, "eks-demo-pod-cidr").Inputs["cidrBlock"].StringValue())
	})

	t.Run("one NAT gateway on a non-production stack, every private route through it", func(t *testing.T) {
		require.Len(t, rec.OfType(tokens.NatGateway), 1)
		require.Len(t, rec.OfType(tokens.Eip), 1)
		nat := rec.OfType(tokens.NatGateway)[0]
		rec.RequireDependsOn(t, nat, subnet("public", "eu-west-1a"))
		rec.RequireDependsOn(t, nat, rec.Get(t, tokens.InternetGateway, "eks-demo-igw"))
		for _, az := range zones {
			routes := rec.Get(t, tokens.RouteTable, "eks-demo-private-"+az)
			route := rec.Get(t, tokens.Route, "eks-demo-private-"+az+"-default")
			rec.RequireDependsOn(t, route, nat)
			rec.RequireDependsOn(t, route, routes)
			assert.Equal(t, "0.0.0.0/0", route.Inputs["destinationCidrBlock"].StringValue())
			assert.NotContains(t, routes.Inputs, resource.PropertyKey("routes"), "the table owns no route: another team's stays")
			assert.Empty(t, route.ImportID, "a new table's route is created")
			for _, tier := range []string{"private", "pods"} {
				assoc := rec.Get(t, tokens.RouteTableAssociation, "eks-demo-"+tier+"-"+az)
				rec.RequireDependsOn(t, assoc, routes)
				rec.RequireDependsOn(t, assoc, subnet(tier, az))
			}
			rec.RequireDependsOn(t, rec.Get(t, tokens.RouteTableAssociation, "eks-demo-public-"+az), rec.Get(t, tokens.RouteTable, "eks-demo-public"))
		}
	})

	// The pod subnets too: the sweep of what the VPC CNI leaves in them runs
	// after the cluster is deleted and before they are, so the cluster
	// waits for them (seconds, beside its own 13 to 16 minutes).
	t.Run("the control plane waits for the subnets, not for NAT or routes", func(t *testing.T) {
		eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
		var private []string
		for _, az := range zones {
			rec.RequireDependsOn(t, eks, subnet("private", az))
			private = append(private, "subnet-eks-demo-private-"+az)
		}
		assert.Equal(t, private, stringsOf(t, eks.Inputs["privateSubnetIds"]))
		for _, typ := range []string{tokens.NatGateway, tokens.RouteTable, tokens.Route, tokens.RouteTableAssociation, tokens.Eip, tokens.InternetGateway,
			tokens.VpcEndpoint, tokens.DefaultSecurityGroup} {
			for _, reg := range rec.OfType(typ) {
				rec.RequireNotDependsOn(t, eks, reg)
			}
		}
	})

	t.Run("the controller's pods wait for the private routes: they pull from public ECR", func(t *testing.T) {
		release := rec.Get(t, tokens.HelmRelease, karpenterName+"-controller")
		for _, az := range zones {
			rec.RequireDependsOn(t, release, rec.Get(t, tokens.RouteTable, "eks-demo-private-"+az))
			rec.RequireDependsOn(t, release, rec.Get(t, tokens.Route, "eks-demo-private-"+az+"-default"))
			rec.RequireDependsOn(t, release, rec.Get(t, tokens.RouteTableAssociation, "eks-demo-private-"+az))
			rec.RequireDependsOn(t, release, rec.Get(t, tokens.RouteTableAssociation, "eks-demo-pods-"+az))
		}
		rec.RequireNotDependsOn(t, rec.Get(t, tokens.HelmRelease, karpenterName+"-crd"), rec.OfType(tokens.NatGateway)[0])
	})

	t.Run("custom networking and the nodes use the subnets it made", func(t *testing.T) {
		var cni struct {
			EniConfig struct {
				Subnets map[string]struct{ ID string }
			}
		}
		raw := rec.Get(t, tokens.Addon, "eks-demo-vpc-cni").Inputs["configurationValues"].StringValue()
		require.NoError(t, json.Unmarshal([]byte(raw), &cni))
		for _, az := range zones {
			assert.Equal(t, "subnet-eks-demo-pods-"+az, cni.EniConfig.Subnets[az].ID)
		}
		class := rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-default")
		var ids []string
		for _, term := range class.Inputs["spec"].ObjectValue()["subnetSelectorTerms"].ArrayValue() {
			ids = append(ids, term.ObjectValue()["id"].StringValue())
		}
		assert.Equal(t, []string{"subnet-eks-demo-private-eu-west-1a", "subnet-eks-demo-private-eu-west-1b", "subnet-eks-demo-private-eu-west-1c"}, ids)
		assert.Equal(t, "vpc-eks-demo-vpc", run.exports["vpcId"])
	})

	t.Run("destroy removes the VPC last: after the cleanup, the cluster and the sweep of what they left", func(t *testing.T) {
		cleanup := rec.Get(t, tokens.Command, "eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes")
		sweep := rec.Get(t, tokens.Command, "eks-demo-destroy-sweep-of-vpc-leftovers")
		eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
		env := sweep.Inputs["environment"].ObjectValue()
		assert.Equal(t, "network", env["NODELESS_EKS_CLEANUP_PHASE"].StringValue())
		assert.Equal(t, "arn:aws:ec2:eu-west-1:"+testAccount+":vpc/vpc-eks-demo-vpc", env["NODELESS_EKS_VPC_ARN"].StringValue())
		assert.Equal(t, "sg-eks-demo-node", env["NODELESS_EKS_NODE_SECURITY_GROUP"].StringValue())
		assert.Equal(t, "eks-demo", env["NODELESS_EKS_CLUSTER_NAME"].StringValue())
		assert.Equal(t, "18m0s", sweep.DeleteTimeout, "the audit's settle, the sweep's 15-minute bound and the build")
		assert.NotContains(t, env, resource.PropertyKey("NODELESS_EKS_AUDIT_ONLY"), "it sweeps")
		assert.Empty(t, sweep.Inputs["create"], "it does nothing on `pulumi up`")

		order := topologicalOrder(t, rec)
		position := map[string]int{}
		for i, r := range order {
			position[r.URN] = len(order) - 1 - i // destroy position
		}
		before := func(a, b *mock.Registration) {
			rec.RequireDependsOn(t, a, b)
			assert.Less(t, position[a.URN], position[b.URN], "destroy removes %s before %s", a.Name, b.Name)
		}
		before(cleanup, eks)
		before(eks, sweep)
		before(sweep, rec.Get(t, tokens.SecurityGroup, "eks-demo-node"))
		before(rec.Get(t, tokens.SecurityGroup, "eks-demo-node"), vpc)
		for _, reg := range rec.OfType(tokens.Subnet) {
			before(sweep, reg)
			before(reg, vpc)
		}
		for _, typ := range []string{tokens.NatGateway, tokens.RouteTable} {
			rec.RequireNotDependsOn(t, sweep, rec.OfType(typ)[0])
		}
		rec.RequireDependsOn(t, rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter"), eks)
	})

	t.Run("the sweep holds up nothing on `pulumi up`: the bootstrap is as long as in a VPC looked up, plus the VPC", func(t *testing.T) {
		named := runDevStack(t).rec
		network := func(r *mock.Registration) bool {
			return slices.Contains([]string{tokens.Vpc, tokens.Subnet, tokens.VpcCidrAssociation, tokens.InternetGateway, tokens.RouteTable,
				tokens.RouteTableAssociation, tokens.Eip, tokens.NatGateway}, r.Type)
		}
		assert.Equal(t, longestCreateChain(named, func(*mock.Registration) bool { return false }),
			longestCreateChain(rec, network), "without the network's own resources, the chain is the named VPC's")
	})
}

// TestAStackThatNamesItsVpcAuditsAWSAfterTheCluster: a stack in a VPC it
// did not make sweeps nothing there, and its destroy still audits AWS for
// what the cluster's controllers left, once the cluster is deleted.
func TestAStackThatNamesItsVpcAuditsAWSAfterTheCluster(t *testing.T) {
	run := runProgram(t, stackConfig(t, "Pulumi.dev.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	rec := run.rec
	audit := rec.Get(t, tokens.Command, "eks-demo-destroy-audit-of-aws-leftovers")
	_, swept := rec.Find(tokens.Command, "eks-demo-destroy-sweep-of-vpc-leftovers")
	assert.False(t, swept, "no sweep of a VPC the stack did not make")
	env := audit.Inputs["environment"].ObjectValue()
	assert.Equal(t, "network", env["NODELESS_EKS_CLEANUP_PHASE"].StringValue())
	assert.Equal(t, "true", env["NODELESS_EKS_AUDIT_ONLY"].StringValue())
	assert.Regexp(t, `^arn:aws:ec2:eu-west-1:\d{12}:vpc/vpc-`, env["NODELESS_EKS_VPC_ARN"].StringValue(), "the named VPC's ARN: its account and region")
	assert.Equal(t, "eks-demo", env["NODELESS_EKS_CLUSTER_NAME"].StringValue())
	assert.Empty(t, audit.Inputs["create"], "it does nothing on `pulumi up`")
	rec.RequireDependsOn(t, rec.Get(t, tokens.EKSCluster, "eks-demo"), audit)
}

// TestTheAuditReachesAWSAsTheProviderDoes: one row per setting of
// pulumi-aws v6 that decides how it reaches AWS (awscli.CredentialKeys,
// each field of its role), for a stack that makes its VPC and one that
// names it: the command the destroy runs gets them whole (profile, role
// with every field, CA bundle, proxies, endpoint variants), and a setting
// the AWS CLI cannot be given is refused before anything is registered,
// naming its key.
func TestTheAuditReachesAWSAsTheProviderDoes(t *testing.T) {
	ownVpc := func(key, value string) map[string]string {
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		for _, k := range []string{"vpcName", "privateSubnetNamePattern", "podSubnetNamePattern"} {
			delete(cfg, testProject+":"+k)
		}
		cfg[key] = value
		return cfg
	}
	namedVpc := func(key, value string) map[string]string {
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		cfg[key] = value
		return cfg
	}
	const a = "arn:aws:iam::123456789012:role/a"
	rows := []struct{ key, value, access, refused string }{
		{key: "aws:profile", value: "sandbox", access: `{"profile":"sandbox"}`},
		{key: "aws:assumeRole", value: `{"roleArn":"` + a + `","externalId":"x","sessionName":"ci","duration":"1h","policy":"{}",` +
			`"policyArns":["arn:aws:iam::aws:policy/ReadOnlyAccess"],"tags":{"team":"platform"},"transitiveTagKeys":["team"],"sourceIdentity":"alice"}`,
			access: `{"role":{"roleArn":"` + a + `","externalId":"x","sessionName":"ci","duration":"1h","policy":"{}",` +
				`"policyArns":["arn:aws:iam::aws:policy/ReadOnlyAccess"],"tags":{"team":"platform"},"transitiveTagKeys":["team"],"sourceIdentity":"alice"}}`},
		{key: "aws:customCaBundle", value: "/etc/ca.pem", access: `{"env":{"AWS_CA_BUNDLE":"/etc/ca.pem"}}`},
		{key: "aws:httpProxy", value: "http://proxy:3128", access: `{"env":{"HTTP_PROXY":"http://proxy:3128"}}`},
		{key: "aws:httpsProxy", value: "http://proxy:3128", access: `{"env":{"HTTPS_PROXY":"http://proxy:3128"}}`},
		{key: "aws:noProxy", value: "169.254.169.254", access: `{"env":{"NO_PROXY":"169.254.169.254"}}`},
		{key: "aws:useFipsEndpoint", value: "true", access: `{"env":{"AWS_USE_FIPS_ENDPOINT":"true"}}`},
		{key: "aws:useDualstackEndpoint", value: "true", access: `{"env":{"AWS_USE_DUALSTACK_ENDPOINT":"true"}}`},
		{key: "aws:endpoints", value: `[{"sts":"http://localhost:4566"}]`, refused: "aws:endpoints is set, which the AWS CLI"},
		{key: "aws:assumeRole", value: `{"roleArn":"` + a + `","duration":"an hour"}`, refused: `aws:assumeRole: duration "an hour" is not a duration`},
		{key: "aws:accessKey", value: "AKIA", refused: "aws:accessKey is set, which the AWS CLI"},
		{key: "aws:secretKey", value: "s", refused: "aws:secretKey is set"},
		{key: "aws:token", value: "t", refused: "aws:token is set"},
		{key: "aws:sharedCredentialsFiles", value: `["/x"]`, refused: "aws:sharedCredentialsFiles is set"},
		{key: "aws:sharedConfigFiles", value: `["/x"]`, refused: "aws:sharedConfigFiles is set"},
		{key: "aws:assumeRoleWithWebIdentity", value: `{"roleArn":"` + a + `"}`, refused: "aws:assumeRoleWithWebIdentity is set"},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		covered[strings.TrimPrefix(row.key, "aws:")] = true
		for vpc, cfg := range map[string]func(string, string) map[string]string{"own VPC": ownVpc, "named VPC": namedVpc} {
			t.Run(row.key+", "+vpc, func(t *testing.T) {
				run := runProgram(t, cfg(row.key, row.value), fakeaws.DevVpc())
				if row.refused != "" {
					require.Error(t, run.err)
					assert.Contains(t, run.err.Error(), row.refused)
					assert.Empty(t, programRegistrations(run.rec), "nothing registered")
					return
				}
				require.NoError(t, run.err)
				var found bool
				for _, reg := range run.rec.OfType(tokens.Command) {
					if env := reg.Inputs["environment"].ObjectValue(); env["NODELESS_EKS_CLEANUP_PHASE"].IsString() &&
						env["NODELESS_EKS_CLEANUP_PHASE"].StringValue() == "network" {
						found = true
						assert.JSONEq(t, row.access, env["NODELESS_EKS_AWS_ACCESS"].StringValue())
					}
				}
				assert.True(t, found, "the network phase's command")
			})
		}
	}
	for _, key := range awscli.CredentialKeys() {
		assert.True(t, covered[key], "a row for %s", key)
	}
}

// TestAProductionStackThatNamesNoVpc: a NAT gateway per zone, and every
// resource of the VPC protected, so that a destroy of a production stack
// deletes no route or gateway while it stops at the protected cluster.
func TestAProductionStackThatNamesNoVpc(t *testing.T) {
	rec := ownVpcStack(t, "testdata/stack-multipool.yaml", map[string]string{"argocd": "true"}).rec
	assert.Len(t, rec.OfType(tokens.NatGateway), 3, "one per zone")
	for _, az := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"} {
		rec.RequireDependsOn(t, rec.Get(t, tokens.Route, "eks-prod-private-"+az+"-default"), rec.Get(t, tokens.NatGateway, "eks-prod-nat-"+az))
	}
	for _, typ := range []string{tokens.Vpc, tokens.Subnet, tokens.InternetGateway, tokens.RouteTable, tokens.Route, tokens.RouteTableAssociation,
		tokens.NatGateway, tokens.Eip, tokens.VpcCidrAssociation, tokens.VpcEndpoint, tokens.DefaultSecurityGroup, tokens.FlowLog} {
		for _, reg := range rec.OfType(typ) {
			assert.True(t, reg.Protect, "%s %s is protected", typ, reg.Name)
		}
	}
	assert.Empty(t, deletedBeforeProtection(rec), "a destroy of a production stack deletes nothing of its network either")
}

// stringsOf is a property that holds a list of strings.
func stringsOf(t *testing.T, v resource.PropertyValue) []string {
	t.Helper()
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	require.True(t, v.IsArray(), "want a list, got %v", v)
	var out []string
	for _, e := range v.ArrayValue() {
		out = append(out, e.StringValue())
	}
	return out
}

// TestTheFargateSettleWaitsOnlyForANewCluster: a new cluster's Fargate
// profile is created at once, and the Karpenter controller's release is
// registered only the settle after the profile's ID resolves (eksctl waits
// after a new profile is ACTIVE, before it schedules pods on it:
// eksctl-io/eksctl#8357); an existing cluster's release and a preview's
// wait for nothing.
func TestTheFargateSettleWaitsOnlyForANewCluster(t *testing.T) {
	defer func(d time.Duration) { fargateSettle = d }(fargateSettle)
	fargateSettle = 3 * time.Second
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	// registered runs a stack and says when each of these was registered.
	registered := func(t *testing.T, rec *mock.Recorder, preview bool, keys ...string) map[string]time.Time {
		var mu sync.Mutex
		at := map[string]time.Time{}
		state := rec.State
		rec.State = func(reg *mock.Registration) (string, resource.PropertyMap, error) {
			mu.Lock()
			at[reg.Type+"::"+reg.Name] = time.Now()
			mu.Unlock()
			return state(reg)
		}
		require.NoError(t, runStack(t, cfg, rec, preview).err)
		for _, k := range keys {
			require.Contains(t, at, k)
		}
		return at
	}
	eks, profile, release := "eks:index:Cluster::eks-demo", tokens.FargateProfile+"::eks-demo-karpenter",
		tokens.HelmRelease+"::"+karpenterName+"-controller"
	acct := func() *fakeaws.Account {
		return &fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}
	}

	at := registered(t, newRecorder(acct()), false, eks, profile, release)
	assert.Less(t, at[profile].Sub(at[eks]), fargateSettle, "a new profile is created as soon as its cluster is ACTIVE")
	assert.GreaterOrEqual(t, at[release].Sub(at[profile]), fargateSettle, "the controller's release waits the settle after the profile")

	existing := acct()
	existing.RunningVersion = "1.36"
	at = registered(t, newRecorder(existing), false, profile, release)
	assert.Less(t, at[release].Sub(at[profile]), fargateSettle, "an existing cluster's release does not wait")
	at = registered(t, newRecorder(acct()), true, profile, release)
	assert.Less(t, at[release].Sub(at[profile]), fargateSettle, "a preview never waits")
}

// TestTheVpcASecurityReviewExpects: a production stack's own VPC logs its
// traffic (Security Hub EC2.6) to a log group of its own, kept
// logRetentionDays, through a role only VPC Flow Logs of its account may
// assume, with the stack's IAM path and boundary; every own VPC holds its
// default security group empty (EC2.2) and routes S3 through a gateway
// endpoint on its private tables; each key turns its part off, and a
// non-production stack logs nothing.
func TestTheVpcASecurityReviewExpects(t *testing.T) {
	rec := ownVpcStack(t, "testdata/stack-multipool.yaml", map[string]string{"iamPermissionsBoundary": "arn:aws:iam::123456789012:policy/b",
		"logRetentionDays": "30"}).rec
	flow := rec.Get(t, tokens.FlowLog, "eks-prod")
	group := rec.Get(t, tokens.LogGroup, "eks-prod-flow-logs")
	assert.Equal(t, "ALL", flow.Inputs["trafficType"].StringValue())
	assert.Equal(t, "cloud-watch-logs", flow.Inputs["logDestinationType"].StringValue())
	assert.Equal(t, "/aws/vpc-flow-logs/eks-prod", group.Inputs["name"].StringValue())
	assert.Equal(t, 30.0, group.Inputs["retentionInDays"].NumberValue())
	role := rec.Get(t, tokens.Role, "eks-prod-flow-logs")
	assert.Equal(t, "arn:aws:iam::123456789012:policy/b", role.Inputs["permissionsBoundary"].StringValue())
	var trust struct {
		Statement []struct {
			Principal struct{ Service string }
			Condition map[string]map[string]string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(role.Inputs["assumeRolePolicy"].StringValue()), &trust))
	assert.Equal(t, "vpc-flow-logs.amazonaws.com", trust.Statement[0].Principal.Service)
	assert.Equal(t, fakeaws.AccountID, trust.Statement[0].Condition["StringEquals"]["aws:SourceAccount"])
	assert.Equal(t, "arn:aws:ec2:eu-west-1:"+fakeaws.AccountID+":vpc-flow-log/*", trust.Statement[0].Condition["ArnLike"]["aws:SourceArn"])
	policy := rec.Get(t, tokens.Policy, "eks-prod-flow-logs").Inputs["policy"].StringValue()
	assert.Contains(t, policy, `"arn:aws:logs:eu-west-1:`+fakeaws.AccountID+`:log-group:/aws/vpc-flow-logs/eks-prod:*"`, "its own group alone")
	rec.RequireDependsOn(t, flow, rec.Get(t, tokens.RolePolicyAttachment, "eks-prod-flow-logs"))

	endpoint := rec.Get(t, tokens.VpcEndpoint, "eks-prod-s3")
	assert.Equal(t, "com.amazonaws.eu-west-1.s3", endpoint.Inputs["serviceName"].StringValue())
	assert.Equal(t, "Gateway", endpoint.Inputs["vpcEndpointType"].StringValue())
	for _, az := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"} {
		rec.RequireDependsOn(t, endpoint, rec.Get(t, tokens.RouteTable, "eks-prod-private-"+az))
	}
	assert.Len(t, endpoint.Inputs["routeTableIds"].ArrayValue(), 3, "the private tables, not the public one")
	defaultGroup := rec.Get(t, tokens.DefaultSecurityGroup, "eks-prod-default")
	for _, k := range []resource.PropertyKey{"ingress", "egress"} {
		require.True(t, defaultGroup.Inputs[k].IsArray(), "%s is given, so that a rule added later is removed", k)
		assert.Empty(t, defaultGroup.Inputs[k].ArrayValue())
	}

	off := ownVpcStack(t, "testdata/stack-multipool.yaml", map[string]string{"vpcFlowLogs": "false", "vpcS3Endpoint": "false",
		"vpcEmptyDefaultSecurityGroup": "false"}).rec
	for _, typ := range []string{tokens.FlowLog, tokens.VpcEndpoint, tokens.DefaultSecurityGroup} {
		assert.Empty(t, off.OfType(typ), "%s turned off", typ)
	}
	dev := ownVpcStack(t, "Pulumi.dev.yaml", nil).rec
	assert.Empty(t, dev.OfType(tokens.FlowLog), "a non-production stack logs no traffic")
	assert.Len(t, dev.OfType(tokens.VpcEndpoint), 1)
	assert.Len(t, dev.OfType(tokens.DefaultSecurityGroup), 1)
}

// TestRoutesMoveOutOfTheirTables: a stack whose VPC an earlier version
// made holds its default routes inline in its route tables. The next `up`
// adopts each as a Route by import, with the table's ID as the preflight
// read it (no table replaced, no moment without the route), and marks the
// table only once the import is done; a marked table's route is a Route
// already, and is left to the state; a table that lost its default route
// has none to adopt, and gets a new one.
func TestRoutesMoveOutOfTheirTables(t *testing.T) {
	earlier := func(marked bool) fakeaws.Vpc {
		v := fakeaws.Vpc{ID: "vpc-own", Name: "eks-demo-vpc", Tags: map[string]string{names.ClusterTagKey: "eks-demo"}, RouteTables: map[string]fakeaws.RouteTable{}}
		for i, az := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"} {
			v.Subnets = append(v.Subnets, fakeaws.Subnet{ID: "subnet-" + az, AZ: az, Name: "eks-demo-private-" + az})
			tags := map[string]string{"Name": "eks-demo-private-" + az, names.ClusterTagKey: "eks-demo"}
			if marked {
				tags["nodeless-eks/routes"] = "separate"
			}
			v.RouteTables[fmt.Sprintf("rtb-%d", i)] = fakeaws.RouteTable{Tags: tags, Routes: []string{"10.0.0.0/16", "0.0.0.0/0"}}
		}
		// Someone deleted the public table's default route.
		v.RouteTables["rtb-public"] = fakeaws.RouteTable{Tags: map[string]string{"Name": "eks-demo-public", names.ClusterTagKey: "eks-demo"},
			Routes: []string{"10.0.0.0/16"}}
		return v
	}
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	for _, k := range []string{"vpcName", "privateSubnetNamePattern", "podSubnetNamePattern"} {
		delete(cfg, testProject+":"+k)
	}
	run := func(v fakeaws.Vpc) *mock.Recorder {
		acct := &fakeaws.Account{ClusterName: "eks-demo", OtherVpcs: []fakeaws.Vpc{v}}
		r := runStack(t, cfg, newRecorder(acct), false)
		require.NoError(t, r.err)
		return r.rec
	}

	rec := run(earlier(false))
	route := rec.Get(t, tokens.Route, "eks-demo-private-eu-west-1a-default")
	assert.Equal(t, "rtb-0_0.0.0.0/0", route.ImportID, "ROUTETABLEID_DESTINATION (pulumi-aws ec2.Route)")
	assert.Equal(t, "rtb-0", route.Inputs["routeTableId"].StringValue(), "the table's ID as read, so the route waits for no table update")
	table := rec.Get(t, tokens.RouteTable, "eks-demo-private-eu-west-1a")
	assert.NotContains(t, table.Inputs, resource.PropertyKey("routes"))
	rec.RequireDependsOn(t, table, route) // its mark, once the route is adopted
	public := rec.Get(t, tokens.Route, "eks-demo-public-default")
	assert.Empty(t, public.ImportID, "no default route to adopt: importing one would fail every `up`")
	rec.RequireDependsOn(t, public, rec.Get(t, tokens.RouteTable, "eks-demo-public"))

	rec = run(earlier(true))
	route = rec.Get(t, tokens.Route, "eks-demo-private-eu-west-1a-default")
	assert.Empty(t, route.ImportID, "a Route already: the state holds it")
	rec.RequireDependsOn(t, route, rec.Get(t, tokens.RouteTable, "eks-demo-private-eu-west-1a"))
}
