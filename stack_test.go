// The tests in the stack_*_test.go files run the whole program under the
// mock engine (testkit/mock) against the fake account (testkit/fakeaws):
// what no single layer can show. Each layer's own behaviour is tested
// beside it (cluster/, karpenter/, nodepool/, addons/, config/).
//
//   - stack_test.go: the harness and what crosses layers.
//   - stack_graph_test.go: the dependency graph, the bootstrap's length,
//     destroy order and the deploy role's inputs.
//   - stack_golden_test.go: the goldens (every registration of every test
//     stack; what the chart and CRD checks of test/ read) and the shipped
//     stack files.
//   - stack_watch_test.go: the bootstrap watch's lines on the resources.

package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakeaws/pulumieks"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"
	"nodeless-eks/testkit/tokens"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testToday is the day the tests read the EKS support calendar against, so
// that they do not change as real days pass.
var testToday = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	// Mocked stacks have no cluster to watch; stack_watch_test.go gives one.
	bootAPI = func(string) (bootwatch.API, error) { return nil, errors.New("no cluster under mocks") }
	// A new cluster's Karpenter waits on its profile; the mock engine's need not.
	fargateSettle = time.Nanosecond
	os.Exit(m.Run())
}

const (
	// exportTimeout bounds the waits of the tests' own; under mocks
	// everything resolves in milliseconds unless a registration failed.
	exportTimeout = 20 * time.Second
	testProject   = "nodeless-eks"
	testStack     = "dev"
	testAccount   = fakeaws.AccountID
)

// newRecorder is a mock engine for the dev stack whose account is acct.
func newRecorder(acct *fakeaws.Account) *mock.Recorder {
	return acct.Recorder(testProject, testStack)
}

// testProgram is the program on testToday.
func testProgram(ctx *pulumi.Context) error { return program(ctx, testToday) }

// stackRun is the outcome of running the real program under mocks.
type stackRun struct {
	rec *mock.Recorder
	// exports holds each stack output's resolved value.
	exports map[string]any
	// secretExports holds the names of the secret stack outputs.
	secretExports map[string]bool
	err           error
}

// runProgram runs program with cfg as the stack configuration (keys as in
// a stack file, objects and arrays as JSON) against vpc.
func runProgram(t *testing.T, cfg map[string]string, vpc fakeaws.Vpc) stackRun {
	t.Helper()
	return runProgramOn(t, cfg, vpc, "")
}

// runProgramOn is runProgram against a cluster that already runs
// runningVersion ("" for none).
func runProgramOn(t *testing.T, cfg map[string]string, vpc fakeaws.Vpc, runningVersion string) stackRun {
	t.Helper()
	acct := &fakeaws.Account{Vpc: vpc, ClusterName: cfg[testProject+":clusterName"], RunningVersion: runningVersion}
	return runStack(t, cfg, newRecorder(acct), false)
}

// runStack runs program with cfg against rec, as `pulumi up` runs it or,
// with preview, as a preview does.
func runStack(t *testing.T, cfg map[string]string, rec *mock.Recorder, preview bool) stackRun {
	t.Helper()
	res := rec.Run(t, cfg, preview, pulumieks.WithStandIn(testProgram))
	return stackRun{rec: rec, exports: res.Exports, secretExports: res.SecretExports, err: res.Err}
}

// programRegistrations are what the program registered, without the
// test's stand-in.
func programRegistrations(rec *mock.Recorder) []*mock.Registration {
	return fakeaws.Registrations(rec)
}

// loadProject loads Pulumi.yaml with the CLI's own loader, which validates
// it against Pulumi's project schema.
func loadProject(t *testing.T) *workspace.Project {
	t.Helper()
	proj, err := workspace.LoadProject("Pulumi.yaml")
	require.NoError(t, err, "Pulumi.yaml must pass Pulumi's project schema")
	return proj
}

// stackConfig reads a stack file the way `pulumi up` would hand it to the
// program (testkit/stackfile: required keys set, every key declared and
// of its type, defaults filled). The result is PULUMI_CONFIG's shape.
func stackConfig(t *testing.T, stackFile string) map[string]string {
	t.Helper()
	cfg, err := stackfile.Load("Pulumi.yaml", stackFile)
	require.NoError(t, err, "the Pulumi CLI would refuse %s", stackFile)
	return cfg
}

// TestShippedStackFiles runs every stack file of this project through the
// CLI's rules and the program: the example stack, the test stacks, and a
// stack that sets nothing optional.
func TestShippedStackFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/stack-*.yaml")
	require.NoError(t, err)
	files = append(files, "Pulumi.dev.yaml")
	require.Contains(t, files, "testdata/stack-minimal.yaml", "a stack that sets no optional key must be among them")
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			run := runProgram(t, stackConfig(t, file), fakeaws.DevVpc())
			require.NoError(t, run.err, "%s passes the CLI's checks and must run", file)
		})
	}
	t.Run("the minimal stack gets the default cluster name", func(t *testing.T) {
		run := runProgram(t, stackConfig(t, "testdata/stack-minimal.yaml"), fakeaws.DevVpc())
		require.NoError(t, run.err)
		assert.Equal(t, "nodeless-eks-dev", run.rec.OfType(tokens.EKSCluster)[0].Inputs["name"].StringValue())
	})
	t.Run("no key is required: the region is enough", func(t *testing.T) {
		for name, decl := range loadProject(t).Config {
			assert.Truef(t, decl.Default != nil || decl.Value != nil, "%s has no default, so the CLI would require it", name)
		}
	})
}

// runDevStack runs the program with Pulumi.dev.yaml against the dev VPC.
func runDevStack(t *testing.T) stackRun {
	t.Helper()
	run := runProgram(t, stackConfig(t, "Pulumi.dev.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err, "the dev stack must run under mocks")
	return run
}

// TestWholeStack: what no single layer can show (cluster/cluster_test.go
// tests the cluster layer itself).
func TestWholeStack(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec

	t.Run("no node group of any kind is registered", func(t *testing.T) {
		for _, reg := range programRegistrations(rec) {
			lower := strings.ToLower(reg.Type)
			assert.NotContains(t, lower, "nodegroup", "%s::%s is a node group", reg.Type, reg.Name)
			assert.NotContains(t, lower, "autoscaling", "%s::%s is an auto scaling group", reg.Type, reg.Name)
			assert.NotContains(t, lower, "launchconfiguration", "%s::%s feeds a node group", reg.Type, reg.Name)
		}
		// pulumi-eks's own node groups are cluster/cluster_test.go's.
	})

	t.Run("stack outputs", func(t *testing.T) {
		for _, key := range []string{
			"region", "clusterName", "clusterEndpoint", "kubeconfig", "oidcProviderArn", "oidcIssuer",
			"clusterSecurityGroupId", "nodeSecurityGroupId", "secretsKeyArn", "logGroupName",
			"vpcId", "privateSubnetIds", "podSubnetIds",
			"controllerRoleArn", "nodeRoleName", "nodeRoleArn", "interruptionQueueName", "karpenterVersion", "nodePoolNames",
			"coreDnsVersion", "loadBalancerControllerRoleArn", "argoCdNamespace",
		} {
			assert.Contains(t, run.exports, key)
		}
		assert.Equal(t, "eu-west-1", run.exports["region"])
		assert.Equal(t, fakeaws.Issuer, run.exports["oidcIssuer"])
		assert.Equal(t, "sg-eks-cluster", run.exports["clusterSecurityGroupId"])
		assert.Equal(t, "sg-eks-demo-node", run.exports["nodeSecurityGroupId"])
		assert.Equal(t, "arn:aws:iam::"+testAccount+":role/eks-demo-karpenter-node", run.exports["nodeRoleArn"])
		assert.Equal(t, "arn:aws:kms:eu-west-1:"+testAccount+":key/eks-demo-secrets-0000", run.exports["secretsKeyArn"])
		assert.Equal(t, "/aws/eks/eks-demo/cluster", run.exports["logGroupName"])
		assert.True(t, run.secretExports["kubeconfig"], "the kubeconfig output must be secret")
		assert.False(t, run.secretExports["clusterName"])
		assert.Equal(t, "eks-demo", run.exports["clusterName"])
		assert.Equal(t, "vpc-0de0", run.exports["vpcId"])
		assert.Equal(t, "eks-demo-karpenter-node", run.exports["nodeRoleName"])
		assert.Equal(t, versions.Karpenter, run.exports["karpenterVersion"])
		assert.Equal(t, "argocd", run.exports["argoCdNamespace"])
		assert.Equal(t, map[string]string{"eu-west-1a": "subnet-pod-a", "eu-west-1b": "subnet-pod-b", "eu-west-1c": "subnet-pod-c"},
			run.exports["podSubnetIds"])
	})
}

// devStackWith runs Pulumi.dev.yaml with some keys changed.
func devStackWith(t *testing.T, set map[string]string) stackRun {
	t.Helper()
	return stackWith(t, "Pulumi.dev.yaml", set)
}

// stackWith runs a stack file with some project keys changed; the run
// must succeed.
func stackWith(t *testing.T, stackFile string, set map[string]string) stackRun {
	t.Helper()
	run := runProgram(t, stackfile.With(t, "Pulumi.yaml", stackFile, set), fakeaws.DevVpc())
	require.NoError(t, run.err)
	return run
}

// TestAccessEntries: people's access and the stack's order (the entries
// themselves: cluster/cluster_test.go).
func TestAccessEntries(t *testing.T) {
	run := devStackWith(t, map[string]string{"accessEntries": `{
		"platform": {"principalArn": "arn:aws:iam::111122223333:role/platform-admins", "policy": "cluster-admin"},
		"team-a":   {"principalArn": "arn:aws:iam::123456789012:role/teams/team-a", "policy": "edit", "namespaces": ["team-a", "team-a-ci"]}
	}`})
	rec := run.rec
	var people []*mock.Registration
	for _, entry := range []string{"platform", "team-a"} {
		people = append(people, rec.Get(t, tokens.AccessEntry, "eks-demo-access-"+entry),
			rec.Get(t, tokens.AccessPolicyAssociation, "eks-demo-access-"+entry))
	}

	t.Run("nothing in the bootstrap waits for people's access", func(t *testing.T) {
		cleanup := rec.Get(t, tokens.Command, "eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes")
		for _, typ := range []string{tokens.HelmRelease, tokens.NodePool, tokens.Addon} {
			for _, reg := range rec.OfType(typ) {
				if rec.DependsOn(reg, cleanup) {
					continue // ArgoCD, deleted before the cleanup; see TestDestroyCleanup
				}
				for _, e := range people {
					rec.RequireNotDependsOn(t, reg, e)
				}
			}
		}
	})

	t.Run("the destroy cleanup runs while people still have access", func(t *testing.T) {
		cleanup := rec.Get(t, tokens.Command, "eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes")
		for _, e := range people {
			rec.RequireDependsOn(t, cleanup, e)
		}
	})
}

// TestTwoStacksInOneVpc runs two clusters against the same VPC: neither may
// change anything the other (or the VPC's owner) has, and no physical name
// may collide.
func TestTwoStacksInOneVpc(t *testing.T) {
	names := map[string]map[string]string{} // cluster -> physical name -> resource
	for _, clusterName := range []string{"team-a", "team-b"} {
		run := devStackWith(t, map[string]string{"clusterName": clusterName})
		names[clusterName] = map[string]string{}
		vpc := fakeaws.DevVpc()
		foreign := map[string]bool{vpc.ID: true}
		for _, s := range vpc.Subnets {
			foreign[s.ID] = true
		}
		for _, reg := range programRegistrations(run.rec) {
			if (!reg.Custom && !reg.Remote) || strings.HasPrefix(reg.Type, "kubernetes:") || strings.HasPrefix(reg.Type, "pulumi:providers:") {
				continue // Kubernetes objects live in each stack's own cluster
			}
			assert.NotEqualf(t, "aws:ec2/tag:Tag", reg.Type, "%s: %s tags %v, which it does not own", clusterName, reg.Name, reg.Inputs["resourceId"])
			for _, key := range []string{"resourceId", "subnetId", "routeTableId"} {
				if v, ok := reg.Inputs[resource.PropertyKey(key)]; ok && v.IsString() {
					assert.Falsef(t, foreign[v.StringValue()], "%s: %s::%s changes %s, which belongs to the VPC's owner",
						clusterName, reg.Type, reg.Name, v.StringValue())
				}
			}
			if n, ok := reg.Inputs["name"]; ok && n.IsString() {
				names[clusterName][reg.Type+" "+n.StringValue()] = reg.Name
			}
		}
		tags, ok := run.rec.Get(t, tokens.SecurityGroup, clusterName+"-node").Inputs["tags"]
		require.True(t, ok, "%s: the node security group carries tags", clusterName)
		assert.Equal(t, clusterName, tags.ObjectValue()["karpenter.sh/discovery"].StringValue(), "the only discovery tag is on our own group")
	}
	require.NotEmpty(t, names["team-a"], "explicitly named resources were found")
	for name, res := range names["team-a"] {
		_, clash := names["team-b"][name]
		assert.Falsef(t, clash, "%s (%s) has the same physical name in both stacks", name, res)
	}
}

func TestProductionGuards(t *testing.T) {
	run := runProgram(t, stackConfig(t, "testdata/stack-multipool.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	eks := run.rec.Get(t, tokens.EKSCluster, "eks-prod")

	// What Protect does is cluster/cluster_test.go's TestProtect; here, that
	// a production stack asks for it.
	assert.True(t, eks.Protect, "the pulumi-eks component is protected")
	assert.True(t, eks.Transformed["aws:eks/cluster:Cluster"].Protect, "and its EKS cluster")
	assert.True(t, run.rec.Get(t, tokens.KMSKey, "eks-prod-secrets").Protect)
}

func TestIAMPathAndBoundary(t *testing.T) {
	const boundary = "arn:aws:iam::123456789012:policy/org-boundary"
	run := devStackWith(t, map[string]string{"iamPath": "/eks/", "iamPermissionsBoundary": boundary})
	rec := run.rec
	roles := rec.OfType(tokens.Role)
	require.GreaterOrEqual(t, len(roles), 5, "service, Fargate, controller, node and LB controller roles")
	for _, role := range roles {
		assert.Equalf(t, "/eks/", role.Inputs["path"].StringValue(), "role %s", role.Name)
		assert.Equalf(t, boundary, role.Inputs["permissionsBoundary"].StringValue(), "role %s", role.Name)
	}
	for _, policy := range rec.OfType(tokens.Policy) {
		assert.Equalf(t, "/eks/", policy.Inputs["path"].StringValue(), "policy %s", policy.Name)
	}

	t.Run("the cluster's service role is ours, with its policy before the cluster", func(t *testing.T) {
		service := rec.Get(t, tokens.Role, "eks-demo-service")
		eks := rec.Get(t, tokens.EKSCluster, "eks-demo")
		assert.True(t, eks.Inputs["serviceRole"].IsResourceReference(), "pulumi-eks must use our role")
		rec.RequireDependsOn(t, eks, service)
		rec.RequireDependsOn(t, eks, rec.Get(t, tokens.RolePolicyAttachment, "eks-demo-service"))
		trust := iamtest.Parse(t, service.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 1)
		assert.Equal(t, map[string]any{"Service": "eks.amazonaws.com"}, trust[0].Principal)
	})
	t.Run("without them the service role is still ours, without a path or boundary", func(t *testing.T) {
		dev := runDevStack(t).rec
		assert.True(t, dev.Get(t, tokens.EKSCluster, "eks-demo").Inputs["serviceRole"].IsResourceReference(), "pulumi-eks must use our role")
		dev.Get(t, tokens.Role, "eks-demo-service")
		for _, role := range dev.OfType(tokens.Role) {
			assert.NotContainsf(t, role.Inputs, resource.PropertyKey("permissionsBoundary"), "role %s", role.Name)
			assert.NotContainsf(t, role.Inputs, resource.PropertyKey("path"), "role %s", role.Name)
		}
	})
}

// TestABoundaryIsAnInPlaceUpdate registers the dev stack without and with
// a permissions boundary, as a quick-start cluster handed to deploy/'s
// pipeline is, and compares the two: the same resources (URNs), and no
// input changed but the roles' permissionsBoundary, which IAM sets in place
// (PutRolePermissionsBoundary; pulumi-aws's aws_iam_role updates it without
// replacement). The cluster, whose service role EKS cannot change, keeps
// every input.
func TestABoundaryIsAnInPlaceUpdate(t *testing.T) {
	const boundary = "arn:aws:iam::123456789012:policy/deploy-nodeless-eks-dev-boundary"
	before := programRegistrations(runDevStack(t).rec)
	after := programRegistrations(devStackWith(t, map[string]string{"iamPermissionsBoundary": boundary}).rec)
	byURN := func(regs []*mock.Registration) map[string]*mock.Registration {
		m := map[string]*mock.Registration{}
		for _, r := range regs {
			m[r.URN] = r
		}
		return m
	}
	was, now := byURN(before), byURN(after)
	require.Equal(t, slices.Sorted(maps.Keys(was)), slices.Sorted(maps.Keys(now)), "the same resources, by URN")
	bounded := 0
	for urn, b := range was {
		a := now[urn]
		for _, key := range slices.Sorted(maps.Keys(a.Inputs)) {
			if b.Type == tokens.Role && key == "permissionsBoundary" {
				assert.Equal(t, boundary, a.Inputs[key].StringValue(), urn)
				assert.NotContains(t, b.Inputs, key, "%s had no boundary before", urn)
				bounded++
				continue
			}
			assert.Truef(t, b.Inputs[key].DeepEquals(a.Inputs[key]), "%s: input %s changed: %v -> %v", urn, key, b.Inputs[key], a.Inputs[key])
		}
		for key := range b.Inputs {
			assert.Containsf(t, a.Inputs, key, "%s lost input %s", urn, key)
		}
	}
	assert.Equal(t, len(now[urnOf(t, after, tokens.Role, "eks-demo-service")].Inputs), len(was[urnOf(t, before, tokens.Role, "eks-demo-service")].Inputs)+1)
	assert.Equal(t, len(programRolesOf(after)), bounded, "every role gets the boundary, the cluster's service role included")
}

// urnOf is the URN of the registration of typ named name.
func urnOf(t *testing.T, regs []*mock.Registration, typ, name string) string {
	t.Helper()
	for _, r := range regs {
		if r.Type == typ && r.Name == name {
			return r.URN
		}
	}
	require.Failf(t, "not registered", "%s %s", typ, name)
	return ""
}

// programRolesOf are the IAM roles among regs.
func programRolesOf(regs []*mock.Registration) []*mock.Registration {
	var roles []*mock.Registration
	for _, r := range regs {
		if r.Type == tokens.Role {
			roles = append(roles, r)
		}
	}
	return roles
}

// TestAClusterOfAnEarlierVersionKeepsItsServiceRole runs the dev stack
// against a running cluster whose service role pulumi-eks created (what
// earlier versions did without an IAM path or boundary): the program keeps
// that role, since EKS would replace the cluster for another, and gives it
// a boundary through a transform, in place; an iamPath, which would replace
// the role, is refused, as is a cluster whose role this stack does not
// create, or whose role's path differs from iamPath.
func TestAClusterOfAnEarlierVersionKeepsItsServiceRole(t *testing.T) {
	const boundary = "arn:aws:iam::123456789012:policy/deploy-nodeless-eks-dev-boundary"
	on := func(t *testing.T, role string, set map[string]string) stackRun {
		t.Helper()
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		for k, v := range set {
			cfg[testProject+":"+k] = v
		}
		acct := &fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: "eks-demo", RunningVersion: "1.36", RunningServiceRoleArn: role}
		return runStack(t, cfg, newRecorder(acct), true)
	}
	const pulumiEKSRole = "arn:aws:iam::123456789012:role/eks-demo-eksRole-role-4d5e6f7"
	t.Run("pulumi-eks's role is kept, and bounded in place", func(t *testing.T) {
		run := on(t, pulumiEKSRole, map[string]string{"iamPermissionsBoundary": boundary})
		require.NoError(t, run.err)
		eks := run.rec.Get(t, tokens.EKSCluster, "eks-demo")
		assert.NotContains(t, eks.Inputs, resource.PropertyKey("serviceRole"), "pulumi-eks keeps its role")
		_, ours := run.rec.Find(tokens.Role, "eks-demo-service")
		assert.False(t, ours, "no second service role")
		role := eks.Transformed[tokens.Role]
		require.False(t, role.Unchanged, "the transform reaches pulumi-eks's eksRole-role")
		assert.Equal(t, boundary, role.Props["permissionsBoundary"].StringValue())
	})
	t.Run("without a boundary it is left as it is", func(t *testing.T) {
		run := on(t, pulumiEKSRole, nil)
		require.NoError(t, run.err)
		assert.True(t, run.rec.Get(t, tokens.EKSCluster, "eks-demo").Transformed[tokens.Role].Unchanged)
	})
	for _, tt := range []struct {
		name, role string
		set        map[string]string
		want       string
	}{
		{"an iamPath on pulumi-eks's role", pulumiEKSRole, map[string]string{"iamPath": "/eks/"},
			`iamPath "/eks/": cluster eks-demo was created with pulumi-eks's service role ` + pulumiEKSRole + `, at path "/"`},
		{"another iamPath than the program's role has", "arn:aws:iam::123456789012:role/eks/eks-demo-service-1a2b3c4", nil,
			`iamPath "/": cluster eks-demo's service role arn:aws:iam::123456789012:role/eks/eks-demo-service-1a2b3c4 is at path "/eks/"`},
		{"a role this stack does not create", "arn:aws:iam::123456789012:role/hand-made-eks-role", nil,
			`clusterName "eks-demo": a cluster of that name exists in the account and region with service role arn:aws:iam::123456789012:role/hand-made-eks-role, which this stack does not create`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := on(t, tt.role, tt.set)
			require.Error(t, run.err)
			assert.Contains(t, run.err.Error(), tt.want)
			assert.Empty(t, programRegistrations(run.rec), "nothing is registered")
		})
	}
}

const (
	karpenterName = "eks-demo-karpenter"
)

// TestKarpenterInTheStack: what the stack hands the Karpenter layer and
// what waits for what across layers (karpenter/karpenter_test.go tests the
// layer itself).
func TestKarpenterInTheStack(t *testing.T) {
	rec := runDevStack(t).rec
	eks, fargate := rec.Get(t, tokens.EKSCluster, "eks-demo"), rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter")
	crdRelease, release := rec.Get(t, tokens.HelmRelease, karpenterName+"-crd"), rec.Get(t, tokens.HelmRelease, karpenterName+"-controller")

	t.Run("the fargate profile selects the namespace the controller runs in", func(t *testing.T) {
		sel := fargate.Inputs["selectors"].ArrayValue()[0].ObjectValue()
		assert.Equal(t, release.Inputs["namespace"].StringValue(), sel["namespace"].StringValue())
	})

	t.Run("controller policy matches the golden file", func(t *testing.T) {
		policy := rec.Get(t, tokens.Policy, karpenterName+"-controller").Inputs["policy"].StringValue()
		requireGolden(t, "karpenter-controller-policy.golden.json", jsonValue(t, policy))
	})

	t.Run("the controller values match the golden file the chart is rendered with", func(t *testing.T) {
		values := release.Inputs["values"]
		require.True(t, values.IsObject(), "values must be known under mocks")
		requireGolden(t, "karpenter-values.golden.json", values.ObjectValue().Mappable())
		resources := values.ObjectValue()["controller"].ObjectValue()["resources"].ObjectValue().Mappable()
		sized := map[string]any{"cpu": karpenter.SmallController.CPU, "memory": karpenter.SmallController.Memory}
		assert.Equal(t, map[string]any{"requests": sized, "limits": sized}, resources,
			"requests equal limits, at the small size a dev stack gets (karpenter/fargate_test.go holds it to a whole Fargate size)")
		settings := values.ObjectValue()["settings"].ObjectValue()
		assert.Equal(t, karpenterName+"-interruption-queue-7f3a", settings["interruptionQueue"].StringValue())
		assert.Equal(t, "Default", values.ObjectValue()["dnsPolicy"].StringValue())
	})

	t.Run("the controller waits for the Fargate profile; its CRDs and IAM only for the cluster", func(t *testing.T) {
		rec.RequireDependsOn(t, release, fargate)
		rec.RequireNotDependsOn(t, crdRelease, fargate)
		rec.RequireDependsOn(t, crdRelease, eks)
		karpenterURN := rec.Get(t, "nodeless-eks:karpenter:Karpenter", karpenterName).URN
		controllerRole := rec.Get(t, tokens.Role, karpenterName+"-controller")
		controllerAttachment := rec.Get(t, tokens.RolePolicyAttachment, karpenterName+"-controller")
		for _, reg := range programRegistrations(rec) {
			if reg.Parent != karpenterURN || reg.Type == tokens.HelmRelease {
				continue
			}
			rec.RequireNotDependsOn(t, reg, fargate)
			// The controller role's trust names the OIDC provider and the
			// node access entry the cluster: only those wait for it.
			if reg != controllerRole && reg != controllerAttachment && reg.Type != tokens.AccessEntry {
				rec.RequireNotDependsOn(t, reg, eks)
			}
		}
		rec.RequireDependsOn(t, controllerRole, eks)
	})
}

func TestControllerSizeByStackClass(t *testing.T) {
	tests := []struct {
		name        string
		stackFile   string
		set         map[string]string
		release     string
		cpu, memory string
	}{
		{"a dev stack gets the small size", "Pulumi.dev.yaml", nil, karpenterName + "-controller", "250m", "768Mi"},
		{"a production stack gets the upstream size", "testdata/stack-multipool.yaml", nil, "eks-prod-karpenter-controller", "1", "1792Mi"},
		{"config overrides the class default", "Pulumi.dev.yaml", map[string]string{"controllerResources": `{"cpu":"0.5","memory":"1792Mi"}`},
			karpenterName + "-controller", "0.5", "1792Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := stackWith(t, tt.stackFile, tt.set)
			values := run.rec.Get(t, tokens.HelmRelease, tt.release).Inputs["values"].ObjectValue()
			resources := values["controller"].ObjectValue()["resources"].ObjectValue().Mappable()
			sized := map[string]any{"cpu": tt.cpu, "memory": tt.memory}
			assert.Equal(t, map[string]any{"requests": sized, "limits": sized}, resources)
		})
	}
}

func TestNodeRepair(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		on   bool
	}{
		{"on by default: the feature gate and the node monitoring agent", nil, true},
		{"off: neither", map[string]string{"nodeRepair": "false"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := stackWith(t, "Pulumi.dev.yaml", tt.set)
			values := run.rec.Get(t, tokens.HelmRelease, karpenterName+"-controller").Inputs["values"].ObjectValue()
			gates := values["settings"].ObjectValue()["featureGates"].ObjectValue()
			assert.Equal(t, tt.on, gates["nodeRepair"].V, "settings.featureGates.nodeRepair")
			found := false
			for _, a := range run.rec.OfType(tokens.Addon) {
				if a.Inputs["addonName"].StringValue() == "eks-node-monitoring-agent" {
					found = true
					assert.Equal(t, "v1.4.0-eksbuild.1", a.Inputs["addonVersion"].StringValue(), "the EKS default version")
				}
			}
			assert.Equal(t, tt.on, found, "the node monitoring agent reports the conditions node repair acts on")
		})
	}
}

// registeredObject is a custom resource as the API server would receive it.
func registeredObject(reg *mock.Registration) map[string]any {
	return resource.PropertyMap{
		"apiVersion": reg.Inputs["apiVersion"],
		"kind":       reg.Inputs["kind"],
		"metadata":   reg.Inputs["metadata"],
		"spec":       reg.Inputs["spec"],
	}.Mappable()
}

// nodeObjects returns the node classes and pools the program registered,
// classes first, each sorted by name (registrations arrive concurrently).
func nodeObjects(rec *mock.Recorder) []any {
	var out []any
	for _, typ := range []string{tokens.EC2NodeClass, tokens.NodePool} {
		regs := rec.OfType(typ)
		sort.Slice(regs, func(i, j int) bool { return regs[i].Name < regs[j].Name })
		for _, reg := range regs {
			out = append(out, registeredObject(reg))
		}
	}
	return out
}

// TestNodePoolsInTheStack: what the stack hands the node pools layer
// (nodepool/nodepool_test.go tests the layer itself).
func TestNodePoolsInTheStack(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	karpenterRelease := rec.Get(t, tokens.HelmRelease, karpenterName+"-controller")
	nodeRole := rec.Get(t, tokens.Role, karpenterName+"-node")
	accessEntry := rec.Get(t, tokens.AccessEntry, karpenterName+"-node")
	vpcCni := rec.Get(t, tokens.Addon, "eks-demo-vpc-cni")
	class := rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-default")
	pool := rec.Get(t, tokens.NodePool, "eks-demo-nodepools-pool-general")

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-dev.golden.json", nodeObjects(rec))
	})

	t.Run("node classes wait for the controller, the node role and its access entry", func(t *testing.T) {
		rec.RequireDependsOn(t, class, karpenterRelease)
		rec.RequireDependsOn(t, class, nodeRole)
		rec.RequireDependsOn(t, class, accessEntry)
	})

	t.Run("node classes wait for every policy the node role needs", func(t *testing.T) {
		for _, suffix := range []string{"worker", "cni", "ecr", "ssm"} {
			rec.RequireDependsOn(t, class, rec.Get(t, tokens.RolePolicyAttachment, karpenterName+"-node-"+suffix))
		}
	})

	t.Run("pools wait for vpc-cni", func(t *testing.T) {
		rec.RequireDependsOn(t, pool, vpcCni)
	})
}

func TestSeveralNodePools(t *testing.T) {
	run := runProgram(t, stackConfig(t, "testdata/stack-multipool.yaml"), fakeaws.DevVpc())
	require.NoError(t, run.err)
	rec := run.rec

	t.Run("the registered objects match the golden file the CRD tests validate", func(t *testing.T) {
		requireGolden(t, "nodepools-multipool.golden.json", nodeObjects(rec))
	})

	t.Run("production node classes pin the Bottlerocket version", func(t *testing.T) {
		for _, c := range rec.OfType(tokens.EC2NodeClass) {
			terms := c.Inputs["spec"].ObjectValue()["amiSelectorTerms"].ArrayValue()
			assert.Equal(t, "bottlerocket@v"+versions.SuggestedBottlerocket, terms[0].ObjectValue()["alias"].StringValue())
		}
	})
}

// TestEveryNameFits registers stacks whose cluster name is as long as the
// configuration accepts, and checks every physical name they create,
// explicit or autonamed, and those of pulumi-eks's children, against the
// limit of its type.
func TestEveryNameFits(t *testing.T) {
	longest := "n" + strings.Repeat("0", names.MaxClusterNameLength-1)
	tests := []struct {
		name, stackFile string
		set             map[string]string
	}{
		{"the dev stack", "Pulumi.dev.yaml", map[string]string{"clusterName": longest}},
		{"with an IAM path", "Pulumi.dev.yaml", map[string]string{"clusterName": longest, "iamPath": "/platform/eks/"}},
		{"the production stack with two pools", "testdata/stack-multipool.yaml", map[string]string{"clusterName": longest}},
		{"the default name of a stack named after a region", "Pulumi.dev.yaml", map[string]string{"clusterName": names.DefaultClusterName(testProject, "staging-eu-west-1")}},
		{"the default name of a very long stack name", "Pulumi.dev.yaml", map[string]string{"clusterName": names.DefaultClusterName(testProject, strings.Repeat("review-", 9))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := stackWith(t, tt.stackFile, tt.set).rec
			checked := map[string]int{}
			check := func(typ, physical, what string) {
				checked[typ]++
				assert.NoErrorf(t, fakeaws.CheckName(typ, physical), "%s", what)
			}
			for _, reg := range programRegistrations(rec) {
				limit, ok := fakeaws.NameLimits[reg.Type]
				if !ok || !reg.Custom {
					continue
				}
				if v, set := reg.Inputs[resource.PropertyKey(limit.Input)]; set && v.IsString() {
					check(reg.Type, v.StringValue(), reg.Name+" (named by the program)")
				} else {
					check(reg.Type, names.Autoname(reg.Name), reg.Name+" (autonamed)")
				}
			}
			eks := rec.OfType(tokens.EKSCluster)
			require.Len(t, eks, 1)
			_, ownRole := eks[0].Inputs["serviceRole"]
			for _, child := range fakeaws.PulumiEKSNamedChildren(eks[0].Name, eks[0].Inputs["name"].StringValue(), ownRole) {
				check(child.Type, child.Name, child.Name+" (pulumi-eks's child)")
			}
			for _, typ := range []string{"aws:iam/role:Role", tokens.EventRule, tokens.Queue,
				tokens.FargateProfile, "aws:iam/policy:Policy"} {
				assert.Positivef(t, checked[typ], "no %s name was checked; the walk lost its way", typ)
			}
		})
	}
}
