package recovery

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/testkit/moto"
)

// motoCase is a recovery lookup run for real, through the AWS CLI, against
// moto: seed makes the object beside a decoy the lookup must not return
// (and returns the inputs the create sent that depend on it, and the ID
// the provider expects); without seed's object, the lookup says absent.
type motoCase struct {
	typ  string
	seed func(t *testing.T, s *moto.Server) (inputs map[string]any, id string)
	// noObject are the inputs of the create when nothing was made; nil
	// makes them with absentInputs.
	noObject map[string]any
	// undecided is why an object that exists is not adopted.
	undecided string
}

func motoVpc(t *testing.T, s *moto.Server, cidr string) string {
	var out struct{ Vpc struct{ VpcId string } }
	moto.Field(t, s.AWS(t, nil, "ec2", "create-vpc", "--cidr-block", cidr), &out)
	return out.Vpc.VpcId
}

func motoSubnet(t *testing.T, s *moto.Server, vpc, cidr string) string {
	var out struct{ Subnet struct{ SubnetId string } }
	moto.Field(t, s.AWS(t, nil, "ec2", "create-subnet", "--vpc-id", vpc, "--cidr-block", cidr, "--availability-zone", moto.Region+"a"), &out)
	return out.Subnet.SubnetId
}

func motoQueue(t *testing.T, s *moto.Server, name string) string {
	var out struct{ QueueUrl string }
	moto.Field(t, s.AWS(t, nil, "sqs", "create-queue", "--queue-name", name), &out)
	return out.QueueUrl
}

func motoNat(t *testing.T, s *moto.Server, subnet, name string) string {
	var eip struct{ AllocationId string }
	moto.Field(t, s.AWS(t, nil, "ec2", "allocate-address", "--domain", "vpc"), &eip)
	var out struct{ NatGateway struct{ NatGatewayId string } }
	moto.Field(t, s.AWS(t, nil, "ec2", "create-nat-gateway", "--subnet-id", subnet, "--allocation-id", eip.AllocationId,
		"--tag-specifications", "ResourceType=natgateway,Tags=[{Key=Name,Value="+name+"}]"), &out)
	return out.NatGateway.NatGatewayId
}

var motoCases = []motoCase{
	{typ: "aws:sqs/queue:Queue", noObject: map[string]any{"name": "eks-demo-karpenter-interruption-5d4c3b2"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			motoQueue(t, s, "eks-demo-karpenter-interruption-5d4c3b2-old") // a decoy whose name starts alike
			return map[string]any{"name": "eks-demo-karpenter-interruption-5d4c3b2"}, motoQueue(t, s, "eks-demo-karpenter-interruption-5d4c3b2")
		}},
	// moto ignores DescribeNatGateways' tag filters, so the decoy is one
	// of the same tags in another subnet: the subnet filter must hold.
	{typ: "aws:ec2/natGateway:NatGateway",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			vpc := motoVpc(t, s, "10.20.0.0/16")
			mine, other := motoSubnet(t, s, vpc, "10.20.0.0/24"), motoSubnet(t, s, vpc, "10.20.1.0/24")
			motoNat(t, s, other, "eks-demo-nat-eu-west-1a")
			return map[string]any{"subnetId": mine, "tags": map[string]any{"Name": "eks-demo-nat-eu-west-1a"}}, motoNat(t, s, mine, "eks-demo-nat-eu-west-1a")
		}},
	{typ: "aws:eks/cluster:Cluster", noObject: map[string]any{"name": "eks-demo"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			role := "arn:aws:iam::" + moto.Account + ":role/eks-demo-cluster-0c1d2e3"
			s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo-old", "--role-arn", role, "--resources-vpc-config", "subnetIds=subnet-1")
			s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", role, "--resources-vpc-config", "subnetIds=subnet-1")
			return map[string]any{"name": "eks-demo", "roleArn": role}, "eks-demo"
		}},
	{typ: "aws:eks/fargateProfile:FargateProfile", noObject: map[string]any{"clusterName": "eks-demo", "fargateProfileName": "eks-demo-karpenter-6b7c8d9"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			role := "arn:aws:iam::" + moto.Account + ":role/eks-demo-cluster"
			s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", role, "--resources-vpc-config", "subnetIds=subnet-1")
			for _, name := range []string{"eks-demo-karpenter-old", "eks-demo-karpenter-6b7c8d9"} {
				s.AWS(t, nil, "eks", "create-fargate-profile", "--cluster-name", "eks-demo", "--fargate-profile-name", name,
					"--pod-execution-role-arn", role, "--subnets", "subnet-1", "--selectors", "namespace=karpenter")
			}
			return map[string]any{"clusterName": "eks-demo", "fargateProfileName": "eks-demo-karpenter-6b7c8d9"}, "eks-demo:eks-demo-karpenter-6b7c8d9"
		}},
}

// motoLookups answer through the real AWS CLI (through moto's wrapper).
func motoLookups() *CLILookups {
	return &CLILookups{Run: awscli.Exec, Poll: 10 * time.Millisecond}
}

// TestLookupsAgainstMoto runs every lookup of the types the recovery
// decides by itself that moto can answer, for real, each beside a decoy:
// the object exists (imported, with the ID its provider expects, made
// after testSince: moto makes it now; or reported where nothing tells its
// age), and it does not (cleared). CONTRIBUTING.md lists what moto cannot
// answer.
func TestLookupsAgainstMoto(t *testing.T) {
	for _, tc := range motoCases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Run("exists", func(t *testing.T) {
				s := moto.Start(t)
				inputs, id := tc.seed(t, s)
				verdicts, err := Plan(context.Background(), state(pendingCreate(tc.typ, "pending", maps.Clone(inputs))), motoLookups(), Options{Since: testSince})
				require.NoError(t, err)
				v := verdicts[0]
				if tc.undecided != "" {
					assert.Equal(t, Undecided, v.Outcome, v.Why)
					assert.Contains(t, v.Why, tc.undecided)
					return
				}
				assert.Equal(t, Import, v.Outcome, v.Why)
				assert.Equal(t, id, v.ID)
			})
			t.Run("absent", func(t *testing.T) {
				s := moto.Start(t)
				inputs := tc.noObject
				if inputs == nil { // what it needs must exist; only the object is missing
					inputs = tc.absentInputs(t, s)
				}
				verdicts, err := Plan(context.Background(), state(pendingCreate(tc.typ, "pending", maps.Clone(inputs))), motoLookups(), Options{Since: testSince})
				require.NoError(t, err)
				assert.Equal(t, Clear, verdicts[0].Outcome, verdicts[0].Why)
			})
		})
	}
}

// absentInputs are inputs whose parents exist, for the kinds whose
// lookup needs them: a queue without a policy, a subnet without a NAT
// gateway (beside a decoy of its tags in another).
func (tc motoCase) absentInputs(t *testing.T, s *moto.Server) map[string]any {
	switch tc.typ {
	case "aws:ec2/natGateway:NatGateway":
		vpc := motoVpc(t, s, "10.20.0.0/16")
		mine, other := motoSubnet(t, s, vpc, "10.20.0.0/24"), motoSubnet(t, s, vpc, "10.20.1.0/24")
		motoNat(t, s, other, "eks-demo-nat-eu-west-1a")
		return map[string]any{"subnetId": mine, "tags": map[string]any{"Name": "eks-demo-nat-eu-west-1a"}}
	}
	t.Fatalf("%s: no inputs for the absent case", tc.typ)
	return nil
}

// TestWhatMotoCannotAnswerStaysUndecided: moto 5.2.1 has no EKS add-ons,
// and answers their calls with an HTML 404. That is no "not found" of
// EKS's (ResourceNotFoundException), so nothing is cleared.
func TestWhatMotoCannotAnswerStaysUndecided(t *testing.T) {
	s := moto.Start(t)
	s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", "arn:aws:iam::"+moto.Account+":role/c",
		"--resources-vpc-config", "subnetIds=subnet-1")
	verdicts, err := Plan(context.Background(), state(pendingCreate("aws:eks/addon:Addon", "pending",
		map[string]any{"clusterName": "eks-demo", "addonName": "coredns"})), motoLookups(), Options{Since: testSince})
	require.NoError(t, err)
	assert.Equal(t, Undecided, verdicts[0].Outcome, verdicts[0].Why)
}

// TestTheProvidersAccountAgainstMoto: the object is in another account,
// reached through the provider's role. The recovery's answer from the
// ambient account (where nothing exists) would clear it; it assumes the
// role, proves the account with sts get-caller-identity, and finds it.
func TestTheProvidersAccountAgainstMoto(t *testing.T) {
	s := moto.Start(t)
	other := s.In(t, moto.Other, "deploy-admin")
	var queue struct{ QueueUrl string }
	moto.Field(t, s.AWS(t, other, "sqs", "create-queue", "--queue-name", "deploy-prod"), &queue)

	op := pendingCreate("aws:sqs/queue:Queue", "q", map[string]any{"name": "deploy-prod"})
	provider := testStack + "pulumi:providers:aws::account-prod"
	op.Resource.Provider = provider + "::p2"
	d := state(op)
	d.Resources = append(d.Resources, Resource{URN: provider, Type: "pulumi:providers:aws", Custom: true, ID: "p2", Inputs: map[string]any{
		"region": moto.Region, "allowedAccountIds": `["` + moto.Other + `"]`,
		"assumeRole": `{"roleArn":"arn:aws:iam::` + moto.Other + `:role/deploy-admin"}`}})
	verdicts, err := Plan(context.Background(), d, motoLookups(), Options{Since: testSince})
	require.NoError(t, err)
	assert.Equal(t, Import, verdicts[0].Outcome, verdicts[0].Why)
	assert.Equal(t, queue.QueueUrl, verdicts[0].ID)

	// Without the role the credentials are the ambient account's, where
	// moto has no such queue: that "not found" is refused, not believed.
	d.Resources[len(d.Resources)-1].Inputs = map[string]any{"region": moto.Region, "allowedAccountIds": `["` + moto.Other + `"]`}
	verdicts, err = Plan(context.Background(), d, motoLookups(), Options{Since: testSince})
	require.NoError(t, err)
	assert.Equal(t, Undecided, verdicts[0].Outcome)
	assert.Contains(t, verdicts[0].Why, "the AWS credentials are for account "+moto.Account+", and the resource's provider reaches "+moto.Other)
}
