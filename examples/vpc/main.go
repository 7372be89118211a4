// Command vpc creates the VPC that the nodeless-eks program expects, for
// people who have none: private subnets with NAT egress and a pod subnet
// from a secondary CIDR in each of N availability zones, public subnets for
// internet-facing load balancers, and Name tags that the root stack's
// patterns match. Its outputs say what to put in the root stack.
package main

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(program)
}

// NAT gateway layouts.
const (
	natSingle = "single" // one gateway for every zone: cheap, one zone's outage cuts egress
	natPerAz  = "perAz"  // one per zone: what a production VPC wants
)

// settings is the stack configuration.
type settings struct {
	VpcName           string
	Primary, Pods     netip.Prefix
	AvailabilityZones int
	NatGateways       string
	Tags              map[string]string
}

func loadSettings(ctx *pulumi.Context) (*settings, error) {
	cfg := config.New(ctx, "")
	s := &settings{
		VpcName:     stringOr(cfg.Get("vpcName"), "eks-demo-vpc"),
		NatGateways: stringOr(cfg.Get("natGateways"), natSingle),
		Tags:        map[string]string{},
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var err error
	primary, pods := stringOr(cfg.Get("cidrBlock"), "10.0.0.0/16"), stringOr(cfg.Get("podCidrBlock"), "100.64.0.0/16")
	if s.Primary, err = netip.ParsePrefix(primary); err != nil || !s.Primary.Addr().Is4() || s.Primary.Masked() != s.Primary {
		bad("cidrBlock %q: want an IPv4 network such as \"10.0.0.0/16\"", primary)
	}
	if s.Pods, err = netip.ParsePrefix(pods); err != nil || !s.Pods.Addr().Is4() || s.Pods.Masked() != s.Pods {
		bad("podCidrBlock %q: want an IPv4 network such as \"100.64.0.0/16\"", pods)
	}
	s.AvailabilityZones = 3
	if raw := cfg.Get("availabilityZones"); raw != "" {
		if s.AvailabilityZones, err = strconv.Atoi(raw); err != nil || s.AvailabilityZones < 2 || s.AvailabilityZones > maxAZs {
			bad("availabilityZones %q: want a whole number from 2 to %d (EKS needs two zones)", raw, maxAZs)
		}
	}
	if s.NatGateways != natSingle && s.NatGateways != natPerAz {
		bad("natGateways %q: want %q (one gateway, for dev) or %q (one per zone)", s.NatGateways, natSingle, natPerAz)
	}
	if raw := cfg.Get("tags"); raw != "" {
		if err := cfg.TryObject("tags", &s.Tags); err != nil {
			bad("tags: want an object of string values: %v", err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return s, nil
}

func program(ctx *pulumi.Context) error {
	s, err := loadSettings(ctx)
	if err != nil {
		return err
	}
	zones, err := aws.GetAvailabilityZones(ctx, &aws.GetAvailabilityZonesArgs{
		State: pulumi.StringRef("available"),
		// Zones an account must opt in to (Local Zones) cannot hold EKS.
		Filters: []aws.GetAvailabilityZonesFilter{{Name: "opt-in-status", Values: []string{"opt-in-not-required"}}},
	})
	if err != nil {
		return fmt.Errorf("listing availability zones: %w", err)
	}
	names, dropped := eksZones(zones.Names, zones.ZoneIds)
	if len(names) < s.AvailabilityZones {
		return fmt.Errorf("availabilityZones %d: the region offers %d that EKS accepts for control-plane subnets (%v; not %v)",
			s.AvailabilityZones, len(names), names, dropped)
	}
	plan, err := Plan(s.VpcName, s.Primary, s.Pods, names[:s.AvailabilityZones])
	if err != nil {
		return err
	}
	if err := checkNameIsFree(ctx, s.VpcName); err != nil {
		return err
	}
	return newVpc(ctx, s, plan)
}

// eksUnsupportedZoneIDs are the zones where EKS creates no control plane:
// use1-az3 (us-east-1), usw1-az2 (us-west-1) and cac1-az3 (ca-central-1),
// as the EKS user guide lists them (cluster creation, subnet requirements).
// Zone names map to IDs per account, so the IDs decide.
var eksUnsupportedZoneIDs = []string{"use1-az3", "usw1-az2", "cac1-az3"}

// eksZones are the zone names, sorted, less those whose ID EKS refuses
// (dropped, as "name (id)"). ids are the zone IDs in the order of names,
// as GetAvailabilityZones returns them; without them no zone is dropped.
func eksZones(names, ids []string) (kept, dropped []string) {
	for i, name := range names {
		if i < len(ids) && len(ids) == len(names) && slices.Contains(eksUnsupportedZoneIDs, ids[i]) {
			dropped = append(dropped, name+" ("+ids[i]+")")
			continue
		}
		kept = append(kept, name)
	}
	slices.Sort(kept)
	return kept, dropped
}

// stackTagKey marks the VPC with the stack that created it, so that a
// second stack (another person's quick start) can tell its name is taken.
const stackTagKey = "nodeless-eks-vpc/stack"

// selfManagedOrganization is the organization every stack of a
// self-managed (DIY) backend is in (pulumi/pulumi pkg/backend/diy:
// FullyQualifiedName, "organization/<project>/<stack>").
const selfManagedOrganization = "organization"

// ownStack is the stack's fully qualified name, the value of stackTagKey.
func ownStack(ctx *pulumi.Context) string {
	return ctx.Organization() + "/" + ctx.Project() + "/" + ctx.Stack()
}

// checkNameIsFree refuses a vpcName that a VPC of another stack already
// has in the region: the root stack finds its VPC by that name, and two
// would make its lookup fail as ambiguous. A VPC of that name without the
// tag (made by hand, or by an earlier version of this program, which did
// not tag) is said, not refused: it may be this stack's own.
func checkNameIsFree(ctx *pulumi.Context, name string) error {
	found, err := ec2.GetVpcs(ctx, &ec2.GetVpcsArgs{Filters: []ec2.GetVpcsFilter{{Name: "tag:Name", Values: []string{name}}}})
	if err != nil {
		return fmt.Errorf("looking for VPCs named %q: %w", name, err)
	}
	for _, id := range found.Ids {
		v, err := ec2.LookupVpc(ctx, &ec2.LookupVpcArgs{Id: pulumi.StringRef(id)})
		if err != nil {
			return fmt.Errorf("reading VPC %s: %w", id, err)
		}
		switch owner := v.Tags[stackTagKey]; {
		case owner == ownStack(ctx) && ctx.Organization() == selfManagedOrganization:
			// Every self-managed backend names its stacks so: another
			// person's stack of the same name carries the same tag.
			if err := ctx.Log.Warn(fmt.Sprintf("VPC %s is already named %q and tagged %s=%s, which a stack of this name on any "+
				"self-managed backend writes: if it is not this stack's own, the root stack's lookup by name will find two; "+
				"choose another vpcName", id, name, stackTagKey, owner), nil); err != nil {
				return err
			}
		case owner == ownStack(ctx):
		case owner == "":
			if err := ctx.Log.Warn(fmt.Sprintf("VPC %s is already named %q and no stack of this project tagged it: if it is not this "+
				"stack's own (made by an earlier version), the root stack's lookup by name will find two; choose another vpcName", id, name), nil); err != nil {
				return err
			}
		default:
			return fmt.Errorf("vpcName %q: VPC %s of stack %s has that name in this region already, and the root stack finds its VPC "+
				"by name: choose another vpcName, and set the root stack's vpcName and subnet patterns to match (README, Quick start)", name, id, owner)
		}
	}
	return nil
}

// newVpc creates the VPC, its subnets, gateways and routes from a plan.
func newVpc(ctx *pulumi.Context, s *settings, plan []Subnet) error {
	tags := func(extra map[string]string) pulumi.StringMap {
		m := pulumi.StringMap{}
		for k, v := range s.Tags {
			m[k] = pulumi.String(v)
		}
		for k, v := range extra {
			m[k] = pulumi.String(v)
		}
		return m
	}
	vpc, err := ec2.NewVpc(ctx, s.VpcName, &ec2.VpcArgs{
		CidrBlock: pulumi.String(s.Primary.String()),
		// EKS and the VPC endpoints of its nodes need private DNS names.
		EnableDnsHostnames: pulumi.Bool(true),
		EnableDnsSupport:   pulumi.Bool(true),
		Tags:               tags(map[string]string{"Name": s.VpcName, stackTagKey: ownStack(ctx)}),
	})
	if err != nil {
		return fmt.Errorf("creating VPC: %w", err)
	}
	podCidr, err := ec2.NewVpcIpv4CidrBlockAssociation(ctx, s.VpcName+"-pods", &ec2.VpcIpv4CidrBlockAssociationArgs{
		VpcId:     vpc.ID(),
		CidrBlock: pulumi.String(s.Pods.String()),
	})
	if err != nil {
		return fmt.Errorf("adding the pod CIDR: %w", err)
	}
	igw, err := ec2.NewInternetGateway(ctx, s.VpcName, &ec2.InternetGatewayArgs{
		VpcId: vpc.ID(),
		Tags:  tags(map[string]string{"Name": s.VpcName}),
	})
	if err != nil {
		return fmt.Errorf("creating internet gateway: %w", err)
	}
	publicRoutes, err := ec2.NewRouteTable(ctx, s.VpcName+"-public", &ec2.RouteTableArgs{
		VpcId:  vpc.ID(),
		Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), GatewayId: igw.ID()}},
		Tags:   tags(map[string]string{"Name": s.VpcName + "-public"}),
	})
	if err != nil {
		return fmt.Errorf("creating public route table: %w", err)
	}

	subnets := map[string]*ec2.Subnet{} // by Name tag
	byTier := map[string]pulumi.StringArray{}
	var zones []string
	for _, p := range plan {
		extra := map[string]string{"Name": p.Name}
		opts := []pulumi.ResourceOption{}
		switch p.Tier {
		case TierPublic:
			// The LB controller puts internet-facing load balancers here.
			extra["kubernetes.io/role/elb"] = "1"
			zones = append(zones, p.AZ)
		case TierPrivate:
			// ... and internal ones here.
			extra["kubernetes.io/role/internal-elb"] = "1"
		case TierPod:
			// A subnet of the secondary CIDR needs the CIDR on the VPC first.
			opts = append(opts, pulumi.DependsOn([]pulumi.Resource{podCidr}))
		}
		subnet, err := ec2.NewSubnet(ctx, p.Name, &ec2.SubnetArgs{
			VpcId:            vpc.ID(),
			CidrBlock:        pulumi.String(p.CIDR.String()),
			AvailabilityZone: pulumi.String(p.AZ),
			Tags:             tags(extra),
		}, opts...)
		if err != nil {
			return fmt.Errorf("creating subnet %s: %w", p.Name, err)
		}
		subnets[p.Name] = subnet
		byTier[p.Tier] = append(byTier[p.Tier], subnet.ID())
	}

	natIPs := pulumi.StringArray{}
	nats := map[string]*ec2.NatGateway{} // by zone
	for i, az := range zones {
		if s.NatGateways == natSingle && i > 0 {
			nats[az] = nats[zones[0]]
			continue
		}
		eip, err := ec2.NewEip(ctx, s.VpcName+"-nat-"+az, &ec2.EipArgs{
			Domain: pulumi.String("vpc"),
			Tags:   tags(map[string]string{"Name": s.VpcName + "-nat-" + az}),
		})
		if err != nil {
			return fmt.Errorf("allocating NAT address in %s: %w", az, err)
		}
		nat, err := ec2.NewNatGateway(ctx, s.VpcName+"-"+az, &ec2.NatGatewayArgs{
			AllocationId: eip.ID(),
			SubnetId:     subnets[s.VpcName+"-"+TierPublic+"-"+az].ID(),
			Tags:         tags(map[string]string{"Name": s.VpcName + "-" + az}),
		},
			// A NAT gateway forwards nothing until the VPC has its internet gateway.
			pulumi.DependsOn([]pulumi.Resource{igw}))
		if err != nil {
			return fmt.Errorf("creating NAT gateway in %s: %w", az, err)
		}
		nats[az] = nat
		natIPs = append(natIPs, eip.PublicIp)
	}

	for _, az := range zones {
		routes, err := ec2.NewRouteTable(ctx, s.VpcName+"-private-"+az, &ec2.RouteTableArgs{
			VpcId:  vpc.ID(),
			Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), NatGatewayId: nats[az].ID()}},
			Tags:   tags(map[string]string{"Name": s.VpcName + "-private-" + az}),
		})
		if err != nil {
			return fmt.Errorf("creating private route table in %s: %w", az, err)
		}
		for _, r := range []struct {
			tier  string
			table *ec2.RouteTable
		}{{TierPublic, publicRoutes}, {TierPrivate, routes}, {TierPod, routes}} {
			name := s.VpcName + "-" + r.tier + "-" + az
			table := r.table
			if _, err := ec2.NewRouteTableAssociation(ctx, name, &ec2.RouteTableAssociationArgs{
				SubnetId:     subnets[name].ID(),
				RouteTableId: table.ID(),
			}); err != nil {
				return fmt.Errorf("routing subnet %s: %w", name, err)
			}
		}
	}

	ctx.Export("vpcId", vpc.ID())
	ctx.Export("vpcName", pulumi.String(s.VpcName))
	ctx.Export("privateSubnetIds", byTier[TierPrivate])
	ctx.Export("podSubnetIds", byTier[TierPod])
	ctx.Export("publicSubnetIds", byTier[TierPublic])
	ctx.Export("natPublicIps", natIPs)
	// What the root stack needs, ready for `pulumi config set`.
	ctx.Export("rootStackConfig", pulumi.StringMap{
		"nodeless-eks:vpcName":                  pulumi.String(s.VpcName),
		"nodeless-eks:privateSubnetNamePattern": pulumi.String(NamePattern(s.VpcName, TierPrivate)),
		"nodeless-eks:podSubnetNamePattern":     pulumi.String(NamePattern(s.VpcName, TierPod)),
	})
	return nil
}

func stringOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
