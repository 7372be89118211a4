package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
)

// EC2API is what the sweep asks EC2; *ec2.Client satisfies it.
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
}

// IAMAPI is what the sweep asks IAM; *iam.Client satisfies it.
type IAMAPI interface {
	ListInstanceProfiles(context.Context, *iam.ListInstanceProfilesInput, ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error)
}

// Orphans are what Karpenter created for a cluster and left behind.
type Orphans struct {
	Instances, LaunchTemplates, InstanceProfiles []string
}

// Empty reports whether nothing was left behind.
func (o Orphans) Empty() bool {
	return len(o.Instances)+len(o.LaunchTemplates)+len(o.InstanceProfiles) == 0
}

func (o Orphans) String() string {
	return fmt.Sprintf("instances %v, launch templates %v, instance profiles %v", o.Instances, o.LaunchTemplates, o.InstanceProfiles)
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
