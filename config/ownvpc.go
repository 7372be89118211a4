package config

import (
	"errors"
	"fmt"

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
// it would exceed: AWS would refuse the VPC, or the NAT gateways' addresses
// after the VPC and its subnets exist, minutes into `pulumi up`.
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
	if len(own.Ids) > 0 {
		return nil // made by an earlier `pulumi up`: it counts against the quotas already
	}
	nats := 1
	if c.NatGateways == cluster.NatPerAz {
		nats = len(c.Zones)
	}
	var errs []error
	all, err := ec2.GetVpcs(ctx, &ec2.GetVpcsArgs{})
	if err == nil {
		err = checkRoom(ctx, c, vpcQuota, len(all.Ids), 1, "a VPC", "or set vpcName to an existing VPC")
	}
	errs = append(errs, err)
	eips, err := ec2.GetEips(ctx, &ec2.GetEipsArgs{})
	if err == nil {
		otherwise := "or set vpcName to an existing VPC"
		if nats > 1 {
			otherwise = fmt.Sprintf("set natGateways %q (one address), %s", cluster.NatSingle, otherwise)
		}
		err = checkRoom(ctx, c, eipQuota, len(eips.AllocationIds), nats, fmt.Sprintf("%d Elastic IP address(es) for its NAT gateway(s)", nats), otherwise)
	}
	return errors.Join(append(errs, err)...)
}

// checkRoom refuses when used plus want exceeds q in the region.
func checkRoom(ctx *pulumi.Context, c *Config, q quota, used, want int, what, otherwise string) error {
	// pulumi-aws's getServiceQuota answers the account's applied value, or
	// AWS's default where none was ever applied (terraform-provider-aws
	// internal/service/servicequotas/service_quota_data_source.go).
	got, err := servicequotas.LookupServiceQuota(ctx, &servicequotas.LookupServiceQuotaArgs{
		ServiceCode: q.service, QuotaCode: pulumi.StringRef(q.code),
	})
	if err != nil {
		return fmt.Errorf("vpcName unset: reading the quota %q (%s, servicequotas:GetServiceQuota) of %s, for the VPC the stack makes: %w",
			q.name, q.code, c.Region, err)
	}
	if limit := int(got.Value); used+want > limit {
		return fmt.Errorf("vpcName unset: the stack would make %s in %s, where the account uses %d of its quota %q (%s) of %d: AWS would "+
			"refuse it minutes into `pulumi up`. Release what you no longer use, raise the quota (aws service-quotas "+
			"request-service-quota-increase --region %s --service-code %s --quota-code %s --desired-value %d), %s",
			what, c.Region, used, q.name, q.code, limit, c.Region, q.service, q.code, used+want, otherwise)
	}
	return nil
}
