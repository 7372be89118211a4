package cluster

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	azs := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	plan, err := Plan("eks-demo-vpc", netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("100.64.0.0/16"), azs)
	require.NoError(t, err)

	want := map[string]string{
		"eks-demo-vpc-private-eu-west-1a": "10.0.0.0/19",
		"eks-demo-vpc-private-eu-west-1b": "10.0.32.0/19",
		"eks-demo-vpc-private-eu-west-1c": "10.0.64.0/19",
		"eks-demo-vpc-public-eu-west-1a":  "10.0.224.0/22",
		"eks-demo-vpc-public-eu-west-1b":  "10.0.228.0/22",
		"eks-demo-vpc-public-eu-west-1c":  "10.0.232.0/22",
		"eks-demo-vpc-pods-eu-west-1a":    "100.64.0.0/19",
		"eks-demo-vpc-pods-eu-west-1b":    "100.64.32.0/19",
		"eks-demo-vpc-pods-eu-west-1c":    "100.64.64.0/19",
	}
	got := map[string]string{}
	perZone := map[string]map[string]int{}
	for _, s := range plan {
		got[s.Name] = s.CIDR.String()
		if perZone[s.AZ] == nil {
			perZone[s.AZ] = map[string]int{}
		}
		perZone[s.AZ][s.Tier]++
	}
	assert.Equal(t, want, got)

	t.Run("each zone has one subnet of each tier", func(t *testing.T) {
		for _, az := range azs {
			assert.Equal(t, map[string]int{TierPublic: 1, TierPrivate: 1, TierPod: 1}, perZone[az], az)
		}
	})
	t.Run("no two subnets overlap", func(t *testing.T) {
		for i, a := range plan {
			for _, b := range plan[i+1:] {
				assert.Falsef(t, a.CIDR.Overlaps(b.CIDR), "%s %s overlaps %s %s", a.Name, a.CIDR, b.Name, b.CIDR)
			}
		}
	})
	t.Run("every subnet lies in its CIDR", func(t *testing.T) {
		for _, s := range plan {
			block := netip.MustParsePrefix("10.0.0.0/16")
			if s.Tier == TierPod {
				block = netip.MustParsePrefix("100.64.0.0/16")
			}
			assert.Truef(t, block.Contains(s.CIDR.Addr()) && s.CIDR.Bits() > block.Bits(), "%s %s outside %s", s.Name, s.CIDR, block)
		}
	})
}

func TestPlanSmallestBlocksAndMostZones(t *testing.T) {
	azs := []string{"a", "b", "c", "d", "e", "f"}
	plan, err := Plan("v", netip.MustParsePrefix("10.1.0.0/20"), netip.MustParsePrefix("100.64.0.0/20"), azs)
	require.NoError(t, err)
	require.Len(t, plan, 18)
	for _, s := range plan {
		switch s.Tier {
		case TierPublic:
			assert.Equal(t, 26, s.CIDR.Bits(), "64 addresses per public subnet from a /20")
		default:
			assert.Equal(t, 23, s.CIDR.Bits(), "%s", s.Name)
		}
	}
}

func TestPlanRejects(t *testing.T) {
	p16, pods := netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("100.64.0.0/16")
	two := []string{"a", "b"}
	tests := []struct {
		name          string
		primary, pods netip.Prefix
		azs           []string
		want          string
	}{
		{"one zone", p16, pods, []string{"a"}, "1 availability zones: want 2-6"},
		{"seven zones", p16, pods, []string{"a", "b", "c", "d", "e", "f", "g"}, "7 availability zones"},
		{"a primary CIDR too small", netip.MustParsePrefix("10.0.0.0/24"), pods, two, "primary CIDR 10.0.0.0/24: want /16 to /20"},
		{"a pod CIDR too small", p16, netip.MustParsePrefix("100.64.0.0/22"), two, "pod CIDR 100.64.0.0/22: want /16 to /20"},
		{"a primary CIDR larger than AWS allows", netip.MustParsePrefix("10.0.0.0/8"), pods, two, "primary CIDR 10.0.0.0/8: want /16 to /20: AWS refuses"},
		{"overlapping CIDRs", p16, netip.MustParsePrefix("10.0.128.0/17"), two, "pod CIDR 10.0.128.0/17 overlaps primary CIDR 10.0.0.0/16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Plan("v", tt.primary, tt.pods, tt.azs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestZonesEKSRefuses: us-east-1's use1-az3 (and two others) hold no EKS
// control plane; a VPC the stack makes never puts a private subnet there,
// whatever name the account gives that zone.
func TestZonesEKSRefuses(t *testing.T) {
	kept, dropped := EKSZones([]string{"us-east-1c", "us-east-1a", "us-east-1b", "us-east-1d"},
		[]string{"use1-az1", "use1-az3", "use1-az2", "use1-az4"})
	assert.Equal(t, []string{"us-east-1b", "us-east-1c", "us-east-1d"}, kept)
	assert.Equal(t, []string{"us-east-1a (use1-az3)"}, dropped)
	kept, dropped = EKSZones([]string{"eu-west-1b", "eu-west-1a"}, nil)
	assert.Equal(t, []string{"eu-west-1a", "eu-west-1b"}, kept, "without IDs nothing is dropped")
	assert.Empty(t, dropped)
}
