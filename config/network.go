package config

import (
	"net/netip"
	"strings"

	"nodeless-eks/cluster"
)

// documentationRanges are the IPv4 blocks reserved for examples (RFC 5737):
// no deployer connects from them.
var documentationRanges = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// checkVpc: a stack names its VPC with a name and two patterns that tell
// the node subnets from the pod subnets, or names none and gets its own
// (natGateways and vpcCidrBlock shape it; they mean nothing for a VPC the
// stack did not make).
func (c *Config) checkVpc(p *problems) {
	if strings.TrimSpace(c.VpcName) == "" {
		if c.VpcName != "" {
			p.add("vpcName %q: want the Name tag of an existing VPC, or leave it unset for the stack to make its own", c.VpcName)
		}
		for _, k := range []struct{ key, value string }{
			{"privateSubnetNamePattern", c.PrivateSubnetNamePattern}, {"podSubnetNamePattern", c.PodSubnetNamePattern},
		} {
			if k.value != "" {
				p.add("%s %q: set only with vpcName; without vpcName the stack makes its VPC and its subnets", k.key, k.value)
			}
		}
		c.checkOwnVpc(p)
		return
	}
	if strings.TrimSpace(c.PrivateSubnetNamePattern) == "" {
		p.add("privateSubnetNamePattern: required with vpcName, a Name-tag pattern such as \"my-vpc-private-*\"")
	}
	if strings.TrimSpace(c.PodSubnetNamePattern) == "" {
		p.add("podSubnetNamePattern: required with vpcName, a Name-tag pattern such as \"my-vpc-pods-*\"")
	}
	if c.PrivateSubnetNamePattern != "" && c.PrivateSubnetNamePattern == c.PodSubnetNamePattern {
		p.add("podSubnetNamePattern %q: must differ from privateSubnetNamePattern; pods use their own (secondary CIDR) subnets", c.PodSubnetNamePattern)
	}
	for _, k := range []struct{ key, value string }{{"natGateways", c.NatGateways}, {"vpcCidrBlock", c.VpcCidrBlock}} {
		if k.value != "" {
			p.add("%s %q: shapes only a VPC the stack makes, and vpcName names an existing one; unset it, or unset vpcName", k.key, k.value)
		}
	}
}

// checkOwnVpc: the VPC the stack makes takes a NAT layout and a primary
// CIDR that leaves the pod CIDR free.
func (c *Config) checkOwnVpc(p *problems) {
	switch c.NatGateways {
	case "", cluster.NatSingle, cluster.NatPerAz:
	default:
		p.add("natGateways %q: want %q (one NAT gateway for every zone, about $36.50 a month with its address) or %q (one per zone, so that a zone's outage "+
			"cuts only its own egress)", c.NatGateways, cluster.NatSingle, cluster.NatPerAz)
	}
	if c.VpcCidrBlock == "" {
		return
	}
	prefix, err := netip.ParsePrefix(c.VpcCidrBlock)
	switch {
	case err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix:
		p.add("vpcCidrBlock %q: want an IPv4 network in CIDR form, e.g. \"10.0.0.0/16\"", c.VpcCidrBlock)
	case prefix.Bits() < 16 || prefix.Bits() > 20:
		// A VPC's CIDR blocks are /16 to /28 (VPC user guide,
		// vpc-cidr-blocks.html); each zone's public subnet keeps 64 addresses.
		p.add("vpcCidrBlock %q: want /16 to /20: AWS refuses a VPC block larger than /16, and a smaller one than /20 leaves a "+
			"public subnet fewer than 64 addresses", c.VpcCidrBlock)
	case prefix.Overlaps(cluster.PodCidrBlock):
		p.add("vpcCidrBlock %q: overlaps %s, the VPC's pod CIDR; choose a block outside it", c.VpcCidrBlock, cluster.PodCidrBlock)
	}
}

// checkEndpoints: the API server must be reachable, from networks a
// deployer can be in.
func (c *Config) checkEndpoints(p *problems) {
	if !c.EndpointPublicAccess && !c.EndpointPrivateAccess {
		p.add("endpointPublicAccess and endpointPrivateAccess: at least one must be true")
	}
	if c.EndpointPublicAccess && len(c.PublicAccessCidrs) == 0 {
		p.add("publicAccessCidrs: at least one CIDR when endpointPublicAccess is true")
	}
	for i, cidr := range c.PublicAccessCidrs {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix {
			p.add("publicAccessCidrs[%d] %q: want an IPv4 network in CIDR form, e.g. \"81.2.69.0/24\"", i, cidr)
			continue
		}
		for _, doc := range documentationRanges {
			// A wider block that merely holds one is real address space.
			if prefix.Bits() >= doc.Bits() && doc.Contains(prefix.Addr()) {
				p.add("publicAccessCidrs[%d] %q: %s is a documentation range (RFC 5737) that no deployer has; "+
					"the program's own Kubernetes provider connects from where `pulumi up` runs, so put that egress range here "+
					"(e.g. the output of `curl -s https://checkip.amazonaws.com` with /32), or leave the key unset on a non-production stack", i, cidr, doc)
			}
		}
	}
}

// checkProductionEndpoint: a production API server open to the whole
// internet needs an explicit acknowledgement.
func (c *Config) checkProductionEndpoint(p *problems) {
	if !c.Production || !c.EndpointPublicAccess || c.AllowPublicEndpointFromInternet {
		return
	}
	for i, cidr := range c.PublicAccessCidrs {
		if prefix, err := netip.ParsePrefix(cidr); err == nil && prefix.Bits() == 0 {
			p.add("publicAccessCidrs[%d] %q: a production stack would expose its Kubernetes API to the whole internet; "+
				"set publicAccessCidrs to your own egress ranges (those of the people and runners that run pulumi up), "+
				"or turn endpointPublicAccess off, or set allowPublicEndpointFromInternet: true to accept it", i, cidr)
		}
	}
}
