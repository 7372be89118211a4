package main

import (
	"fmt"
	"net/netip"
)

// Subnet is one planned subnet.
type Subnet struct {
	// Name is the Name tag, "<vpc>-<tier>-<az>"; the root program finds
	// the private and pod subnets by it.
	Name string
	// Tier is "public", "private" or "pod".
	Tier string
	AZ   string
	CIDR netip.Prefix
}

// Subnet tiers.
const (
	TierPublic  = "public"
	TierPrivate = "private"
	TierPod     = "podsubnet"
)

// maxAZs is how many zones a plan spreads over: the primary CIDR is cut in
// eight, one eighth per zone's private subnet and one for all public ones.
const maxAZs = 6

// Plan cuts the primary CIDR into a private subnet per zone (an eighth of
// it each) and a public subnet per zone (a sixty-fourth each, from the last
// eighth), and the pod CIDR into a pod subnet per zone (an eighth each).
// With a /16 and a /16 that is /19 private, /22 public and /19 pod subnets:
// 8,187, 1,019 and 8,187 usable addresses.
func Plan(vpcName string, primary, pods netip.Prefix, azs []string) ([]Subnet, error) {
	switch {
	case len(azs) < 2 || len(azs) > maxAZs:
		return nil, fmt.Errorf("%d availability zones: want 2-%d", len(azs), maxAZs)
	// A VPC's CIDR blocks are /16 to /28 (VPC user guide, vpc-cidr-blocks.html).
	case primary.Bits() > 20 || primary.Bits() < 16:
		return nil, fmt.Errorf("cidrBlock %s: want /16 to /20: AWS refuses a VPC block larger than /16, and each public subnet keeps at least 64 addresses", primary)
	case pods.Bits() > 20 || pods.Bits() < 16:
		return nil, fmt.Errorf("podCidrBlock %s: want /16 to /20: AWS refuses a VPC block larger than /16, and each pod subnet holds 256 /28 prefixes at least", pods)
	case primary.Overlaps(pods):
		return nil, fmt.Errorf("podCidrBlock %s overlaps cidrBlock %s", pods, primary)
	}
	var out []Subnet
	publicBlock, err := cut(primary, 3, 7)
	if err != nil {
		return nil, err
	}
	for i, az := range azs {
		private, err := cut(primary, 3, i)
		if err != nil {
			return nil, err
		}
		public, err := cut(publicBlock, 3, i)
		if err != nil {
			return nil, err
		}
		pod, err := cut(pods, 3, i)
		if err != nil {
			return nil, err
		}
		out = append(out,
			Subnet{Name: vpcName + "-" + TierPublic + "-" + az, Tier: TierPublic, AZ: az, CIDR: public},
			Subnet{Name: vpcName + "-" + TierPrivate + "-" + az, Tier: TierPrivate, AZ: az, CIDR: private},
			Subnet{Name: vpcName + "-" + TierPod + "-" + az, Tier: TierPod, AZ: az, CIDR: pod},
		)
	}
	return out, nil
}

// cut returns the index-th of the 2^newBits equal blocks of p, as
// Terraform's cidrsubnet(p, newBits, index) does.
func cut(p netip.Prefix, newBits, index int) (netip.Prefix, error) {
	bits := p.Bits() + newBits
	if bits > 32 || index >= 1<<newBits {
		return netip.Prefix{}, fmt.Errorf("cannot cut %s into %d blocks", p, 1<<newBits)
	}
	base := p.Masked().Addr().As4()
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += uint32(index) << (32 - bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), bits), nil
}

// NamePattern is the Name-tag pattern that selects a tier's subnets, as the
// root stack's privateSubnetNamePattern and podSubnetNamePattern want it.
func NamePattern(vpcName, tier string) string {
	return vpcName + "-" + tier + "-*"
}
