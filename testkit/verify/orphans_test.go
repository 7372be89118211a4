package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubAWS answers like an account holding two clusters' leftovers; it
// ignores filters, so the sweep's own checks are what the tests see.
type stubAWS struct {
	instanceFilters, templateFilters []ec2types.Filter
	volumeFilters, groupFilters      []ec2types.Filter
	profilePrefix                    string
	tagBatches                       []int
}

func tags(kv ...string) []ec2types.Tag {
	var out []ec2types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, ec2types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

func instance(id string, state ec2types.InstanceStateName, t []ec2types.Tag) ec2types.Instance {
	return ec2types.Instance{InstanceId: aws.String(id), State: &ec2types.InstanceState{Name: state}, Tags: t}
}

func (s *stubAWS) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	s.instanceFilters = in.Filters
	ours := tags("kubernetes.io/cluster/eks-demo", "owned", "karpenter.sh/nodepool", "general")
	theirs := tags("kubernetes.io/cluster/other", "owned")
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: []ec2types.Instance{
		instance("i-left", ec2types.InstanceStateNameRunning, ours),
		instance("i-stopping", ec2types.InstanceStateNameShuttingDown, ours),
		instance("i-done", ec2types.InstanceStateNameTerminated, ours),
		instance("i-other", ec2types.InstanceStateNameRunning, theirs),
	}}}}, nil
}

func (s *stubAWS) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	s.templateFilters = in.Filters
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: []ec2types.LaunchTemplate{
		{LaunchTemplateName: aws.String("karpenter.k8s.aws/123"), Tags: tags("eks:eks-cluster-name", "eks-demo")},
		{LaunchTemplateName: aws.String("karpenter.k8s.aws/456"), Tags: tags("eks:eks-cluster-name", "other")},
		{LaunchTemplateName: aws.String("hand-made"), Tags: tags("eks:eks-cluster-name", "eks-demo")},
	}}, nil
}

func (s *stubAWS) ListInstanceProfiles(_ context.Context, in *iam.ListInstanceProfilesInput, _ ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error) {
	s.profilePrefix = aws.ToString(in.PathPrefix)
	return &iam.ListInstanceProfilesOutput{InstanceProfiles: []iamtypes.InstanceProfile{
		{InstanceProfileName: aws.String("eks-demo_1234"), Path: aws.String("/karpenter/eu-west-1/eks-demo/uid-1/")},
		{InstanceProfileName: aws.String("other_1234"), Path: aws.String("/karpenter/eu-west-1/other/uid-2/")},
		{InstanceProfileName: aws.String("eks-demo-prod_1"), Path: aws.String("/karpenter/eu-west-1/eks-demo-prod/uid-3/")},
	}}, nil
}

func (s *stubAWS) DescribeVolumes(_ context.Context, in *ec2.DescribeVolumesInput, _ ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	s.volumeFilters = in.Filters
	return &ec2.DescribeVolumesOutput{Volumes: []ec2types.Volume{
		{VolumeId: aws.String("vol-left"), State: ec2types.VolumeStateAvailable, Tags: tags("CSIVolumeName", "pvc-1")},
		{VolumeId: aws.String("vol-going"), State: ec2types.VolumeStateDeleted, Tags: tags("CSIVolumeName", "pvc-2")},
		{VolumeId: aws.String("vol-other"), State: ec2types.VolumeStateAvailable, Tags: tags("CSIVolumeName", "pvc-9")},
	}}, nil
}

func (s *stubAWS) DescribeSecurityGroups(_ context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	s.groupFilters = in.Filters
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: []ec2types.SecurityGroup{
		{GroupId: aws.String("sg-lb"), Tags: tags("elbv2.k8s.aws/cluster", "eks-demo")},
		{GroupId: aws.String("sg-other"), Tags: tags("elbv2.k8s.aws/cluster", "other")},
	}}, nil
}

func (s *stubAWS) DescribeLoadBalancers(context.Context, *elb.DescribeLoadBalancersInput, ...func(*elb.Options)) (*elb.DescribeLoadBalancersOutput, error) {
	var lbs []elbtypes.LoadBalancer
	for i := range 22 { // more than DescribeTags takes at once
		lbs = append(lbs, elbtypes.LoadBalancer{LoadBalancerArn: aws.String(fmt.Sprintf("arn:lb/%d", i))})
	}
	return &elb.DescribeLoadBalancersOutput{LoadBalancers: lbs}, nil
}

func (s *stubAWS) DescribeTargetGroups(context.Context, *elb.DescribeTargetGroupsInput, ...func(*elb.Options)) (*elb.DescribeTargetGroupsOutput, error) {
	return &elb.DescribeTargetGroupsOutput{TargetGroups: []elbtypes.TargetGroup{{TargetGroupArn: aws.String("arn:tg/1")}}}, nil
}

func (s *stubAWS) DescribeTags(_ context.Context, in *elb.DescribeTagsInput, _ ...func(*elb.Options)) (*elb.DescribeTagsOutput, error) {
	s.tagBatches = append(s.tagBatches, len(in.ResourceArns))
	var out []elbtypes.TagDescription
	for _, arn := range in.ResourceArns {
		cluster := "other"
		if arn == "arn:lb/21" || arn == "arn:tg/1" {
			cluster = "eks-demo"
		}
		out = append(out, elbtypes.TagDescription{ResourceArn: aws.String(arn),
			Tags: []elbtypes.Tag{{Key: aws.String("elbv2.k8s.aws/cluster"), Value: aws.String(cluster)}}})
	}
	return &elb.DescribeTagsOutput{TagDescriptions: out}, nil
}

func TestFindWorkloadOrphans(t *testing.T) {
	stub := &stubAWS{}
	got, err := FindWorkloadOrphans(context.Background(), stub, stub, "eks-demo", []string{"pvc-1", "pvc-2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"vol-left (pvc-1)"}, got.Volumes, "a volume of the test's claims that still exists; deleted and others' are not")
	assert.Equal(t, []string{"sg-lb"}, got.SecurityGroups)
	assert.Equal(t, []string{"arn:lb/21"}, got.LoadBalancers, "found in the second batch of tags")
	assert.Equal(t, []string{"arn:tg/1"}, got.TargetGroups)
	assert.Equal(t, []int{20, 2, 1}, stub.tagBatches, "DescribeTags takes at most 20 ARNs")
	assert.Equal(t, "tag:CSIVolumeName", aws.ToString(stub.volumeFilters[0].Name))
	assert.Equal(t, []string{"eks-demo"}, stub.groupFilters[0].Values)
	assert.False(t, got.Empty())
	assert.Contains(t, got.String(), "EBS volumes [vol-left (pvc-1)]")
}

func TestFindOrphans(t *testing.T) {
	stub := &stubAWS{}
	got, err := FindOrphans(context.Background(), stub, stub, "eu-west-1", "eks-demo")
	require.NoError(t, err)

	t.Run("finds leftover instances, launch templates and instance profiles", func(t *testing.T) {
		assert.Equal(t, []string{"i-left (running)", "i-stopping (shutting-down)"}, got.Instances)
		assert.Equal(t, []string{"karpenter.k8s.aws/123"}, got.LaunchTemplates)
		assert.Equal(t, []string{"eks-demo_1234"}, got.InstanceProfiles)
		assert.False(t, got.Empty())
		assert.Contains(t, got.String(), "i-left")
	})

	t.Run("ignores terminated instances and other clusters' resources", func(t *testing.T) {
		assert.NotContains(t, got.String(), "i-done")
		assert.NotContains(t, got.String(), "i-other")
		assert.NotContains(t, got.String(), "456")
		assert.NotContains(t, got.String(), "eks-demo-prod", "a cluster whose name extends ours is another cluster")
		assert.NotContains(t, got.String(), "hand-made")
	})

	t.Run("asks AWS for this cluster only", func(t *testing.T) {
		require.Len(t, stub.instanceFilters, 1)
		assert.Equal(t, "tag:kubernetes.io/cluster/eks-demo", aws.ToString(stub.instanceFilters[0].Name))
		assert.Equal(t, "tag:eks:eks-cluster-name", aws.ToString(stub.templateFilters[0].Name))
		assert.Equal(t, "/karpenter/eu-west-1/eks-demo/", stub.profilePrefix)
	})

	t.Run("an account with nothing left is empty", func(t *testing.T) {
		assert.True(t, Orphans{}.Empty())
	})
}
