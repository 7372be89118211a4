package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	"aws:ec2/natGateway:NatGateway": {
		inputs: map[string]any{"subnetId": "subnet-1", "allocationId": "eipalloc-1", "tags": map[string]any{"Name": "eks-demo-eu-west-1a"}}, id: "nat-1",
		exists: func(f *fixture) {
			f.aws.on("ec2 describe-nat-gateways", func(a []string) awsAnswer {
				if a[0] != "--filter" { // DescribeNatGateways takes --filter
					return awsAnswer{code: "UnknownParameter"}
				}
				return awsAnswer{out: map[string]any{"NatGateways": []any{map[string]any{"NatGatewayId": "nat-held", "State": "available", "CreateTime": testCreated},
					map[string]any{"NatGatewayId": "nat-1", "State": "pending", "CreateTime": testCreated}}}}
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

	"command:local:Command": {
		golden: "command:local:Command::eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes",
		absent: func(*fixture) {},
	},
}

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
	if typ == "aws:ec2/natGateway:NatGateway" { // one the stack holds, which a search by tags also finds
		d.Resources = append(d.Resources, Resource{URN: testStack + typ + "::earlier", Type: typ, Custom: true, ID: "nat-held"})
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
				if typ == "command:local:Command" {
					// A secret create, as the export holds it: undecided too.
					op.Resource.Inputs["create"] = map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
						"ciphertext": "v1:abc"}
					d.PendingOperations[0] = op
					v := verdictOf(t, f, d)
					assert.Equal(t, Undecided, v.Outcome, v.Why)
				}
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

// TestEveryRegisteredTypeGetsAVerdict: a pending create of any type the
// root program registers (the golden its graph test writes over every
// stack configuration), with no inventory entry needed, is decided, or
// reported for a person with what its create sent and the -import and
// -clear lines; components and providers are cleared.
func TestEveryRegisteredTypeGetsAVerdict(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/registered-types.golden.json")
	require.NoError(t, err)
	var golden struct{ Resources []string }
	require.NoError(t, json.Unmarshal(raw, &golden))
	require.NotEmpty(t, golden.Resources)
	for _, typ := range append(golden.Resources, "pulumi:providers:aws", "nodeless-eks:index:Cluster", "a:new:Type") {
		f := newFixture(t)
		f.aws.failAll = "AccessDenied"
		op := pendingCreate(typ, "pending", map[string]any{"name": "eks-demo-x-1a2b3c", "tags": map[string]any{"nodeless-eks/cluster": "eks-demo"}})
		op.Resource.Custom = !strings.HasPrefix(typ, "nodeless-eks:") || typ == "nodeless-eks:index:DestroyCleanup"
		v := verdictOf(t, f, state(op))
		_, known := Inventory[typ]
		switch {
		case !op.Resource.Custom || strings.HasPrefix(typ, "pulumi:providers:"):
			assert.Equal(t, Clear, v.Outcome, "%s makes nothing: %s", typ, v.Why)
		case !known:
			assert.Equal(t, Undecided, v.Outcome, typ)
			assert.Contains(t, v.Next, `name eks-demo-x-1a2b3c, tags {"nodeless-eks/cluster":"eks-demo"}`, "%s: what the create sent", typ)
			assert.Contains(t, v.Next, "-import '"+op.Resource.URN+"=<ID>'", typ)
			assert.Contains(t, v.Next, "-clear '"+op.Resource.URN+"'", typ)
		default:
			assert.NotEmpty(t, v.Outcome, typ)
		}
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
