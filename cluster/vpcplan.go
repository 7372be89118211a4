package cluster

import (
	"fmt"
	"net/netip"
	"slices"
)

// Subnet is one planned subnet of a VPC the stack makes.
type Subnet struct {
	// Name is the Name tag and the resource's name, "<prefix>-<tier>-<az>".
	Name string
	// Tier is TierPublic, TierPrivate or TierPod.
	Tier string
	AZ   string
	CIDR netip.Prefix
}

// Subnet tiers.
const (
	TierPublic  = "public"
	TierPrivate = "private"
	TierPod     = "pods"
)

// PodCidrBlock is the secondary CIDR of a VPC the stack makes, which the
// pod subnets divide: the shared address space of RFC 6598, which AWS's
// custom networking guide uses for it (pods reach beyond the VPC through
// their node's address, so it need not be routable elsewhere).
var PodCidrBlock = netip.MustParsePrefix("100.64.0.0/16")

// MaxZones is how many zones a plan spreads over: the primary CIDR is cut
// in eight, one eighth per zone's private subnet and one for all public
// ones. VpcZones is how many a VPC the stack makes takes.
const (
	MaxZones = 6
	VpcZones = 3
)

// Plan cuts the primary CIDR into a private subnet per zone (an eighth of
// it each) and a public subnet per zone (a sixty-fourth each, from the last
// eighth), and the pod CIDR into a pod subnet per zone (an eighth each).
// With a /16 and a /16 that is /19 private, /22 public and /19 pod subnets:
// 8,187, 1,019 and 8,187 usable addresses. Config validation refuses the
// blocks Plan cannot cut, naming the key; its errors here are the plan's.
func Plan(prefix string, primary, pods netip.Prefix, azs []string) ([]Subnet, error) {
	switch {
	case len(azs) < 2 || len(azs) > MaxZones:
		return nil, fmt.Errorf("%d availability zones: want 2-%d", len(azs), MaxZones)
	// A VPC's CIDR blocks are /16 to /28 (VPC user guide, vpc-cidr-blocks.html).
	case primary.Bits() > 20 || primary.Bits() < 16:
		return nil, fmt.Errorf("primary CIDR %s: want /16 to /20: AWS refuses a VPC block larger than /16, and each public subnet keeps at least 64 addresses", primary)
	case pods.Bits() > 20 || pods.Bits() < 16:
		return nil, fmt.Errorf("pod CIDR %s: want /16 to /20: AWS refuses a VPC block larger than /16, and each pod subnet, an eighth of it, holds at least 32 /28 prefixes (a /23 of a /20)", pods)
	case primary.Overlaps(pods):
		return nil, fmt.Errorf("pod CIDR %s overlaps primary CIDR %s", pods, primary)
	}
	var out []Subnet
	publicBlock := cut(primary, 3, 7)
	for i, az := range azs {
		out = append(out,
			Subnet{Name: prefix + "-" + TierPublic + "-" + az, Tier: TierPublic, AZ: az, CIDR: cut(publicBlock, 3, i)},
			Subnet{Name: prefix + "-" + TierPrivate + "-" + az, Tier: TierPrivate, AZ: az, CIDR: cut(primary, 3, i)},
			Subnet{Name: prefix + "-" + TierPod + "-" + az, Tier: TierPod, AZ: az, CIDR: cut(pods, 3, i)},
		)
	}
	return out, nil
}

// cut returns the index-th of the 2^newBits equal blocks of p, as
// Terraform's cidrsubnet(p, newBits, index) does; Plan's bounds keep it
// within 32 bits and the index below 2^newBits.
func cut(p netip.Prefix, newBits, index int) netip.Prefix {
	bits := p.Bits() + newBits
	base := p.Masked().Addr().As4()
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += uint32(index) << (32 - bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), bits)
}

// eksUnsupportedZoneIDs are the zones where EKS creates no control plane:
// use1-az3 (us-east-1), usw1-az2 (us-west-1) and cac1-az3 (ca-central-1),
// as the EKS user guide lists them (network-reqs.html, "Subnet
// requirements"). Zone names map to IDs per account, so the IDs decide.
var eksUnsupportedZoneIDs = []string{"use1-az3", "usw1-az2", "cac1-az3"}

// EKSZones are the zone names, sorted, less those whose ID EKS refuses
// (dropped, as "name (id)"). ids are the zone IDs in the order of names,
// as GetAvailabilityZones returns them; without them no zone is dropped.
func EKSZones(names, ids []string) (kept, dropped []string) {
	for i, name := range names {
		if len(ids) == len(names) && slices.Contains(eksUnsupportedZoneIDs, ids[i]) {
			dropped = append(dropped, name+" ("+ids[i]+")")
			continue
		}
		kept = append(kept, name)
	}
	slices.Sort(kept)
	return kept, dropped
}
