package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/kubeapi"
)

// scenario is one resource type's pending create, with the answers that
// make its object exist and be absent.
type scenario struct {
	// golden names the dev stack's registration whose inputs the create
	// sent ("" for types the root program does not register); inputs are
	// laid over them (the autonames the provider's Check adds).
	golden string
	inputs map[string]any
	// exists makes the object exist, with import ID id; absent makes AWS,
	// the cluster or Pulumi Cloud say it is not there.
	exists, absent func(f *fixture)
	id             string
	// undecided is why an object that exists is not adopted ("" when it
	// is imported).
	undecided string
}

var roleInputs = map[string]any{"name": "eks-demo-addons-ebs-csi-1a2b3c4"}

// scenarios cover every inventory type that has something to find.
var scenarios = map[string]scenario{
	"aws:sqs/queue:Queue": {
		golden: "aws:sqs/queue:Queue::eks-demo-karpenter-interruption-queue", inputs: map[string]any{"name": "eks-demo-karpenter-interruption-queue-5d4c3b2"},
		id: "https://sqs.eu-west-1.amazonaws.com/123456789012/eks-demo-karpenter-interruption-queue-5d4c3b2",
		exists: func(f *fixture) {
			f.aws.answer("sqs get-queue-url", map[string]any{"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/eks-demo-karpenter-interruption-queue-5d4c3b2"})
			f.aws.answer("sqs get-queue-attributes", map[string]any{"Attributes": map[string]any{"CreatedTimestamp": "1796115600"}}) // testCreated
		},
		absent: func(f *fixture) { f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue") },
	},
	"aws:sqs/queuePolicy:QueuePolicy": {
		golden: "aws:sqs/queuePolicy:QueuePolicy::eks-demo-karpenter-interruption-queue",
		id:     "https://sqs.eu-west-1.amazonaws.com/123456789012/eks-demo-karpenter-interruption-queue-7f3a",
		exists: func(f *fixture) {
			f.aws.answer("sqs get-queue-attributes", map[string]any{"Attributes": map[string]any{"Policy": `{"Statement":[]}`}})
		},
		undecided: "AWS gives it no creation time",
		absent:    func(f *fixture) { f.aws.answer("sqs get-queue-attributes", map[string]any{}) },
	},
	"aws:cloudwatch/eventRule:EventRule": {
		golden: "aws:cloudwatch/eventRule:EventRule::eks-demo-karpenter-spot", inputs: map[string]any{"name": "eks-demo-karpenter-spot-0a1b2c3"},
		id: "eks-demo-karpenter-spot-0a1b2c3",
		exists: func(f *fixture) {
			f.aws.answer("events describe-rule", map[string]any{"Name": "eks-demo-karpenter-spot-0a1b2c3"})
		},
		undecided: "AWS gives it no creation time",
		absent:    func(f *fixture) { f.aws.refuse("events describe-rule", "ResourceNotFoundException") },
	},
	"aws:cloudwatch/eventTarget:EventTarget": {
		golden: "aws:cloudwatch/eventTarget:EventTarget::eks-demo-karpenter-spot",
		id:     "eks-demo-karpenter-spot-7f3a/KarpenterInterruptionQueueTarget",
		exists: func(f *fixture) {
			f.aws.answer("events list-targets-by-rule", map[string]any{"Targets": []any{map[string]any{"Id": "KarpenterInterruptionQueueTarget"}}})
		},
		undecided: "AWS gives it no creation time",
		absent:    func(f *fixture) { f.aws.answer("events list-targets-by-rule", map[string]any{"Targets": []any{}}) },
	},
	"aws:ec2/vpc:Vpc": {
		inputs: map[string]any{"cidrBlock": "10.20.0.0/16", "tags": map[string]any{"Name": "eks-demo", "nodeless-eks-vpc/stack": "nodeless-eks-vpc/dev"}},
		id:     "vpc-new",
		exists: func(f *fixture) {
			f.aws.on("ec2 describe-vpcs", func(a []string) awsAnswer {
				if filterOf(a, "tag:nodeless-eks-vpc/stack") != "nodeless-eks-vpc/dev" || filterOf(a, "cidr-block") != "10.20.0.0/16" {
					return awsAnswer{code: "FilterNotAsExpected"}
				}
				// The stack's earlier VPC matches too, and the state holds it.
				return awsAnswer{out: map[string]any{"Vpcs": []any{map[string]any{"VpcId": "vpc-held"}, map[string]any{"VpcId": "vpc-new"}}}}
			})
		},
		undecided: "vpc-new exists, but AWS gives it no creation time",
		absent: func(f *fixture) {
			f.aws.answer("ec2 describe-vpcs", map[string]any{"Vpcs": []any{map[string]any{"VpcId": "vpc-held"}}})
		},
	},
	"aws:ec2/eip:Eip": {
		inputs: map[string]any{"domain": "vpc", "tags": map[string]any{"Name": "eks-demo-nat-eu-west-1a"}}, id: "eipalloc-1",
		exists: func(f *fixture) {
			f.aws.answer("ec2 describe-addresses", map[string]any{"Addresses": []any{map[string]any{"AllocationId": "eipalloc-1"}}})
		},
		undecided: "eipalloc-1 exists, but AWS gives it no creation time",
		absent:    func(f *fixture) { f.aws.answer("ec2 describe-addresses", map[string]any{"Addresses": []any{}}) },
	},
	"aws:ec2/natGateway:NatGateway": {
		inputs: map[string]any{"subnetId": "subnet-1", "allocationId": "eipalloc-1", "tags": map[string]any{"Name": "eks-demo-eu-west-1a"}}, id: "nat-1",
		exists: func(f *fixture) {
			f.aws.on("ec2 describe-nat-gateways", func(a []string) awsAnswer {
				if a[0] != "--filter" { // DescribeNatGateways takes --filter
					return awsAnswer{code: "UnknownParameter"}
				}
				return awsAnswer{out: map[string]any{"NatGateways": []any{map[string]any{"NatGatewayId": "nat-1", "State": "pending", "CreateTime": testCreated}}}}
			})
		},
		absent: func(f *fixture) { f.aws.answer("ec2 describe-nat-gateways", map[string]any{"NatGateways": []any{}}) },
	},
	"aws:eks/cluster:Cluster": {
		inputs: map[string]any{"name": "eks-demo", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster-0c1d2e3"}, id: "eks-demo",
		exists: func(f *fixture) {
			f.aws.answer("eks describe-cluster", map[string]any{"cluster": map[string]any{"status": "ACTIVE", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster-0c1d2e3", "createdAt": testCreated}})
		},
		absent: func(f *fixture) { f.aws.refuse("eks describe-cluster", "ResourceNotFoundException") },
	},
	"aws:eks/fargateProfile:FargateProfile": {
		golden: "aws:eks/fargateProfile:FargateProfile::eks-demo-karpenter", inputs: map[string]any{"fargateProfileName": "eks-demo-karpenter-6b7c8d9"},
		id: "eks-demo:eks-demo-karpenter-6b7c8d9",
		exists: func(f *fixture) {
			f.aws.answer("eks describe-fargate-profile", map[string]any{"fargateProfile": map[string]any{"status": "ACTIVE", "createdAt": testCreated}})
		},
		absent: func(f *fixture) { f.aws.refuse("eks describe-fargate-profile", "ResourceNotFoundException") },
	},
	"aws:eks/addon:Addon": {
		golden: "aws:eks/addon:Addon::eks-demo-addons-coredns", id: "eks-demo:coredns",
		exists: func(f *fixture) {
			f.aws.answer("eks describe-addon", map[string]any{"addon": map[string]any{"status": "ACTIVE", "createdAt": testCreated}})
		},
		absent: func(f *fixture) { f.aws.refuse("eks describe-addon", "ResourceNotFoundException") },
	},
	helmRelease: {
		golden: "kubernetes:helm.sh/v3:Release::eks-demo-karpenter-controller", id: "karpenter/karpenter",
		exists: func(f *fixture) { f.kube.helmRecord("karpenter", "karpenter", 1, "deployed") },
		absent: func(f *fixture) { f.kube.helmRecord("karpenter", "karpenter-crd", 1, "deployed") },
	},
	"command:local:Command": {
		golden: "command:local:Command::eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes",
		absent: func(*fixture) {},
	},
}

// kmsAccount is an account's keys: an AWS managed one, the one the state
// holds, an unrelated one, and the one the cut-off create made, in state.
func kmsAccount(f *fixture, newKeyState string) {
	f.aws.answer("kms list-keys", map[string]any{"Keys": []any{map[string]any{"KeyId": "key-aws"}, map[string]any{"KeyId": "key-held"},
		map[string]any{"KeyId": "key-other"}, map[string]any{"KeyId": "key-staging"}, map[string]any{"KeyId": "key-new"}}})
	f.aws.answer("kms list-aliases", map[string]any{"Aliases": []any{map[string]any{"AliasName": "alias/aws/ebs", "TargetKeyId": "key-aws"}}})
	// The dev stack's tags (environment, owner) and the cluster's; key-staging
	// is another stack's key of the same cluster name.
	tags := map[string][2]string{"key-held": {"eks-demo", "dev"}, "key-other": {"another-cluster", "dev"}, "key-staging": {"eks-demo", "staging"},
		"key-new": {"eks-demo", "dev"}}
	f.aws.on("kms list-resource-tags", func(a []string) awsAnswer {
		tag, ok := tags[arg(a, "--key-id")]
		if !ok {
			return awsAnswer{code: "AccessDeniedException"}
		}
		return awsAnswer{out: map[string]any{"Tags": []any{map[string]any{"TagKey": "nodeless-eks/cluster", "TagValue": tag[0]},
			map[string]any{"TagKey": "environment", "TagValue": tag[1]}, map[string]any{"TagKey": "owner", "TagValue": "platform-team"}}}}
	})
	f.aws.answer("kms describe-key", map[string]any{"KeyMetadata": map[string]any{"KeyState": newKeyState}})
}

func cidrAssociations(f *fixture, state string) {
	f.aws.answer("ec2 describe-vpcs", map[string]any{"Vpcs": []any{map[string]any{"CidrBlockAssociationSet": []any{
		map[string]any{"AssociationId": "vpc-cidr-assoc-1", "CidrBlock": "10.20.0.0/16", "CidrBlockState": map[string]any{"State": "associated"}},
		map[string]any{"AssociationId": "vpc-cidr-assoc-2", "CidrBlock": "100.64.0.0/16", "CidrBlockState": map[string]any{"State": state}}}}}})
}

// heldObjects are the objects of the scenarios' types that the stack
// already holds, which a search by tags also finds.
var heldObjects = map[string]string{"aws:ec2/vpc:Vpc": "vpc-held", "aws:kms/key:Key": "key-held"}

// scenarioOp is the pending create of a scenario, in a state that holds
// the stack's earlier objects.
func scenarioOp(t *testing.T, typ string, sc scenario) (*Deployment, Operation) {
	inputs := map[string]any{}
	if sc.golden != "" {
		reg, ok := registered(t)[sc.golden]
		require.True(t, ok, "the dev stack registers %s", sc.golden)
		maps.Copy(inputs, reg)
	}
	maps.Copy(inputs, sc.inputs)
	op := pendingCreate(typ, "pending", inputs)
	d := state(op)
	if id, ok := heldObjects[typ]; ok {
		d.Resources = append(d.Resources, Resource{URN: testStack + typ + "::earlier", Type: typ, Custom: true, ID: id})
	}
	return d, op
}

func verdictOf(t *testing.T, f *fixture, d *Deployment) Verdict {
	t.Helper()
	verdicts, err := Plan(context.Background(), d, f.lookups(), Options{Since: testSince})
	require.NoError(t, err)
	require.Len(t, verdicts, 1)
	return verdicts[0]
}

// TestEveryKindIsImportedClearedOrReported runs each type's pending
// create three ways: its object exists (imported, with the ID its
// provider's docs give), it does not (cleared), and the backend cannot be
// read (a report that names the resource and the command, and nothing
// imported or cleared).
func TestEveryKindIsImportedClearedOrReported(t *testing.T) {
	for typ, kind := range Inventory {
		if kind.Find == nil {
			continue
		}
		sc, ok := scenarios[typ]
		if !assert.True(t, ok, "%s has a finder and no scenario: add one", typ) {
			continue
		}
		t.Run(typ, func(t *testing.T) {
			if sc.exists != nil {
				t.Run("exists", func(t *testing.T) {
					f := newFixture(t)
					sc.exists(f)
					d, _ := scenarioOp(t, typ, sc)
					v := verdictOf(t, f, d)
					assertDeclaredActions(t, kind, f.aws.calls)
					if sc.undecided != "" {
						assert.Equal(t, Undecided, v.Outcome, v.Why)
						assert.Contains(t, v.Why, sc.undecided)
						return
					}
					assert.Equal(t, Import, v.Outcome, v.Why)
					assert.Equal(t, sc.id, v.ID)
				})
			}
			t.Run("absent", func(t *testing.T) {
				f := newFixture(t)
				sc.absent(f)
				d, _ := scenarioOp(t, typ, sc)
				v := verdictOf(t, f, d)
				assert.Equal(t, Clear, v.Outcome, v.Why)
				assert.Empty(t, v.ID)
				assertDeclaredActions(t, kind, f.aws.calls)
			})
			t.Run("cannot tell", func(t *testing.T) {
				f := newFixture(t)
				if sc.exists != nil {
					sc.exists(f)
				}
				f.aws.failAll = "AccessDenied"
				f.kube.err = &kubeapi.StatusError{Code: http.StatusForbidden, Message: "forbidden"}
				d, op := scenarioOp(t, typ, sc)
				if typ == "command:local:Command" {
					op.Resource.Inputs["create"] = "touch /tmp/x"
					d.PendingOperations[0] = op
				}
				v := verdictOf(t, f, d)
				assert.Equal(t, Undecided, v.Outcome, v.Why)
				var report bytes.Buffer
				Report(&report, "dev", []Verdict{v})
				assert.Contains(t, report.String(), op.Resource.URN, "the report names the resource")
				assert.Contains(t, report.String(), "go run ./cmd/recover-pending -stack dev -import '"+op.Resource.URN+"=<ID>'",
					"and the command a person runs")
				assert.Contains(t, report.String(), "-clear '"+op.Resource.URN+"'")
				assert.NotContains(t, report.String(), "--clear-pending-creates", "which clears every pending create")
			})
		})
	}
}

// assertDeclaredActions checks that every AWS call a finder made is an
// action its Kind declares, so that deploy/'s test of the deploy roles
// checks what the recovery really calls.
func assertDeclaredActions(t *testing.T, kind Kind, calls []string) {
	t.Helper()
	for _, call := range calls {
		parts := strings.Fields(call)
		if parts[0] == "sts" && parts[1] == "get-caller-identity" {
			continue
		}
		op := ""
		for _, w := range strings.Split(parts[1], "-") {
			op += strings.ToUpper(w[:1]) + w[1:]
		}
		action := parts[0] + ":" + strings.ReplaceAll(op, "OpenIdConnect", "OpenIDConnect")
		assert.Contains(t, kind.Actions, action, "aws %s is not among the actions the inventory declares", call)
	}
}

func TestInventoryEntriesSayWhatTheyAre(t *testing.T) {
	for typ, kind := range Inventory {
		assert.NotEmpty(t, kind.Leaves, "%s: what does a cut-off create leave?", typ)
		if kind.Find != nil && typ != "command:local:Command" {
			assert.NotEmpty(t, kind.Finds, "%s: how is it found?", typ)
			assert.NotEmpty(t, kind.ID, "%s: its import ID", typ)
			assert.NotEmpty(t, kind.Source, "%s: where the ID format is stated", typ)
		}
	}
	for typ := range scenarios {
		assert.Contains(t, Inventory, typ, "a scenario of a type the inventory does not know")
	}
}

// TestRootProgramTypesAreInTheInventory: every type the root program
// registers (the golden its graph test writes over every stack
// configuration), and the children of the remote components it uses.
func TestRootProgramTypesAreInTheInventory(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/registered-types.golden.json")
	require.NoError(t, err)
	var golden struct{ Resources []string }
	require.NoError(t, json.Unmarshal(raw, &golden))
	types := golden.Resources
	require.NotEmpty(t, types)
	// pulumi-eks v3.9.1 creates, for the program's options
	// (SkipDefaultSecurityGroups, no node group, CreateOidcProvider, its own
	// service role only when the program gives none): nodejs/eks/cluster/cluster.ts
	// and servicerole.ts. The LB controller's ConfigGroup holds CRDs only.
	types = append(types, "aws:eks/cluster:Cluster", "aws:iam/openIdConnectProvider:OpenIdConnectProvider", "eks:index:ServiceRole",
		"aws:iam/role:Role", "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "pulumi:providers:kubernetes",
		"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
		// The default providers and the stack.
		"pulumi:pulumi:Stack", "pulumi:providers:aws", "pulumi:providers:eks", "pulumi:providers:command")
	for _, typ := range types {
		assert.Contains(t, Inventory, typ, "the root program registers %s: add it to the recovery's inventory", typ)
	}
}

func TestReportNamesWhatToRun(t *testing.T) {
	v := Verdict{Op: pendingCreate("aws:iam/role:Role", "r", nil), Outcome: Undecided, Why: "AccessDenied", Next: importOrClear(testStack + "aws:iam/role:Role::r")}
	var b bytes.Buffer
	Report(&b, "prod", []Verdict{v})
	assert.Contains(t, b.String(), "undecided r (aws:iam/role:Role, creating): AccessDenied")
	assert.Contains(t, b.String(), "`go run ./cmd/recover-pending -stack prod -import '"+testStack+"aws:iam/role:Role::r=<ID>'`")
	assert.Contains(t, b.String(), "`go run ./cmd/recover-pending -stack prod -clear '"+testStack+"aws:iam/role:Role::r'`")
	assert.NotContains(t, b.String(), "--import-pending-creates", "Pulumi's flag drops the object from the state (docs/recovery.md)")
	assert.NotContains(t, b.String(), "--clear-pending-creates", "Pulumi's flag clears every pending create")
}
