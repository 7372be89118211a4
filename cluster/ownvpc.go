package cluster

import (
	"fmt"
	"net/netip"
	"slices"

	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// NAT gateway layouts of a VPC the stack makes.
const (
	// NatSingle is one gateway for every zone: cheap, and one zone's
	// outage cuts every zone's egress.
	NatSingle = "single"
	// NatPerAz is one gateway per zone, what a production VPC wants.
	NatPerAz = "perAz"
)

// OwnVpc describes the VPC a stack makes when it names none: public,
// private and pod subnets in each of Zones, an internet gateway, NAT per
// NatGateways, and routes.
type OwnVpc struct {
	// Prefix starts every Name tag and resource name: the cluster's name.
	// Required.
	Prefix string
	// ClusterName is the value of names.ClusterTagKey on every resource,
	// which tells the stack's own network from others' (the preflight,
	// the recovery and deploy/'s policies read it). Required.
	ClusterName string
	// CidrBlock is the primary CIDR, /16 to /20; the pod subnets come from
	// PodCidrBlock. Required.
	CidrBlock netip.Prefix
	// Zones are the availability zones, 2 to MaxZones, that EKS accepts.
	// Required.
	Zones []string
	// NatGateways is NatSingle or NatPerAz. Required.
	NatGateways string
	// Tags go on every resource, under the Name tag and names.ClusterTagKey.
	Tags map[string]string
	// Protect keeps `pulumi destroy` from deleting any of it: Pulumi goes
	// on deleting what no protected resource depends on (addons'
	// protectIf), and the public routes of a production VPC are such.
	Protect bool
	// Region is the VPC's, for the S3 endpoint's service name. Required.
	Region string
	// RouteTables are the tables an earlier `pulumi up` made, by Name tag
	// (the config's preflight reads them); nil for a new VPC.
	RouteTables map[string]RouteTable
	// S3Endpoint routes the private subnets' S3 traffic (ECR's image
	// layers among it) through a free gateway endpoint instead of the NAT
	// gateways, which charge per GB.
	S3Endpoint bool
	// EmptyDefaultSecurityGroup holds the VPC's default security group
	// without rules (Security Hub EC2.2).
	EmptyDefaultSecurityGroup bool
	// FlowLogs, when set, logs the VPC's traffic to CloudWatch Logs
	// (Security Hub EC2.6).
	FlowLogs *FlowLogs
}

// RouteTable is a route table an earlier `pulumi up` made: its ID, and
// whether its default route is a Route of its own already (RoutesTagKey),
// or still inline, as versions before routes were separate made it.
type RouteTable struct {
	ID       string
	Separate bool
}

// RoutesTagKey marks a route table whose routes are Route resources; the
// program sets it, once the default route is one, on every table it makes.
const RoutesTagKey = "nodeless-eks/routes"

func (o *OwnVpc) validate() error {
	switch {
	case o.Prefix == "" || o.ClusterName == "" || o.Region == "":
		return fmt.Errorf("Own: Prefix, ClusterName and Region are required")
	case o.NatGateways != NatSingle && o.NatGateways != NatPerAz:
		return fmt.Errorf("Own.NatGateways %q: want %q or %q", o.NatGateways, NatSingle, NatPerAz)
	}
	_, err := Plan(o.Prefix, o.CidrBlock, PodCidrBlock, o.Zones)
	return err
}

// make creates the VPC o describes under v. The control plane needs only
// the subnets; the NAT gateways, routes and associations are created beside
// it and gathered in v.Egress for what runs pods.
func (v *Vpc) make(ctx *pulumi.Context, name string, o *OwnVpc) error {
	plan, err := Plan(o.Prefix, o.CidrBlock, PodCidrBlock, o.Zones)
	if err != nil {
		return err
	}
	opts := []pulumi.ResourceOption{pulumi.Parent(v)}
	if o.Protect {
		opts = append(opts, pulumi.Protect(true))
	}
	v.Made = true
	own := func(r pulumi.Resource) { v.Owned = append(v.Owned, r) }
	tags := func(nameTag string) pulumi.StringMap {
		m := pulumi.ToStringMap(o.Tags)
		m["Name"] = pulumi.String(nameTag)
		m[names.ClusterTagKey] = pulumi.String(o.ClusterName)
		return m
	}

	vpc, err := ec2.NewVpc(ctx, name+"-vpc", &ec2.VpcArgs{
		CidrBlock: pulumi.String(o.CidrBlock.String()),
		// EKS needs DNS hostnames and resolution in its VPC (EKS user
		// guide, network-reqs.html).
		EnableDnsHostnames: pulumi.Bool(true),
		EnableDnsSupport:   pulumi.Bool(true),
		Tags:               tags(o.Prefix + "-vpc"),
	}, opts...)
	if err != nil {
		return fmt.Errorf("creating VPC: %w", err)
	}
	own(vpc)
	v.Subnets = append(v.Subnets, vpc)
	v.ID, v.Arn = vpc.ID().ToStringOutput(), vpc.Arn
	podCidr, err := ec2.NewVpcIpv4CidrBlockAssociation(ctx, name+"-pod-cidr", &ec2.VpcIpv4CidrBlockAssociationArgs{
		VpcId:     vpc.ID(),
		CidrBlock: pulumi.String(PodCidrBlock.String()),
	}, opts...)
	if err != nil {
		return fmt.Errorf("adding the pod CIDR: %w", err)
	}
	own(podCidr)
	igw, err := ec2.NewInternetGateway(ctx, name+"-igw", &ec2.InternetGatewayArgs{
		VpcId: vpc.ID(),
		Tags:  tags(o.Prefix + "-igw"),
	}, opts...)
	if err != nil {
		return fmt.Errorf("creating internet gateway: %w", err)
	}
	own(igw)
	publicRoutes, publicDefault, err := v.routeTable(ctx, name+"-public", o.Prefix+"-public", vpc, o, tags, opts,
		&ec2.RouteArgs{GatewayId: igw.ID()})
	if err != nil {
		return err
	}
	// The NAT gateways' own way out.
	v.Egress = append(v.Egress, igw, publicRoutes, publicDefault)

	subnets := map[string]*ec2.Subnet{} // by name
	private := pulumi.StringArray{}
	v.PodSubnetIDsByAZ = map[string]pulumi.StringOutput{}
	for _, s := range plan {
		t := tags(s.Name)
		subnetOpts := opts
		switch s.Tier {
		case TierPublic:
			// The LB controller puts internet-facing load balancers here
			// (its subnet discovery, docs/deploy/subnet_discovery.md) ...
			t["kubernetes.io/role/elb"] = pulumi.String("1")
		case TierPrivate:
			// ... and internal ones here.
			t["kubernetes.io/role/internal-elb"] = pulumi.String("1")
		case TierPod:
			// A subnet of the secondary CIDR needs the CIDR on the VPC first.
			subnetOpts = append(slices.Clip(opts), pulumi.DependsOn([]pulumi.Resource{podCidr}))
		}
		subnet, err := ec2.NewSubnet(ctx, s.Name, &ec2.SubnetArgs{
			VpcId:            vpc.ID(),
			CidrBlock:        pulumi.String(s.CIDR.String()),
			AvailabilityZone: pulumi.String(s.AZ),
			Tags:             t,
		}, subnetOpts...)
		if err != nil {
			return fmt.Errorf("creating subnet %s: %w", s.Name, err)
		}
		own(subnet)
		v.Subnets = append(v.Subnets, subnet)
		subnets[s.Name] = subnet
		switch s.Tier {
		case TierPrivate:
			private = append(private, subnet.ID())
		case TierPod:
			v.PodSubnetIDsByAZ[s.AZ] = subnet.ID().ToStringOutput()
		}
	}
	v.PrivateSubnetIDs = private.ToStringArrayOutput()

	nats := map[string]*ec2.NatGateway{} // by zone
	for i, az := range o.Zones {
		if o.NatGateways == NatSingle && i > 0 {
			nats[az] = nats[o.Zones[0]]
			continue
		}
		eip, err := ec2.NewEip(ctx, name+"-nat-"+az, &ec2.EipArgs{
			Domain: pulumi.String("vpc"),
			Tags:   tags(o.Prefix + "-nat-" + az),
		}, opts...)
		if err != nil {
			return fmt.Errorf("allocating NAT address in %s: %w", az, err)
		}
		nat, err := ec2.NewNatGateway(ctx, name+"-nat-"+az, &ec2.NatGatewayArgs{
			AllocationId: eip.ID(),
			SubnetId:     subnets[o.Prefix+"-"+TierPublic+"-"+az].ID(),
			Tags:         tags(o.Prefix + "-nat-" + az),
		}, append(slices.Clip(opts),
			// A NAT gateway forwards nothing until the VPC has its internet gateway.
			pulumi.DependsOn([]pulumi.Resource{igw}))...)
		if err != nil {
			return fmt.Errorf("creating NAT gateway in %s: %w", az, err)
		}
		own(eip)
		own(nat)
		nats[az] = nat
		v.Egress = append(v.Egress, nat)
	}

	privateTables := pulumi.StringArray{}
	for _, az := range o.Zones {
		routes, natDefault, err := v.routeTable(ctx, name+"-private-"+az, o.Prefix+"-private-"+az, vpc, o, tags, opts,
			&ec2.RouteArgs{NatGatewayId: nats[az].ID()})
		if err != nil {
			return err
		}
		privateTables = append(privateTables, routes.ID())
		v.Egress = append(v.Egress, routes, natDefault)
		for _, tier := range []string{TierPublic, TierPrivate, TierPod} {
			table := routes
			if tier == TierPublic {
				table = publicRoutes
			}
			subnet := o.Prefix + "-" + tier + "-" + az
			assoc, err := ec2.NewRouteTableAssociation(ctx, subnet, &ec2.RouteTableAssociationArgs{
				SubnetId:     subnets[subnet].ID(),
				RouteTableId: table.ID(),
			}, opts...)
			if err != nil {
				return fmt.Errorf("routing subnet %s: %w", subnet, err)
			}
			own(assoc)
			v.Egress = append(v.Egress, assoc)
		}
	}
	return v.harden(ctx, name, o, vpc, privateTables, tags, opts)
}

// routeTable makes a route table with its default route as a Route of its
// own, to target: RouteTable.Routes would own every route of the table,
// and remove, at the next `up --refresh`, one that a network team adds
// (pulumi-aws v6.83.4 ec2.RouteTable, "NOTE on Route Tables and Routes").
// A table an earlier version made holds its default route inline: the
// Route adopts it by import, with the table's ID as the preflight read it
// (the import ID ROUTETABLEID_DESTINATION, ec2.Route's docs), and the table
// is marked RoutesTagKey only once the import succeeded, so a failed
// import is tried again. Dropping Routes from a table leaves its routes
// as they are ("omitting this argument is interpreted as ignoring any
// existing routes"): no replacement, no moment without the route.
func (v *Vpc) routeTable(ctx *pulumi.Context, name, nameTag string, vpc *ec2.Vpc, o *OwnVpc, tags func(string) pulumi.StringMap,
	opts []pulumi.ResourceOption, target *ec2.RouteArgs) (*ec2.RouteTable, *ec2.Route, error) {
	t := tags(nameTag)
	t[RoutesTagKey] = pulumi.String("separate")
	earlier, made := o.RouteTables[nameTag]
	if !made || earlier.Separate {
		table, err := ec2.NewRouteTable(ctx, name, &ec2.RouteTableArgs{VpcId: vpc.ID(), Tags: t}, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("creating route table %s: %w", nameTag, err)
		}
		target.RouteTableId, target.DestinationCidrBlock = table.ID(), pulumi.String("0.0.0.0/0")
		route, err := ec2.NewRoute(ctx, name+"-default", target, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the default route of %s: %w", nameTag, err)
		}
		v.Owned = append(v.Owned, table, route)
		return table, route, nil
	}
	target.RouteTableId, target.DestinationCidrBlock = pulumi.String(earlier.ID), pulumi.String("0.0.0.0/0")
	route, err := ec2.NewRoute(ctx, name+"-default", target, append(slices.Clip(opts), pulumi.Import(pulumi.ID(earlier.ID+"_0.0.0.0/0")))...)
	if err != nil {
		return nil, nil, fmt.Errorf("adopting the default route of %s: %w", nameTag, err)
	}
	t[RoutesTagKey] = route.ID().ApplyT(func(pulumi.ID) string { return "separate" }).(pulumi.StringOutput)
	table, err := ec2.NewRouteTable(ctx, name, &ec2.RouteTableArgs{VpcId: vpc.ID(), Tags: t}, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("creating route table %s: %w", nameTag, err)
	}
	v.Owned = append(v.Owned, table, route)
	return table, route, nil
}
