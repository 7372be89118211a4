package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"nodeless-eks/cluster"
	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/servicequotas"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The Service Quotas that a VPC the stack makes counts against, with AWS's
// defaults of 5 each (VPC user guide, amazon-vpc-limits.html; EC2 user
// guide, elastic-ip-addresses-eip.html#using-instance-addressing-limit).
var (
	vpcQuota = quota{service: "vpc", code: "L-F678F1CE", name: "VPCs per Region"}
	eipQuota = quota{service: "ec2", code: "L-0263D0A3", name: "EC2-VPC Elastic IPs"}
)

type quota struct{ service, code, name string }

// preflightOwnVpc chooses the zones of the VPC the stack makes, and, while
// the stack has none yet, refuses a region whose VPC or Elastic IP quota
// it would exceed: AWS would refuse the VPC or the NAT gateways' addresses,
// the first creates, seconds into `pulumi up`, with an error that does not
// say which quota.
func preflightOwnVpc(ctx *pulumi.Context, c *Config) error {
	zones, err := aws.GetAvailabilityZones(ctx, &aws.GetAvailabilityZonesArgs{
		State: pulumi.StringRef("available"),
		// Zones an account must opt in to (Local Zones) cannot hold EKS.
		Filters: []aws.GetAvailabilityZonesFilter{{Name: "opt-in-status", Values: []string{"opt-in-not-required"}}},
	})
	if err != nil {
		return fmt.Errorf("vpcName unset: listing the availability zones of %s (ec2:DescribeAvailabilityZones), for the VPC the stack "+
			"makes: %w", c.Region, err)
	}
	kept, dropped := cluster.EKSZones(zones.Names, zones.ZoneIds)
	if len(kept) < 2 {
		return fmt.Errorf("vpcName unset: %s has %d availability zone(s) that EKS accepts (%v; not %v), and EKS needs two: "+
			"choose another aws:region, or set vpcName to a VPC whose subnets span two zones", c.Region, len(kept), kept, dropped)
	}
	c.Zones = kept[:min(len(kept), cluster.VpcZones)]

	own, err := ec2.GetVpcs(ctx, &ec2.GetVpcsArgs{Tags: map[string]string{names.ClusterTagKey: c.ClusterName}})
	if err != nil {
		return fmt.Errorf("vpcName unset: looking for the VPC this stack made (ec2:DescribeVpcs, tag %s=%s): %w",
			names.ClusterTagKey, c.ClusterName, err)
	}
	nats := 1
	if c.NatGateways == cluster.NatPerAz {
		nats = len(c.Zones)
	}
	var errs []error
	switch len(own.Ids) {
	case 0:
		all, err := ec2.GetVpcs(ctx, &ec2.GetVpcsArgs{})
		if err == nil {
			err = checkRoom(ctx, c, vpcQuota, len(all.Ids), 1, "a VPC", "or set vpcName to an existing VPC")
		}
		errs = append(errs, err)
	case 1:
		// Made by an earlier `pulumi up`: it counts against the quota
		// already, and its zones and CIDR stay what they are.
		errs = append(errs, c.keepOwnVpc(ctx, own.Ids[0]))
		if len(c.Zones) > 0 && c.NatGateways == cluster.NatPerAz {
			nats = len(c.Zones)
		}
	default:
		return fmt.Errorf("vpcName unset: %d VPCs in %s carry %s=%s (%v), which only the VPC this stack made should: remove the "+
			"tag from the others, or set vpcName", len(own.Ids), c.Region, names.ClusterTagKey, c.ClusterName, own.Ids)
	}
	// The addresses its NAT gateways hold already count; only more need room.
	owned, err := ec2.GetEips(ctx, &ec2.GetEipsArgs{Tags: map[string]string{names.ClusterTagKey: c.ClusterName}})
	if err == nil && nats > len(owned.AllocationIds) {
		var eips *ec2.GetEipsResult
		if eips, err = ec2.GetEips(ctx, &ec2.GetEipsArgs{}); err == nil {
			more := nats - len(owned.AllocationIds)
			otherwise := "or set vpcName to an existing VPC"
			if nats > 1 {
				otherwise = fmt.Sprintf("set natGateways %q (one address), %s", cluster.NatSingle, otherwise)
			}
			err = checkRoom(ctx, c, eipQuota, len(eips.AllocationIds), more, fmt.Sprintf("%d Elastic IP address(es) for its NAT gateway(s)", more), otherwise)
		}
	}
	return errors.Join(append(errs, err)...)
}

// keepOwnVpc holds the configuration to the VPC an earlier `pulumi up`
// made: its zones are the ones its private subnets are in (a zone that
// became unavailable, or a new one that sorts first, must not move a
// subnet: EKS takes new subnets only in the zones it was created with,
// EKS user guide network-reqs), and a primary CIDR cannot change without
// replacing the VPC and everything in it.
func (c *Config) keepOwnVpc(ctx *pulumi.Context, id string) error {
	vpc, err := ec2.LookupVpc(ctx, &ec2.LookupVpcArgs{Id: pulumi.StringRef(id)})
	if err != nil {
		return fmt.Errorf("vpcName unset: reading the VPC %s this stack made (ec2:DescribeVpcs): %w", id, err)
	}
	if vpc.CidrBlock != c.VpcCidrBlock {
		return fmt.Errorf("vpcCidrBlock %q: the VPC %s this stack made has %s, and a VPC's primary CIDR cannot change: the VPC, "+
			"its subnets and the cluster in them would be replaced. Set vpcCidrBlock %q", c.VpcCidrBlock, id, vpc.CidrBlock, vpc.CidrBlock)
	}
	private, err := ec2.GetSubnets(ctx, &ec2.GetSubnetsArgs{Filters: []ec2.GetSubnetsFilter{
		{Name: "vpc-id", Values: []string{id}}, {Name: "tag:Name", Values: []string{c.ClusterName + "-" + cluster.TierPrivate + "-*"}},
	}})
	if err != nil {
		return fmt.Errorf("vpcName unset: reading the private subnets of the VPC %s this stack made (ec2:DescribeSubnets): %w", id, err)
	}
	var zones []string
	for _, sid := range private.Ids {
		s, err := ec2.LookupSubnet(ctx, &ec2.LookupSubnetArgs{Id: pulumi.StringRef(sid)})
		if err != nil {
			return fmt.Errorf("vpcName unset: reading subnet %s of the VPC this stack made: %w", sid, err)
		}
		zones = append(zones, s.AvailabilityZone)
	}
	if len(zones) > 0 { // none: an earlier `up` stopped before the subnets; choose as for a new VPC
		slices.Sort(zones)
		c.Zones = slices.Compact(zones)
	}
	// Its route tables, and whether their default routes are Route
	// resources yet (cluster.RouteTable); AWS's main table carries no tag.
	// A table with no default route has none to adopt: its Route is made.
	tables, err := ec2.GetRouteTables(ctx, &ec2.GetRouteTablesArgs{VpcId: pulumi.StringRef(id), Tags: map[string]string{names.ClusterTagKey: c.ClusterName}})
	if err != nil {
		return fmt.Errorf("vpcName unset: reading the route tables of the VPC %s this stack made (ec2:DescribeRouteTables): %w", id, err)
	}
	c.OwnRouteTables = map[string]cluster.RouteTable{}
	for _, rid := range tables.Ids {
		t, err := ec2.LookupRouteTable(ctx, &ec2.LookupRouteTableArgs{RouteTableId: pulumi.StringRef(rid)})
		if err != nil {
			return fmt.Errorf("vpcName unset: reading route table %s of the VPC this stack made: %w", rid, err)
		}
		inline := slices.ContainsFunc(t.Routes, func(r ec2.GetRouteTableRoute) bool { return r.CidrBlock == "0.0.0.0/0" })
		c.OwnRouteTables[t.Tags["Name"]] = cluster.RouteTable{ID: rid, Separate: t.Tags[cluster.RoutesTagKey] != "" || !inline}
	}
	return nil
}

// checkRoom refuses when used plus want exceeds q in the region.
func checkRoom(ctx *pulumi.Context, c *Config, q quota, used, want int, what, otherwise string) error {
	// pulumi-aws's getServiceQuota answers the account's applied value, or
	// AWS's default where none was ever applied (terraform-provider-aws
	// internal/service/servicequotas/service_quota_data_source.go).
	got, err := servicequotas.LookupServiceQuota(ctx, &servicequotas.LookupServiceQuotaArgs{
		ServiceCode: q.service, QuotaCode: pulumi.StringRef(q.code),
	})
	// A caller an SCP or a least-privilege policy keeps from Service
	// Quotas (AccessDeniedException, its JSON protocol's code) proves no
	// shortfall: AWS's own refusal comes seconds in, so a warning says
	// what is not checked.
	if err != nil && strings.Contains(err.Error(), "AccessDenied") {
		c.Warnings = append(c.Warnings, fmt.Sprintf("vpcName unset: the quota %q (%s) of %s was not checked: reading it was refused "+
			"(servicequotas:GetServiceQuota and GetAWSDefaultServiceQuota). The stack would make %s, where the account uses %d; if "+
			"that exceeds the quota, AWS refuses the first create", q.name, q.code, c.Region, what, used))
		return nil
	}
	if err != nil {
		return fmt.Errorf("vpcName unset: reading the quota %q (%s; servicequotas:GetAWSDefaultServiceQuota and GetServiceQuota) of %s, for the VPC the stack makes: %w",
			q.name, q.code, c.Region, err)
	}
	if limit := int(got.Value); used+want > limit {
		return fmt.Errorf("vpcName unset: the stack would make %s in %s, where the account uses %d of its quota %q (%s) of %d: AWS would "+
			"refuse it seconds into `pulumi up`. Release what you no longer use, raise the quota (aws service-quotas "+
			"request-service-quota-increase --region %s --service-code %s --quota-code %s --desired-value %d), %s",
			what, c.Region, used, q.name, q.code, limit, c.Region, q.service, q.code, used+want, otherwise)
	}
	return nil
}
