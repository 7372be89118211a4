package config

import (
	"net/netip"
	"strings"
)

// documentationRanges are the IPv4 blocks reserved for examples (RFC 5737):
// no deployer connects from them.
var documentationRanges = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// checkVpc: the VPC and subnet lookups need a name and two patterns that
// tell the node subnets from the pod subnets.
func (c *Config) checkVpc(p *problems) {
	if strings.TrimSpace(c.VpcName) == "" {
		p.add("vpcName: required, the Name tag of the existing VPC")
	}
	if strings.TrimSpace(c.PrivateSubnetNamePattern) == "" {
		p.add("privateSubnetNamePattern: required, a Name-tag pattern such as \"my-vpc-private-*\"")
	}
	if strings.TrimSpace(c.PodSubnetNamePattern) == "" {
		p.add("podSubnetNamePattern: required, a Name-tag pattern such as \"my-vpc-podsubnet-*\"")
	}
	if c.PrivateSubnetNamePattern != "" && c.PrivateSubnetNamePattern == c.PodSubnetNamePattern {
		p.add("podSubnetNamePattern %q: must differ from privateSubnetNamePattern; pods use their own (secondary CIDR) subnets", c.PodSubnetNamePattern)
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
