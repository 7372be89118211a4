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
}

func (o *OwnVpc) validate() error {
	switch {
	case o.Prefix == "" || o.ClusterName == "":
		return fmt.Errorf("Own: Prefix and ClusterName are required")
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
	publicRoutes, err := ec2.NewRouteTable(ctx, name+"-public", &ec2.RouteTableArgs{
		VpcId:  vpc.ID(),
		Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), GatewayId: igw.ID()}},
		Tags:   tags(o.Prefix + "-public"),
	}, opts...)
	if err != nil {
		return fmt.Errorf("creating public route table: %w", err)
	}
	own(publicRoutes)
	// The NAT gateways' own way out.
	v.Egress = append(v.Egress, igw, publicRoutes)

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

	for _, az := range o.Zones {
		routes, err := ec2.NewRouteTable(ctx, name+"-private-"+az, &ec2.RouteTableArgs{
			VpcId:  vpc.ID(),
			Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), NatGatewayId: nats[az].ID()}},
			Tags:   tags(o.Prefix + "-private-" + az),
		}, opts...)
		if err != nil {
			return fmt.Errorf("creating private route table in %s: %w", az, err)
		}
		own(routes)
		v.Egress = append(v.Egress, routes)
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
	return nil
}
