package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
)

// EC2API is what the sweep asks EC2; *ec2.Client satisfies it.
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DescribeVolumes(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
}

// ELBAPI is what the sweep asks Elastic Load Balancing;
// *elasticloadbalancingv2.Client satisfies it.
type ELBAPI interface {
	DescribeLoadBalancers(context.Context, *elb.DescribeLoadBalancersInput, ...func(*elb.Options)) (*elb.DescribeLoadBalancersOutput, error)
	DescribeTargetGroups(context.Context, *elb.DescribeTargetGroupsInput, ...func(*elb.Options)) (*elb.DescribeTargetGroupsOutput, error)
	DescribeTags(context.Context, *elb.DescribeTagsInput, ...func(*elb.Options)) (*elb.DescribeTagsOutput, error)
}

// IAMAPI is what the sweep asks IAM; *iam.Client satisfies it.
type IAMAPI interface {
	ListInstanceProfiles(context.Context, *iam.ListInstanceProfilesInput, ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error)
}

// Orphans are what Karpenter, the EBS CSI driver and the LB controller
// created for a cluster and left behind.
type Orphans struct {
	Instances, LaunchTemplates, InstanceProfiles         []string
	Volumes, LoadBalancers, TargetGroups, SecurityGroups []string
}

// Empty reports whether nothing was left behind.
func (o Orphans) Empty() bool {
	return len(o.Instances)+len(o.LaunchTemplates)+len(o.InstanceProfiles)+
		len(o.Volumes)+len(o.LoadBalancers)+len(o.TargetGroups)+len(o.SecurityGroups) == 0
}

func (o Orphans) String() string {
	return fmt.Sprintf("instances %v, launch templates %v, instance profiles %v, EBS volumes %v, load balancers %v, target groups %v, security groups %v",
		o.Instances, o.LaunchTemplates, o.InstanceProfiles, o.Volumes, o.LoadBalancers, o.TargetGroups, o.SecurityGroups)
}

// Tags the EBS CSI driver and the LB controller put on what they create:
// CSIVolumeName on every volume, naming its PersistentVolume
// (aws-ebs-csi-driver docs/tagging.md), and elbv2.k8s.aws/cluster on load
// balancers, target groups and security groups (aws-load-balancer-controller
// docs/guide/ingress/annotations.md, "resource tags").
const (
	csiVolumeNameTag = "CSIVolumeName"
	lbClusterTag     = "elbv2.k8s.aws/cluster"
)

// FindWorkloadOrphans lists the EBS volumes of the given PersistentVolumes
// that still exist, and the load balancers, target groups and security
// groups the LB controller tagged for the cluster.
func FindWorkloadOrphans(ctx context.Context, ec2c EC2API, elbc ELBAPI, cluster string, volumeNames []string) (Orphans, error) {
	var out Orphans
	if len(volumeNames) > 0 {
		volumes, err := ec2c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + csiVolumeNameTag), Values: volumeNames},
		}})
		if err != nil {
			return out, fmt.Errorf("describing volumes: %w", err)
		}
		for _, v := range volumes.Volumes {
			for _, name := range volumeNames {
				if hasTag(v.Tags, csiVolumeNameTag, name) && v.State != ec2types.VolumeStateDeleted {
					out.Volumes = append(out.Volumes, fmt.Sprintf("%s (%s)", aws.ToString(v.VolumeId), name))
				}
			}
		}
	}
	groups, err := ec2c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + lbClusterTag), Values: []string{cluster}},
	}})
	if err != nil {
		return out, fmt.Errorf("describing security groups: %w", err)
	}
	for _, g := range groups.SecurityGroups {
		if hasTag(g.Tags, lbClusterTag, cluster) {
			out.SecurityGroups = append(out.SecurityGroups, aws.ToString(g.GroupId))
		}
	}
	// Both lists are paged (400 a page): follow every page.
	var lbArns, tgArns []string
	for lbs := elb.NewDescribeLoadBalancersPaginator(elbc, &elb.DescribeLoadBalancersInput{}); lbs.HasMorePages(); {
		page, err := lbs.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("describing load balancers: %w", err)
		}
		for _, lb := range page.LoadBalancers {
			lbArns = append(lbArns, aws.ToString(lb.LoadBalancerArn))
		}
	}
	for tgs := elb.NewDescribeTargetGroupsPaginator(elbc, &elb.DescribeTargetGroupsInput{}); tgs.HasMorePages(); {
		page, err := tgs.NextPage(ctx)
		if err != nil {
			return out, fmt.Errorf("describing target groups: %w", err)
		}
		for _, tg := range page.TargetGroups {
			tgArns = append(tgArns, aws.ToString(tg.TargetGroupArn))
		}
	}
	if out.LoadBalancers, err = taggedFor(ctx, elbc, lbArns, cluster); err != nil {
		return out, err
	}
	out.TargetGroups, err = taggedFor(ctx, elbc, tgArns, cluster)
	return out, err
}

// taggedFor returns the ARNs that carry the LB controller's tag for
// cluster, asking for tags 20 at a time (DescribeTags' limit).
func taggedFor(ctx context.Context, elbc ELBAPI, arns []string, cluster string) ([]string, error) {
	var out []string
	for start := 0; start < len(arns); start += 20 {
		batch := arns[start:min(start+20, len(arns))]
		tags, err := elbc.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: batch})
		if err != nil {
			return nil, fmt.Errorf("describing tags of load balancing resources: %w", err)
		}
		for _, d := range tags.TagDescriptions {
			for _, t := range d.Tags {
				if aws.ToString(t.Key) == lbClusterTag && aws.ToString(t.Value) == cluster {
					out = append(out, aws.ToString(d.ResourceArn))
				}
			}
		}
	}
	return out, nil
}

// Tags and names Karpenter puts on what it creates (pkg/apis/v1/labels.go).
const (
	eksClusterNameTag    = "eks:eks-cluster-name"
	launchTemplatePrefix = "karpenter.k8s.aws/"
)

// ownedTag is the tag Karpenter must put on everything it launches for
// the cluster (the controller policy allows nothing else).
func ownedTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// InstanceProfilePath is where Karpenter creates the instance profiles of
// a cluster's EC2NodeClasses.
func InstanceProfilePath(region, cluster string) string {
	return "/karpenter/" + region + "/" + cluster + "/"
}

// FindOrphans lists the cluster's instances that are not terminated, and
// its Karpenter launch templates and instance profiles. It filters on the
// server and checks the tags again itself.
func FindOrphans(ctx context.Context, ec2c EC2API, iamc IAMAPI, region, cluster string) (Orphans, error) {
	var out Orphans
	instances, err := ec2c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + ownedTag(cluster)), Values: []string{"owned"}},
	}})
	if err != nil {
		return out, fmt.Errorf("describing instances: %w", err)
	}
	for _, r := range instances.Reservations {
		for _, i := range r.Instances {
			if i.State != nil && i.State.Name == ec2types.InstanceStateNameTerminated {
				continue
			}
			if hasTag(i.Tags, ownedTag(cluster), "owned") {
				out.Instances = append(out.Instances, fmt.Sprintf("%s (%s)", aws.ToString(i.InstanceId), stateName(i.State)))
			}
		}
	}
	// Karpenter finds its own launch templates this way (its
	// pkg/providers/launchtemplate): by cluster tag and name prefix.
	templates, err := ec2c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + eksClusterNameTag), Values: []string{cluster}},
	}})
	if err != nil {
		return out, fmt.Errorf("describing launch templates: %w", err)
	}
	for _, lt := range templates.LaunchTemplates {
		name := aws.ToString(lt.LaunchTemplateName)
		if hasTag(lt.Tags, eksClusterNameTag, cluster) && strings.HasPrefix(name, launchTemplatePrefix) {
			out.LaunchTemplates = append(out.LaunchTemplates, name)
		}
	}
	path := InstanceProfilePath(region, cluster)
	profiles, err := iamc.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(path)})
	if err != nil {
		return out, fmt.Errorf("listing instance profiles: %w", err)
	}
	for _, p := range profiles.InstanceProfiles {
		if strings.HasPrefix(aws.ToString(p.Path), path) {
			out.InstanceProfiles = append(out.InstanceProfiles, aws.ToString(p.InstanceProfileName))
		}
	}
	return out, nil
}

func hasTag(tags []ec2types.Tag, key, value string) bool {
	for _, t := range tags {
		if aws.ToString(t.Key) == key && aws.ToString(t.Value) == value {
			return true
		}
	}
	return false
}

func stateName(s *ec2types.InstanceState) string {
	if s == nil {
		return "unknown"
	}
	return string(s.Name)
}
