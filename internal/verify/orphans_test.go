package verify

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubAWS answers like an account holding two clusters' leftovers; it
// ignores filters, so the sweep's own checks are what the tests see.
type stubAWS struct {
	instanceFilters, templateFilters []ec2types.Filter
	profilePrefix                    string
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
