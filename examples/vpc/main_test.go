package main

import (
	"path"
	"strings"
	"testing"

	"nodeless-eks/internal/recovery"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const project = "nodeless-eks-vpc"

// run runs the program with Pulumi.dev.yaml and the given changes, in the
// fake account: four availability zones, an address for each Elastic IP.
func run(t *testing.T, set map[string]string) (*mock.Recorder, error) {
	rec, res := fakeaws.RunStackFile(t, project, "dev", "Pulumi.dev.yaml", set, program)
	return rec, res.Err
}

func TestDevVpc(t *testing.T) {
	rec, err := run(t, nil)
	require.NoError(t, err)
	subnets := rec.OfType("aws:ec2/subnet:Subnet")
	require.Len(t, subnets, 9, "three tiers in three zones")

	t.Run("the first three zones by name", func(t *testing.T) {
		zones := map[string]bool{}
		for _, s := range subnets {
			zones[s.Inputs["availabilityZone"].StringValue()] = true
		}
		assert.Equal(t, map[string]bool{"eu-west-1a": true, "eu-west-1b": true, "eu-west-1c": true}, zones)
	})

	t.Run("the pod CIDR is added to the VPC before its subnets", func(t *testing.T) {
		assoc := rec.Get(t, "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation", "eks-demo-vpc-pods")
		assert.Equal(t, "100.64.0.0/16", assoc.Inputs["cidrBlock"].StringValue())
		pods := 0
		for _, s := range subnets {
			if strings.Contains(s.Name, "-podsubnet-") {
				pods++
				rec.RequireDependsOn(t, s, assoc)
			}
		}
		assert.Equal(t, 3, pods, "one pod subnet per zone")
	})

	t.Run("load balancer role tags on public and private subnets, none on pod subnets", func(t *testing.T) {
		for _, s := range subnets {
			tags := s.Inputs["tags"].ObjectValue()
			assert.Equal(t, s.Name, tags["Name"].StringValue())
			assert.Equal(t, "dev", tags["environment"].StringValue(), "stack tags apply")
			_, elb := tags["kubernetes.io/role/elb"]
			_, internal := tags["kubernetes.io/role/internal-elb"]
			assert.Equal(t, strings.Contains(s.Name, "-public-"), elb, "%s", s.Name)
			assert.Equal(t, strings.Contains(s.Name, "-private-"), internal, "%s", s.Name)
		}
	})

	t.Run("private and pod subnets leave through NAT, public ones through the internet gateway", func(t *testing.T) {
		tables := map[string]*mock.Registration{}
		for _, rt := range rec.OfType("aws:ec2/routeTable:RouteTable") {
			tables[rt.Name+"-id"] = rt
		}
		assocs := rec.OfType("aws:ec2/routeTableAssociation:RouteTableAssociation")
		require.Len(t, assocs, 9, "every subnet has a route table")
		for _, a := range assocs {
			rt, ok := tables[a.Inputs["routeTableId"].StringValue()]
			require.True(t, ok, "association %s names no route table", a.Name)
			route := rt.Inputs["routes"].ArrayValue()[0].ObjectValue()
			assert.Equal(t, "0.0.0.0/0", route["cidrBlock"].StringValue())
			if strings.Contains(a.Name, "-public-") {
				assert.Equal(t, "eks-demo-vpc-id", route["gatewayId"].StringValue(), "%s", a.Name)
			} else {
				assert.True(t, strings.HasPrefix(route["natGatewayId"].StringValue(), "eks-demo-vpc-eu-west-1"), "%s: %v", a.Name, route)
			}
		}
	})

	t.Run("one NAT gateway for dev, in a public subnet, after the internet gateway", func(t *testing.T) {
		nats := rec.OfType("aws:ec2/natGateway:NatGateway")
		require.Len(t, nats, 1)
		assert.Equal(t, "eks-demo-vpc-public-eu-west-1a-id", nats[0].Inputs["subnetId"].StringValue())
		igw := rec.Get(t, "aws:ec2/internetGateway:InternetGateway", "eks-demo-vpc")
		rec.RequireDependsOn(t, nats[0], igw)
		// A private subnet's default route goes through the NAT gateway,
		// so it too waits for the internet gateway.
		rec.RequireDependsOn(t, rec.Get(t, "aws:ec2/routeTable:RouteTable", "eks-demo-vpc-private-eu-west-1a"), igw)
	})
}

func TestNatPerZone(t *testing.T) {
	rec, err := run(t, map[string]string{"natGateways": "perAz", "availabilityZones": "2"})
	require.NoError(t, err)
	nats := rec.OfType("aws:ec2/natGateway:NatGateway")
	require.Len(t, nats, 2)
	for _, az := range []string{"eu-west-1a", "eu-west-1b"} {
		rt := rec.Get(t, "aws:ec2/routeTable:RouteTable", "eks-demo-vpc-private-"+az)
		assert.Equal(t, "eks-demo-vpc-"+az+"-id", rt.Inputs["routes"].ArrayValue()[0].ObjectValue()["natGatewayId"].StringValue(),
			"%s's private subnets use their own zone's gateway", az)
	}
}

// TestNamesMatchTheRootDevStack: the root project's dev stack, as shipped,
// finds exactly this VPC's private and pod subnets.
func TestNamesMatchTheRootDevStack(t *testing.T) {
	root, err := stackfile.Load("../../Pulumi.yaml", "../../Pulumi.dev.yaml")
	require.NoError(t, err, "the Pulumi CLI would refuse the root Pulumi.dev.yaml")
	rec, res := fakeaws.RunStackFile(t, project, "dev", "Pulumi.dev.yaml", nil, program)
	require.NoError(t, res.Err)
	rootStackConfig, ok := res.Exports["rootStackConfig"].(map[string]string)
	require.Truef(t, ok, "rootStackConfig is a map of strings, got %T", res.Exports["rootStackConfig"])

	vpc := rec.Get(t, "aws:ec2/vpc:Vpc", "eks-demo-vpc")
	assert.Equal(t, root["nodeless-eks:vpcName"], rootStackConfig["nodeless-eks:vpcName"], "the rootStackConfig output")
	assert.Equal(t, root["nodeless-eks:vpcName"], vpc.Inputs["tags"].ObjectValue()["Name"].StringValue())
	for pattern, tier := range map[string]string{"privateSubnetNamePattern": "-private-", "podSubnetNamePattern": "-podsubnet-"} {
		p := root["nodeless-eks:"+pattern]
		matched := 0
		for _, s := range rec.OfType("aws:ec2/subnet:Subnet") {
			ok, err := path.Match(p, s.Inputs["tags"].ObjectValue()["Name"].StringValue())
			require.NoError(t, err)
			assert.Equalf(t, strings.Contains(s.Name, tier), ok, "root %s %q on %s", pattern, p, s.Name)
			if ok {
				matched++
			}
		}
		assert.Equalf(t, 3, matched, "root %s matches one subnet per zone", pattern)
		assert.Equal(t, p, rootStackConfig["nodeless-eks:"+pattern], "the rootStackConfig output gives the same pattern")
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"cidr not a network", map[string]string{"cidrBlock": "10.0.0.1/16"}, `cidrBlock "10.0.0.1/16": want an IPv4 network`},
		{"pod cidr not a cidr", map[string]string{"podCidrBlock": "100.64.0.0"}, `podCidrBlock "100.64.0.0": want an IPv4 network`},
		{"pod cidr overlapping", map[string]string{"podCidrBlock": "10.0.0.0/17"}, "podCidrBlock 10.0.0.0/17 overlaps cidrBlock 10.0.0.0/16"},
		{"one zone", map[string]string{"availabilityZones": "1"}, `availabilityZones "1": want a whole number from 2 to 6`},
		{"more zones than the region has", map[string]string{"availabilityZones": "5"}, "availabilityZones 5: the region offers 4"},
		{"unknown NAT layout", map[string]string{"natGateways": "none"}, `natGateways "none": want "single"`},
		{"tags not strings", map[string]string{"tags": `{"n":1}`}, "tags: want an object of string values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := run(t, tt.set)
			rec.RequireRefused(t, err, tt.want)
		})
	}
}

// TestNameTaken: a second person's quick start in the same account and
// region gives its VPC the same name. The root stack finds its VPC by
// name, so a name another stack's VPC has is refused before anything is
// created; this stack's own VPC is its own.
func TestNameTaken(t *testing.T) {
	const self = "organization/" + project + "/dev" // the mock engine's organization
	for _, tt := range []struct {
		name, owner string
		refused     string
	}{
		{"another person's stack", "alice/" + project + "/dev", `vpcName "eks-demo-vpc": VPC vpc-other of stack alice/nodeless-eks-vpc/dev has that name in this region already`},
		{"this stack's own, on a second up (on a self-managed backend, said: another's would carry the same tag)", self, ""},
		{"one no stack tagged", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tags := map[string]string{}
			if tt.owner != "" {
				tags["nodeless-eks-vpc/stack"] = tt.owner
			}
			account := &fakeaws.Account{OtherVpcs: []fakeaws.Vpc{{ID: "vpc-other", Name: "eks-demo-vpc", Tags: tags}}}
			rec, res := account.RunStackFile(t, project, "dev", "Pulumi.dev.yaml", nil, program)
			if tt.refused != "" {
				rec.RequireRefused(t, res.Err, tt.refused)
				return
			}
			require.NoError(t, res.Err)
			vpc := rec.Get(t, "aws:ec2/vpc:Vpc", "eks-demo-vpc")
			assert.Equal(t, self, vpc.Inputs["tags"].ObjectValue()["nodeless-eks-vpc/stack"].StringValue(), "the VPC says which stack made it")
		})
	}
}

// TestTypesAreInTheRecoveryInventory: the recovery of an interrupted run
// (cmd/recover-pending) knows every type this program registers.
func TestTypesAreInTheRecoveryInventory(t *testing.T) {
	for _, set := range []map[string]string{nil, {"natGateways": "perAz"}} {
		rec, err := run(t, set)
		require.NoError(t, err)
		for _, reg := range rec.All() {
			assert.Contains(t, recovery.Inventory, reg.Type, "examples/vpc registers %s: add it to internal/recovery's inventory", reg.Type)
		}
	}
}

// TestZonesEKSRefuses: us-east-1's use1-az3 (and two others) hold no EKS
// control plane; the example never puts a private subnet there, whatever
// name the account gives that zone.
func TestZonesEKSRefuses(t *testing.T) {
	kept, dropped := eksZones([]string{"us-east-1c", "us-east-1a", "us-east-1b", "us-east-1d"},
		[]string{"use1-az1", "use1-az3", "use1-az2", "use1-az4"})
	assert.Equal(t, []string{"us-east-1b", "us-east-1c", "us-east-1d"}, kept)
	assert.Equal(t, []string{"us-east-1a (use1-az3)"}, dropped)
	kept, dropped = eksZones([]string{"eu-west-1b", "eu-west-1a"}, nil)
	assert.Equal(t, []string{"eu-west-1a", "eu-west-1b"}, kept, "without IDs nothing is dropped")
	assert.Empty(t, dropped)
}
