package cleanup

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/testkit/moto"
)

// TestEKSProofAgainstMoto asks moto's EKS, through the real AWS CLI, as
// the cleanup asks when the API server does not answer: the cluster lives
// in another account than the ambient credentials'. From the ambient
// account EKS says "not found" of every cluster there; the cleanup
// refuses that answer, and believes only the one from the cluster's own
// account, reached through the kubeconfig's role.
func TestEKSProofAgainstMoto(t *testing.T) {
	s := moto.Start(t)
	other := s.In(t, moto.Other, "deployer")
	s.AWS(t, other, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", "arn:aws:iam::"+moto.Other+":role/eks-demo-cluster",
		"--resources-vpc-config", "subnetIds=subnet-1")
	var described struct {
		Cluster struct {
			Arn       string
			CreatedAt awscli.Time `json:"createdAt"`
		} `json:"cluster"`
	}
	require.NoError(t, json.Unmarshal(s.AWS(t, other, "eks", "describe-cluster", "--name", "eks-demo"), &described))
	require.False(t, described.Cluster.CreatedAt.IsZero(), "the image's CLI prints EKS's createdAt as epoch seconds; it is read")
	created := described.Cluster.CreatedAt.Format(time.RFC3339) // as pulumi-aws gives it
	arn := "arn:aws:eks:" + moto.Region + ":" + moto.Other + ":cluster/eks-demo"
	require.Equal(t, arn, described.Cluster.Arn)
	_, err := s.Try(nil, "eks", "describe-cluster", "--name", "eks-demo")
	require.ErrorContains(t, err, "ResourceNotFoundException", "from the ambient account, moto says not found")

	ctx := context.Background()
	t.Run("the ambient account's not found is refused", func(t *testing.T) {
		c := eksCluster{Name: "eks-demo", Region: moto.Region, Arn: arn, CreatedAt: created}
		_, _, err := c.exists(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the credentials the kubeconfig uses are for account "+moto.Account)
		assert.Contains(t, err.Error(), "cluster eks-demo is in account "+moto.Other)
	})
	t.Run("through the kubeconfig's role, the cluster's account says ACTIVE", func(t *testing.T) {
		c := eksCluster{Name: "eks-demo", Region: moto.Region, Access: roleAccess("arn:aws:iam::" + moto.Other + ":role/deployer"), Arn: arn, CreatedAt: created}
		ok, status, err := c.exists(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "ACTIVE", status)
	})
	t.Run("a cluster of that name created at another time is refused, naming both times", func(t *testing.T) {
		recorded := described.Cluster.CreatedAt.Add(-48 * time.Hour).UTC().Format(time.RFC3339)
		c := eksCluster{Name: "eks-demo", Region: moto.Region, Access: roleAccess("arn:aws:iam::" + moto.Other + ":role/deployer"), Arn: arn,
			CreatedAt: recorded}
		_, _, err := c.exists(ctx)
		require.ErrorContains(t, err, "exists, created "+described.Cluster.CreatedAt.UTC().Format(time.RFC3339)+
			", while the stack recorded the cluster it made as created "+recorded)
	})
	t.Run("gone from its own account: proven", func(t *testing.T) {
		s.AWS(t, other, "eks", "delete-cluster", "--name", "eks-demo")
		c := eksCluster{Name: "eks-demo", Region: moto.Region, Access: roleAccess("arn:aws:iam::" + moto.Other + ":role/deployer"), Arn: arn, CreatedAt: created}
		ok, _, err := c.exists(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
	})
	t.Run("a kept volume is marked in the cluster's account, through the kubeconfig's role", func(t *testing.T) {
		var v struct{ VolumeId string }
		moto.Field(t, s.AWS(t, other, "ec2", "create-volume", "--availability-zone", moto.Region+"a", "--size", "1"), &v)
		c := eksCluster{Name: "eks-demo", Access: roleAccess("arn:aws:iam::" + moto.Other + ":role/deployer"), Arn: arn}
		require.NoError(t, c.markKept(ctx, map[string]string{v.VolumeId: "pv-data"}))
		var tags struct{ Tags []tag }
		moto.Field(t, s.AWS(t, other, "ec2", "describe-tags", "--filters", "Name=resource-id,Values="+v.VolumeId), &tags)
		assert.Equal(t, "pv-data", tagOf(tags.Tags, KeptTagKey))
	})
	t.Run("a region other than the ARN's is refused before any call", func(t *testing.T) {
		c := eksCluster{Name: "eks-demo", Region: "us-east-1", Arn: arn}
		_, _, err := c.exists(ctx)
		require.ErrorContains(t, err, "the kubeconfig asks EKS in us-east-1, and the cluster is in "+moto.Region)
	})
}
