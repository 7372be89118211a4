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

	"nodeless-eks/internal/names"
)

const vpcTypeToken = "nodeless-eks:cluster:Vpc"

// VpcArgs name an existing VPC and its subnets by Name tag, or, when
// VpcName is "", describe the VPC the stack makes (Own).
type VpcArgs struct {
	// VpcName is the existing VPC's Name tag; "" makes one (Own).
	VpcName string
	// PrivateSubnetNamePattern is an EC2 filter pattern ('*' and '?') on the
	// private subnets' Name tags. They must span at least two AZs. Required
	// with VpcName.
	PrivateSubnetNamePattern string
	// PodSubnetNamePattern is an EC2 filter pattern on the pod subnets' Name
	// tags: exactly one per AZ, covering every AZ of the private subnets.
	// Required with VpcName.
	PodSubnetNamePattern string
	// Own describes the VPC to make. Required without VpcName.
	Own *OwnVpc
}

// Vpc is the stack's network: a VPC looked up, which it creates nothing
// in (the lookups run while the program runs, so every value is known
// before the first resource that needs it is registered), or one the
// stack makes, whose values are its resources' outputs.
type Vpc struct {
	pulumi.ResourceState

	// ID is the VPC's id; Arn its ARN.
	ID, Arn pulumi.StringOutput
	// PrivateSubnetIDs are the private subnets, sorted by id when looked up
	// and by zone when made.
	PrivateSubnetIDs pulumi.StringArrayOutput
	// PodSubnetIDsByAZ maps each availability zone to its pod subnet; its
	// keys decide how many ENIConfigs exist, so they are plain, known
	// while the program runs (the component registers all three as its
	// outputs vpcId, privateSubnetIds and podSubnetIds).
	PodSubnetIDsByAZ map[string]pulumi.StringOutput
	// Egress is what the private and pod subnets need to reach the
	// internet (NAT gateways, routes, associations): empty for a VPC
	// looked up, which has its own. Whatever runs a pod waits for it.
	Egress []pulumi.Resource
	// Made reports that the stack made the VPC; Owned is then every
	// resource of it, deleted after whatever runs in the VPC, and Subnets
	// the VPC and its subnets, which nothing the cluster's parts left in
	// them may outlast.
	Made           bool
	Owned, Subnets []pulumi.Resource
}

// NewVpc looks up the VPC and its subnets, failing with a message that says
// what was searched for when a lookup finds too little, or makes the VPC
// args.Own describes.
func NewVpc(ctx *pulumi.Context, name string, args *VpcArgs, opts ...pulumi.ResourceOption) (*Vpc, error) {
	switch {
	case args == nil:
		return nil, fmt.Errorf("vpc %q: args are required", name)
	case args.VpcName == "" && args.Own == nil:
		return nil, fmt.Errorf("vpc %q: VpcName or Own is required", name)
	case args.VpcName != "" && (args.PrivateSubnetNamePattern == "" || args.PodSubnetNamePattern == ""):
		return nil, fmt.Errorf("vpc %q: PrivateSubnetNamePattern and PodSubnetNamePattern are required with VpcName", name)
	case args.VpcName == "":
		if err := args.Own.validate(); err != nil {
			return nil, fmt.Errorf("vpc %q: %w", name, err)
		}
	}
	v := &Vpc{}
	if err := ctx.RegisterComponentResource(vpcTypeToken, name, v, opts...); err != nil {
		return nil, err
	}
	var err error
	if args.VpcName == "" {
		err = v.make(ctx, name, args.Own)
	} else {
		err = v.lookUp(ctx, args)
	}
	if err != nil {
		return nil, err
	}
	pods := pulumi.StringMap{}
	for az, id := range v.PodSubnetIDsByAZ {
		pods[az] = id
	}
	if err := ctx.RegisterResourceOutputs(v, pulumi.Map{
		"vpcId":            v.ID,
		"privateSubnetIds": v.PrivateSubnetIDs,
		"podSubnetIds":     pods,
	}); err != nil {
		return nil, err
	}
	return v, nil
}

// lookUp finds the VPC args name and its subnets.
func (v *Vpc) lookUp(ctx *pulumi.Context, args *VpcArgs) error {
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
			hint = "; more than one VPC carries that name: give yours a name of its own and set vpcName and the subnet patterns " +
				"to it, or unset all three and the stack makes its own VPC"
		}
		return fmt.Errorf("looking up VPC with Name tag %q (config vpcName): %w%s", args.VpcName, err, hint)
	}
	// A VPC a stack made is that stack's: its destroy sweeps the VPC for
	// what its cluster left (internal/cleanup, network.go), and a stack
	// that stops making it deletes it.
	if maker := vpc.Tags[names.ClusterTagKey]; maker != "" {
		return fmt.Errorf("vpcName %q: VPC %s was made by the stack of cluster %s (tag %s=%s), whose destroy sweeps it and which "+
			"deletes it if it stops making it: name a VPC no stack made, or, if it is this stack's own, unset vpcName and the subnet "+
			"patterns so that the stack keeps making it", args.VpcName, vpc.Id, maker, names.ClusterTagKey, maker)
	}

	private, err := lookupSubnets(ctx, vpc.Id, args.PrivateSubnetNamePattern, parent)
	if err != nil {
		return fmt.Errorf("looking up private subnets (config privateSubnetNamePattern): %w", err)
	}
	pods, err := lookupSubnets(ctx, vpc.Id, args.PodSubnetNamePattern, parent)
	if err != nil {
		return fmt.Errorf("looking up pod subnets (config podSubnetNamePattern): %w", err)
	}
	privateIDs, podIDs, err := checkSubnets(private, pods)
	if err != nil {
		return fmt.Errorf("vpc %q (%s): %w", args.VpcName, vpc.Id, err)
	}
	v.ID, v.Arn = pulumi.String(vpc.Id).ToStringOutput(), pulumi.String(vpc.Arn).ToStringOutput()
	v.PrivateSubnetIDs = pulumi.ToStringArray(privateIDs).ToStringArrayOutput()
	v.PodSubnetIDsByAZ = map[string]pulumi.StringOutput{}
	for az, id := range podIDs {
		v.PodSubnetIDsByAZ[az] = pulumi.String(id).ToStringOutput()
	}
	return nil
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
