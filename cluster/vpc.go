package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const vpcTypeToken = "nodeless-eks:cluster:Vpc"

// VpcArgs names an existing VPC and its subnets by Name tag.
type VpcArgs struct {
	// VpcName is the VPC's Name tag. Required.
	VpcName string
	// PrivateSubnetNamePattern is an EC2 filter pattern ('*' and '?') on the
	// private subnets' Name tags. They must span at least two AZs. Required.
	PrivateSubnetNamePattern string
	// PodSubnetNamePattern is an EC2 filter pattern on the pod subnets' Name
	// tags: exactly one per AZ, covering every AZ of the private subnets.
	// Required.
	PodSubnetNamePattern string
}

// Vpc is the result of looking up an existing VPC. It creates nothing; the
// lookups run while the program runs, so every field is known before the
// first resource that needs it is registered.
type Vpc struct {
	pulumi.ResourceState

	// ID is the VPC's id.
	ID string
	// PrivateSubnetIDs are the private subnets, sorted by id.
	PrivateSubnetIDs []string
	// PodSubnetIDsByAZ maps each availability zone to its pod subnet; it
	// decides how many ENIConfigs exist, so it is a plain value, known
	// while the program runs (the component registers all three as its
	// outputs vpcId, privateSubnetIds and podSubnetIds).
	PodSubnetIDsByAZ map[string]string
}

// NewVpc looks up the VPC and its subnets, failing with a message that says
// what was searched for when a lookup finds too little.
func NewVpc(ctx *pulumi.Context, name string, args *VpcArgs, opts ...pulumi.ResourceOption) (*Vpc, error) {
	if args == nil || args.VpcName == "" || args.PrivateSubnetNamePattern == "" || args.PodSubnetNamePattern == "" {
		return nil, fmt.Errorf("vpc %q: VpcName, PrivateSubnetNamePattern and PodSubnetNamePattern are required", name)
	}
	v := &Vpc{}
	if err := ctx.RegisterComponentResource(vpcTypeToken, name, v, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(v)

	vpc, err := ec2.LookupVpc(ctx, &ec2.LookupVpcArgs{
		Filters: []ec2.GetVpcFilter{{Name: "tag:Name", Values: []string{args.VpcName}}},
	}, parent)
	if err != nil {
		hint := ""
		// pulumi-aws's lookup fails so when more than one VPC matches
		// (terraform-provider-aws's aws_vpc data source: "multiple EC2 VPCs
		// matched; use additional constraints ...").
		if strings.Contains(err.Error(), "multiple") {
			hint = "; more than one VPC carries that name (another quick start in the account and region?): give yours a name of its own " +
				"(examples/vpc's vpcName) and set vpcName and the subnet patterns to it"
		}
		return nil, fmt.Errorf("looking up VPC with Name tag %q (config vpcName): %w%s", args.VpcName, err, hint)
	}
	v.ID = vpc.Id

	private, err := lookupSubnets(ctx, vpc.Id, args.PrivateSubnetNamePattern, parent)
	if err != nil {
		return nil, fmt.Errorf("looking up private subnets (config privateSubnetNamePattern): %w", err)
	}
	pods, err := lookupSubnets(ctx, vpc.Id, args.PodSubnetNamePattern, parent)
	if err != nil {
		return nil, fmt.Errorf("looking up pod subnets (config podSubnetNamePattern): %w", err)
	}
	if v.PrivateSubnetIDs, v.PodSubnetIDsByAZ, err = checkSubnets(private, pods); err != nil {
		return nil, fmt.Errorf("vpc %q (%s): %w", args.VpcName, vpc.Id, err)
	}

	if err := ctx.RegisterResourceOutputs(v, pulumi.Map{
		"vpcId":            pulumi.String(v.ID),
		"privateSubnetIds": pulumi.ToStringArray(v.PrivateSubnetIDs),
		"podSubnetIds":     pulumi.ToStringMap(v.PodSubnetIDsByAZ),
	}); err != nil {
		return nil, err
	}
	return v, nil
}

// subnet is what the checks need to know of a subnet.
type subnet struct {
	ID, AZ, Name string
}

// lookupSubnets finds the subnets of vpcID whose Name tag matches pattern.
func lookupSubnets(ctx *pulumi.Context, vpcID, pattern string, opts ...pulumi.InvokeOption) ([]subnet, error) {
	found, err := ec2.GetSubnets(ctx, &ec2.GetSubnetsArgs{
		Filters: []ec2.GetSubnetsFilter{
			{Name: "vpc-id", Values: []string{vpcID}},
			{Name: "tag:Name", Values: []string{pattern}},
		},
	}, opts...)
	if err != nil {
		return nil, err
	}
	if len(found.Ids) == 0 {
		return nil, fmt.Errorf("no subnet of %s has a Name tag matching %q", vpcID, pattern)
	}
	ids := append([]string(nil), found.Ids...)
	sort.Strings(ids)
	subnets := make([]subnet, 0, len(ids))
	for _, id := range ids {
		s, err := ec2.LookupSubnet(ctx, &ec2.LookupSubnetArgs{Id: &id}, opts...)
		if err != nil {
			return nil, fmt.Errorf("reading subnet %s: %w", id, err)
		}
		subnets = append(subnets, subnet{ID: s.Id, AZ: s.AvailabilityZone, Name: s.Tags["Name"]})
	}
	return subnets, nil
}

// checkSubnets enforces what EKS and VPC CNI custom networking need: private
// subnets in at least two AZs (EKS rejects fewer), exactly one pod subnet per
// AZ (an ENIConfig names one subnet), and a pod subnet in every AZ that has a
// private subnet (a node there would otherwise get no pod addresses).
func checkSubnets(private, pods []subnet) ([]string, map[string]string, error) {
	var errs []error
	privateIDs := make([]string, 0, len(private))
	privateAZs := map[string]bool{}
	for _, s := range private {
		privateIDs = append(privateIDs, s.ID)
		privateAZs[s.AZ] = true
	}
	if len(privateAZs) < 2 {
		errs = append(errs, fmt.Errorf("private subnets %s span %d availability zone(s); EKS needs at least 2",
			describe(private), len(privateAZs)))
	}
	podByAZ := map[string]string{}
	for _, s := range pods {
		if other, dup := podByAZ[s.AZ]; dup {
			errs = append(errs, fmt.Errorf("pod subnets %s and %s are both in %s; custom networking takes one pod subnet per availability zone",
				other, s.ID, s.AZ))
			continue
		}
		podByAZ[s.AZ] = s.ID
	}
	for _, az := range slices.Sorted(maps.Keys(privateAZs)) {
		if _, ok := podByAZ[az]; !ok {
			errs = append(errs, fmt.Errorf("no pod subnet in %s, where private subnets exist; nodes there would get no pod addresses", az))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return privateIDs, podByAZ, nil
}

func describe(subnets []subnet) string {
	parts := make([]string, len(subnets))
	for i, s := range subnets {
		parts[i] = fmt.Sprintf("%s (%s)", s.ID, s.AZ)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
