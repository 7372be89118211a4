package recovery

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/testkit/moto"
)

// motoCase is a recovery lookup run for real, through the AWS CLI, against
// moto: seed makes the object (and returns the inputs the create sent
// that depend on it, and the ID the provider expects); without seed's
// object, the lookup says absent.
type motoCase struct {
	typ  string
	seed func(t *testing.T, s *moto.Server) (inputs map[string]any, id string)
	// noObject are the inputs of the create when nothing was made.
	noObject map[string]any
	// undecided is why an object that exists is not adopted.
	undecided string
}

const trust = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"eks.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

func motoVpc(t *testing.T, s *moto.Server, cidr string, tags ...string) string {
	args := []string{"ec2", "create-vpc", "--cidr-block", cidr}
	if len(tags) > 0 {
		args = append(args, "--tag-specifications", "ResourceType=vpc,Tags=["+strings.Join(tags, ",")+"]")
	}
	var out struct{ Vpc struct{ VpcId string } }
	moto.Field(t, s.AWS(t, nil, args...), &out)
	return out.Vpc.VpcId
}

func motoQueue(t *testing.T, s *moto.Server, name string) string {
	var out struct{ QueueUrl string }
	moto.Field(t, s.AWS(t, nil, "sqs", "create-queue", "--queue-name", name), &out)
	return out.QueueUrl
}

var motoCases = []motoCase{
	{typ: "aws:iam/role:Role", noObject: map[string]any{"name": "eks-demo-r-1a2b3c4"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "iam", "create-role", "--role-name", "eks-demo-r-1a2b3c4", "--assume-role-policy-document", trust)
			return map[string]any{"name": "eks-demo-r-1a2b3c4"}, "eks-demo-r-1a2b3c4"
		}},
	{typ: "aws:iam/policy:Policy", noObject: map[string]any{"name": "eks-demo-p-9f8e7d6"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "iam", "create-policy", "--policy-name", "eks-demo-p-9f8e7d6", "--policy-document",
				`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:ReceiveMessage","Resource":"*"}]}`)
			return map[string]any{"name": "eks-demo-p-9f8e7d6"}, "arn:aws:iam::" + moto.Account + ":policy/eks-demo-p-9f8e7d6"
		}},
	{typ: "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
		noObject: map[string]any{"role": "eks-demo-node", "policyArn": "arn:aws:iam::" + moto.Account + ":policy/nodes"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "iam", "create-role", "--role-name", "eks-demo-node", "--assume-role-policy-document", trust)
			policy := "arn:aws:iam::" + moto.Account + ":policy/nodes"
			s.AWS(t, nil, "iam", "create-policy", "--policy-name", "nodes", "--policy-document",
				`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ec2:DescribeInstances","Resource":"*"}]}`)
			s.AWS(t, nil, "iam", "attach-role-policy", "--role-name", "eks-demo-node", "--policy-arn", policy)
			return map[string]any{"role": "eks-demo-node", "policyArn": policy}, "eks-demo-node/" + policy
		}},
	{typ: "aws:iam/openIdConnectProvider:OpenIdConnectProvider", noObject: map[string]any{"url": "https://oidc.eks.eu-west-1.amazonaws.com/id/ABC"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "iam", "create-open-id-connect-provider", "--url", "https://oidc.eks.eu-west-1.amazonaws.com/id/ABC",
				"--client-id-list", "sts.amazonaws.com", "--thumbprint-list", strings.Repeat("9e", 20))
			return map[string]any{"url": "https://oidc.eks.eu-west-1.amazonaws.com/id/ABC"},
				"arn:aws:iam::" + moto.Account + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC"
		}},
	{typ: "aws:sqs/queue:Queue", noObject: map[string]any{"name": "eks-demo-karpenter-interruption-5d4c3b2"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			return map[string]any{"name": "eks-demo-karpenter-interruption-5d4c3b2"}, motoQueue(t, s, "eks-demo-karpenter-interruption-5d4c3b2")
		}},
	// The queue exists in both: without a policy, the CLI prints nothing.
	{typ: "aws:sqs/queuePolicy:QueuePolicy",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			url := motoQueue(t, s, "q-with-policy")
			s.AWS(t, nil, "sqs", "set-queue-attributes", "--queue-url", url, "--attributes",
				`{"Policy":"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"events.amazonaws.com\"},\"Action\":\"sqs:SendMessage\",\"Resource\":\"*\"}]}"}`)
			return map[string]any{"queueUrl": url}, url
		}},
	{typ: "aws:cloudwatch/eventRule:EventRule", noObject: map[string]any{"name": "eks-demo-spot-0a1b2c3"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "events", "put-rule", "--name", "eks-demo-spot-0a1b2c3", "--event-pattern", `{"source":["aws.ec2"]}`)
			return map[string]any{"name": "eks-demo-spot-0a1b2c3"}, "eks-demo-spot-0a1b2c3"
		}},
	{typ: "aws:cloudwatch/eventTarget:EventTarget", noObject: map[string]any{"rule": "eks-demo-spot", "targetId": "KarpenterInterruptionQueueTarget"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			url := motoQueue(t, s, "interruptions")
			s.AWS(t, nil, "events", "put-rule", "--name", "eks-demo-spot", "--event-pattern", `{"source":["aws.ec2"]}`)
			s.AWS(t, nil, "events", "put-targets", "--rule", "eks-demo-spot", "--targets",
				`[{"Id":"KarpenterInterruptionQueueTarget","Arn":"arn:aws:sqs:eu-west-1:`+moto.Account+`:interruptions"}]`)
			_ = url
			return map[string]any{"rule": "eks-demo-spot", "targetId": "KarpenterInterruptionQueueTarget"}, "eks-demo-spot/KarpenterInterruptionQueueTarget"
		}},
	{typ: "aws:cloudwatch/logGroup:LogGroup", noObject: map[string]any{"name": "/aws/eks/eks-demo/cluster"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "logs", "create-log-group", "--log-group-name", "/aws/eks/eks-demo/cluster")
			s.AWS(t, nil, "logs", "create-log-group", "--log-group-name", "/aws/eks/eks-demo/cluster-old")
			return map[string]any{"name": "/aws/eks/eks-demo/cluster"}, "/aws/eks/eks-demo/cluster"
		}},
	{typ: "aws:kms/key:Key", noObject: map[string]any{"tags": map[string]any{"nodeless-eks/cluster": "eks-demo"}},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			// Another cluster's key, and a key of this name a person disabled.
			s.AWS(t, nil, "kms", "create-key", "--tags", "TagKey=nodeless-eks/cluster,TagValue=other")
			var old, key struct{ KeyMetadata struct{ KeyId string } }
			moto.Field(t, s.AWS(t, nil, "kms", "create-key", "--tags", "TagKey=nodeless-eks/cluster,TagValue=eks-demo"), &old)
			s.AWS(t, nil, "kms", "disable-key", "--key-id", old.KeyMetadata.KeyId)
			moto.Field(t, s.AWS(t, nil, "kms", "create-key", "--tags", "TagKey=nodeless-eks/cluster,TagValue=eks-demo"), &key)
			return map[string]any{"tags": map[string]any{"nodeless-eks/cluster": "eks-demo"}}, key.KeyMetadata.KeyId
		}},
	{typ: "aws:ec2/vpc:Vpc", noObject: map[string]any{"cidrBlock": "10.20.0.0/16", "tags": map[string]any{"Name": "eks-demo"}},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			motoVpc(t, s, "10.20.0.0/16", "{Key=Name,Value=someone-else}")
			return map[string]any{"cidrBlock": "10.20.0.0/16", "tags": map[string]any{"Name": "eks-demo"}},
				motoVpc(t, s, "10.20.0.0/16", "{Key=Name,Value=eks-demo}")
		}},
	{typ: "aws:ec2/subnet:Subnet",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			vpc := motoVpc(t, s, "10.20.0.0/16")
			var out struct{ Subnet struct{ SubnetId string } }
			moto.Field(t, s.AWS(t, nil, "ec2", "create-subnet", "--vpc-id", vpc, "--cidr-block", "10.20.32.0/19", "--availability-zone", "eu-west-1a"), &out)
			return map[string]any{"vpcId": vpc, "cidrBlock": "10.20.32.0/19"}, out.Subnet.SubnetId
		}},
	{typ: "aws:ec2/internetGateway:InternetGateway",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			vpc := motoVpc(t, s, "10.20.0.0/16")
			var out struct {
				InternetGateway struct{ InternetGatewayId string }
			}
			moto.Field(t, s.AWS(t, nil, "ec2", "create-internet-gateway", "--tag-specifications",
				"ResourceType=internet-gateway,Tags=[{Key=Name,Value=eks-demo}]"), &out)
			s.AWS(t, nil, "ec2", "attach-internet-gateway", "--internet-gateway-id", out.InternetGateway.InternetGatewayId, "--vpc-id", vpc)
			return map[string]any{"vpcId": vpc, "tags": map[string]any{"Name": "eks-demo"}}, out.InternetGateway.InternetGatewayId
		}},
	{typ: "aws:ec2/eip:Eip", noObject: map[string]any{"domain": "vpc", "tags": map[string]any{"Name": "eks-demo-nat-eu-west-1a"}},
		undecided: "carries its tags, and nothing tells this create's from an earlier stack's leftover",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			s.AWS(t, nil, "ec2", "allocate-address", "--domain", "vpc", "--tag-specifications",
				"ResourceType=elastic-ip,Tags=[{Key=Name,Value=eks-demo-nat-eu-west-1a}]")
			return map[string]any{"domain": "vpc", "tags": map[string]any{"Name": "eks-demo-nat-eu-west-1a"}}, ""
		}},
	{typ: "aws:ec2/securityGroup:SecurityGroup",
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			vpc := motoVpc(t, s, "10.20.0.0/16")
			var out struct{ GroupId string }
			moto.Field(t, s.AWS(t, nil, "ec2", "create-security-group", "--group-name", "eks-demo-node-3e4f5a6", "--description", "nodes",
				"--vpc-id", vpc), &out)
			return map[string]any{"name": "eks-demo-node-3e4f5a6", "vpcId": vpc}, out.GroupId
		}},
	{typ: "aws:eks/cluster:Cluster", noObject: map[string]any{"name": "eks-demo"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			role := "arn:aws:iam::" + moto.Account + ":role/eks-demo-cluster-0c1d2e3"
			s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", role, "--resources-vpc-config", "subnetIds=subnet-1")
			return map[string]any{"name": "eks-demo", "roleArn": role}, "eks-demo"
		}},
	{typ: "aws:eks/fargateProfile:FargateProfile", noObject: map[string]any{"clusterName": "eks-demo", "fargateProfileName": "eks-demo-karpenter-6b7c8d9"},
		seed: func(t *testing.T, s *moto.Server) (map[string]any, string) {
			role := "arn:aws:iam::" + moto.Account + ":role/eks-demo-cluster"
			s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", role, "--resources-vpc-config", "subnetIds=subnet-1")
			s.AWS(t, nil, "eks", "create-fargate-profile", "--cluster-name", "eks-demo", "--fargate-profile-name", "eks-demo-karpenter-6b7c8d9",
				"--pod-execution-role-arn", role, "--subnets", "subnet-1", "--selectors", "namespace=karpenter")
			return map[string]any{"clusterName": "eks-demo", "fargateProfileName": "eks-demo-karpenter-6b7c8d9"}, "eks-demo:eks-demo-karpenter-6b7c8d9"
		}},
}

// motoLookups answer through the real AWS CLI (through moto's wrapper).
func motoLookups() *CLILookups {
	return &CLILookups{Run: Exec, ClusterName: "eks-demo", Cluster: AWSAccess{Region: moto.Region}, Poll: 10 * time.Millisecond}
}

// TestLookupsAgainstMoto runs every recovery lookup moto can answer, for
// real: the object exists (imported, with the ID its provider expects, or
// reported where nothing proves it is this create's), and it does not
// (cleared). CONTRIBUTING.md lists what moto cannot answer.
func TestLookupsAgainstMoto(t *testing.T) {
	for _, tc := range motoCases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Run("exists", func(t *testing.T) {
				s := moto.Start(t)
				inputs, id := tc.seed(t, s)
				verdicts, err := Plan(context.Background(), state(pendingCreate(tc.typ, "pending", maps.Clone(inputs))), motoLookups(), Options{})
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
				verdicts, err := Plan(context.Background(), state(pendingCreate(tc.typ, "pending", maps.Clone(inputs))), motoLookups(), Options{})
				require.NoError(t, err)
				assert.Equal(t, Clear, verdicts[0].Outcome, verdicts[0].Why)
			})
		})
	}
}

// absentInputs are inputs whose parents exist, for the kinds whose
// lookup needs them: a queue without a policy, a VPC without the subnet
// or security group.
func (tc motoCase) absentInputs(t *testing.T, s *moto.Server) map[string]any {
	switch tc.typ {
	case "aws:sqs/queuePolicy:QueuePolicy":
		return map[string]any{"queueUrl": motoQueue(t, s, "q-without-policy")}
	case "aws:ec2/subnet:Subnet":
		return map[string]any{"vpcId": motoVpc(t, s, "10.20.0.0/16"), "cidrBlock": "10.20.32.0/19"}
	case "aws:ec2/internetGateway:InternetGateway":
		return map[string]any{"vpcId": motoVpc(t, s, "10.20.0.0/16"), "tags": map[string]any{"Name": "eks-demo"}}
	case "aws:ec2/securityGroup:SecurityGroup":
		return map[string]any{"name": "eks-demo-node-3e4f5a6", "vpcId": motoVpc(t, s, "10.20.0.0/16")}
	}
	t.Fatalf("%s: no inputs for the absent case", tc.typ)
	return nil
}

// TestWhatMotoCannotAnswerStaysUndecided: moto 5.2.1 has no EKS add-ons,
// access entries or pod identity associations, and answers their calls
// with an HTML 404. That is no "not found" of EKS's
// (ResourceNotFoundException), so nothing is cleared.
func TestWhatMotoCannotAnswerStaysUndecided(t *testing.T) {
	s := moto.Start(t)
	s.AWS(t, nil, "eks", "create-cluster", "--name", "eks-demo", "--role-arn", "arn:aws:iam::"+moto.Account+":role/c",
		"--resources-vpc-config", "subnetIds=subnet-1")
	for typ, inputs := range map[string]map[string]any{
		"aws:eks/addon:Addon":             {"clusterName": "eks-demo", "addonName": "coredns"},
		"aws:eks/accessEntry:AccessEntry": {"clusterName": "eks-demo", "principalArn": "arn:aws:iam::" + moto.Account + ":role/eks-demo-node"},
		"aws:eks/podIdentityAssociation:PodIdentityAssociation": {"clusterName": "eks-demo", "namespace": "kube-system",
			"serviceAccount": "ebs-csi-controller-sa"},
	} {
		verdicts, err := Plan(context.Background(), state(pendingCreate(typ, "pending", inputs)), motoLookups(), Options{})
		require.NoError(t, err)
		assert.Equal(t, Undecided, verdicts[0].Outcome, "%s: %s", typ, verdicts[0].Why)
	}
}

// TestTheProvidersAccountAgainstMoto: the object is in another account,
// reached through the provider's role. The recovery's answer from the
// ambient account (where nothing exists) would clear it; it assumes the
// role, proves the account with sts get-caller-identity, and finds it.
func TestTheProvidersAccountAgainstMoto(t *testing.T) {
	s := moto.Start(t)
	other := s.In(t, moto.Other, "deploy-admin")
	s.AWS(t, other, "iam", "create-role", "--role-name", "deploy-prod", "--assume-role-policy-document", trust)

	op := pendingCreate("aws:iam/role:Role", "r", map[string]any{"name": "deploy-prod"})
	provider := testStack + "pulumi:providers:aws::account-prod"
	op.Resource.Provider = provider + "::p2"
	d := state(op)
	d.Resources = append(d.Resources, Resource{URN: provider, Type: "pulumi:providers:aws", Custom: true, ID: "p2", Inputs: map[string]any{
		"region": moto.Region, "allowedAccountIds": `["` + moto.Other + `"]`,
		"assumeRole": `{"roleArn":"arn:aws:iam::` + moto.Other + `:role/deploy-admin"}`}})
	verdicts, err := Plan(context.Background(), d, motoLookups(), Options{})
	require.NoError(t, err)
	assert.Equal(t, Import, verdicts[0].Outcome, verdicts[0].Why)
	assert.Equal(t, "deploy-prod", verdicts[0].ID)

	// Without the role the credentials are the ambient account's, where
	// moto has no such role: that "not found" is refused, not believed.
	d.Resources[len(d.Resources)-1].Inputs = map[string]any{"region": moto.Region, "allowedAccountIds": `["` + moto.Other + `"]`}
	verdicts, err = Plan(context.Background(), d, motoLookups(), Options{})
	require.NoError(t, err)
	assert.Equal(t, Undecided, verdicts[0].Outcome)
	assert.Contains(t, verdicts[0].Why, "the AWS credentials are for account "+moto.Account+", and the resource's provider reaches "+moto.Other)
}
