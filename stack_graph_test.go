package main

import (
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAddonsInTheStack: the add-ons against the other layers' real
// resources (addons/addons_test.go tests the layer itself).
func TestAddonsInTheStack(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	const prefix = "eks-demo-addons-"
	coreDNS := rec.Get(t, tokens.Addon, prefix+"coredns")
	kubeProxy := rec.Get(t, tokens.Addon, prefix+"kube-proxy")
	agent := rec.Get(t, tokens.Addon, prefix+"eks-pod-identity-agent")
	lbc := rec.Get(t, tokens.HelmRelease, prefix+"lb-controller")
	argocd := rec.Get(t, tokens.HelmRelease, prefix+"argocd")
	pools := rec.OfType(tokens.NodePool)
	require.NotEmpty(t, pools)

	t.Run("CoreDNS, the EBS CSI driver, the LB controller and ArgoCD wait for the stack's NodePools", func(t *testing.T) {
		for _, p := range pools {
			for _, reg := range []*mock.Registration{coreDNS, rec.Get(t, tokens.Addon, prefix+"aws-ebs-csi-driver"), lbc, argocd} {
				rec.RequireDependsOn(t, reg, p)
			}
		}
	})

	t.Run("kube-proxy and the pod identity and node monitoring agents wait for no Karpenter or node pool resource", func(t *testing.T) {
		karpenterSide := append(rec.OfType(tokens.NodePool), rec.OfType(tokens.EC2NodeClass)...)
		karpenterSide = append(karpenterSide, rec.OfType(tokens.HelmRelease)...)
		karpenterSide = append(karpenterSide, rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter"))
		monitoring := rec.Get(t, tokens.Addon, prefix+"eks-node-monitoring-agent")
		for _, a := range []*mock.Registration{kubeProxy, agent, monitoring} {
			for _, k := range karpenterSide {
				rec.RequireNotDependsOn(t, a, k)
			}
			rec.RequireDependsOn(t, a, rec.Get(t, tokens.EKSCluster, "eks-demo"))
		}
	})

	t.Run("the LB controller policy matches the golden file", func(t *testing.T) {
		policy := rec.Get(t, tokens.Policy, prefix+"lb-controller")
		requireGolden(t, "lb-controller-policy.golden.json", jsonValue(t, policy.Inputs["policy"].StringValue()))
	})
}

// topologicalOrder returns the program's registrations ordered so that
// every resource comes after what it depends on, or fails on a cycle.
func topologicalOrder(t *testing.T, rec *mock.Recorder) []*mock.Registration {
	t.Helper()
	regs := programRegistrations(rec)
	byURN := map[string]*mock.Registration{}
	for _, r := range regs {
		byURN[r.URN] = r
	}
	indegree := map[string]int{}
	dependents := map[string][]string{}
	for _, r := range regs {
		seen := map[string]bool{}
		for _, dep := range r.Edges() {
			if _, ok := byURN[dep]; !ok || seen[dep] {
				continue
			}
			seen[dep] = true
			indegree[r.URN]++
			dependents[dep] = append(dependents[dep], r.URN)
		}
	}
	var ready, order []string
	for _, r := range regs {
		if indegree[r.URN] == 0 {
			ready = append(ready, r.URN)
		}
	}
	for len(ready) > 0 {
		sort.Strings(ready)
		next := ready[0]
		ready = ready[1:]
		order = append(order, next)
		for _, d := range dependents[next] {
			if indegree[d]--; indegree[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	require.Len(t, order, len(regs), "the dependency graph has a cycle")
	out := make([]*mock.Registration, len(order))
	for i, urn := range order {
		out[i] = byURN[urn]
	}
	return out
}

func TestWholeStackGraph(t *testing.T) {
	run := runDevStack(t)
	rec := run.rec
	order := topologicalOrder(t, rec) // fails on a cycle

	// Destroy runs the creation order backwards. Each layer below must be
	// gone before the next: add-ons that run on Karpenter's nodes, the
	// NodePools (Karpenter drains and terminates their nodes), the node
	// classes (their finalizer removes the instance profiles), the
	// controller, its IAM, queue and Fargate profile, then the cluster.
	layers := []struct {
		name    string
		members []*mock.Registration
	}{
		{"add-ons on Karpenter nodes", []*mock.Registration{
			rec.Get(t, tokens.Addon, "eks-demo-addons-coredns"),
			rec.Get(t, tokens.HelmRelease, "eks-demo-addons-lb-controller"),
			rec.Get(t, tokens.HelmRelease, "eks-demo-addons-argocd"),
		}},
		{"NodePools", []*mock.Registration{rec.Get(t, tokens.NodePool, "eks-demo-nodepools-pool-general")}},
		{"EC2NodeClasses", []*mock.Registration{rec.Get(t, tokens.EC2NodeClass, "eks-demo-nodepools-class-default")}},
		{"Karpenter release", []*mock.Registration{rec.Get(t, tokens.HelmRelease, karpenterName+"-controller")}},
		{"Karpenter IAM, queue and Fargate profile", []*mock.Registration{
			rec.Get(t, tokens.RolePolicyAttachment, karpenterName+"-controller"),
			rec.Get(t, tokens.Queue, karpenterName+"-interruption-queue"),
			rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter"),
		}},
		{"cluster", []*mock.Registration{rec.Get(t, tokens.EKSCluster, "eks-demo")}},
	}

	t.Run("vpc-cni waits for nothing on the Karpenter side", func(t *testing.T) {
		vpcCni := rec.Get(t, tokens.Addon, "eks-demo-vpc-cni")
		karpenterSide := append(rec.OfType(tokens.NodePool), rec.OfType(tokens.EC2NodeClass)...)
		karpenterSide = append(karpenterSide, rec.OfType(tokens.HelmRelease)...)
		for _, k := range karpenterSide {
			rec.RequireNotDependsOn(t, vpcCni, k)
		}
	})

	t.Run("every layer depends on the next, so any destroy order keeps them apart", func(t *testing.T) {
		for i := 0; i+1 < len(layers); i++ {
			if layers[i].name == "Karpenter IAM, queue and Fargate profile" {
				continue // checked below: only the Fargate profile needs the cluster
			}
			for _, earlier := range layers[i].members {
				for _, later := range layers[i+1].members {
					rec.RequireDependsOn(t, earlier, later)
				}
			}
		}
		// IAM and the queue are created beside the cluster, not after it;
		// only the Fargate profile needs the cluster.
		rec.RequireDependsOn(t, rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter"), rec.Get(t, tokens.EKSCluster, "eks-demo"))
	})

	t.Run("the reverse topological order removes the layers in turn", func(t *testing.T) {
		position := map[string]int{}
		for i, r := range order {
			position[r.URN] = len(order) - 1 - i // destroy position
		}
		for i := 0; i+1 < len(layers); i++ {
			if layers[i].name == "Karpenter IAM, queue and Fargate profile" {
				continue // IAM and the queue need not wait for the cluster
			}
			for _, earlier := range layers[i].members {
				for _, later := range layers[i+1].members {
					assert.Lessf(t, position[earlier.URN], position[later.URN],
						"destroy must remove %s (%s) before %s (%s)", earlier.Name, layers[i].name, later.Name, layers[i+1].name)
				}
			}
		}
		fargate := rec.Get(t, tokens.FargateProfile, "eks-demo-karpenter")
		assert.Less(t, position[fargate.URN], position[rec.Get(t, tokens.EKSCluster, "eks-demo").URN])
	})
}

// TestDestroyCleanup: the cleanup against the other layers' real resources
// and labels (addons/addons_test.go tests its inputs and options).
func TestDestroyCleanup(t *testing.T) {
	run := devStackWith(t, map[string]string{
		"accessEntries": `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"cluster-admin"}}`,
	})
	rec := run.rec
	cleanup := rec.Get(t, tokens.Command, "eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes")

	t.Run("its label and its node bound come from the stack's own pools", func(t *testing.T) {
		env := cleanup.Inputs["environment"].ObjectValue()
		own := env["NODELESS_EKS_OWN_LABEL"].StringValue()
		for _, reg := range append(rec.OfType(tokens.NodePool), rec.OfType(tokens.EC2NodeClass)...) {
			labels := reg.Inputs["metadata"].ObjectValue()["labels"].ObjectValue()
			assert.Equal(t, own, "nodeless-eks/stack="+labels["nodeless-eks/stack"].StringValue(), "%s carries the label the cleanup keeps", reg.Name)
		}
		assert.Equal(t, "1h15m0s", env["NODELESS_EKS_NODE_TIMEOUT"].StringValue(), "the longest terminationGracePeriod plus 15 minutes")
	})

	// A dependency on a component reaches only the children the SDK had
	// added to it by then; the cleanup is handed each resource instead.
	t.Run("it waits for every resource of the cluster and Karpenter layers", func(t *testing.T) {
		for _, component := range []*mock.Registration{rec.Get(t, "nodeless-eks:cluster:Cluster", "eks-demo"),
			rec.Get(t, "nodeless-eks:karpenter:Karpenter", karpenterName)} {
			children := 0
			for _, reg := range programRegistrations(rec) {
				if reg.Parent == component.URN && (reg.Custom || reg.Remote) {
					children++
					rec.RequireDependsOn(t, cleanup, reg)
				}
			}
			assert.Greater(t, children, 5, "%s's resources", component.Name)
		}
	})

	// Destroy deletes in reverse dependency order: the cleanup depends on
	// everything it needs, so it runs while all of it still exists.
	t.Run("destroy runs it while everything it needs still exists", func(t *testing.T) {
		needed := map[string][]*mock.Registration{
			"Karpenter":              {rec.Get(t, tokens.HelmRelease, karpenterName+"-controller")},
			"the LB controller":      {rec.Get(t, tokens.HelmRelease, "eks-demo-addons-lb-controller")},
			"the EBS CSI driver":     {rec.Get(t, tokens.Addon, "eks-demo-addons-aws-ebs-csi-driver")},
			"kube-proxy":             {rec.Get(t, tokens.Addon, "eks-demo-addons-kube-proxy")},
			"CoreDNS":                {rec.Get(t, tokens.Addon, "eks-demo-addons-coredns")},
			"the pod identity agent": {rec.Get(t, tokens.Addon, "eks-demo-addons-eks-pod-identity-agent")},
			"vpc-cni":                {rec.Get(t, tokens.Addon, "eks-demo-vpc-cni")},
			"the access entries":     append(rec.OfType(tokens.AccessEntry), rec.OfType(tokens.AccessPolicyAssociation)...),
			"the stack's NodePools":  rec.OfType(tokens.NodePool),
			"the stack's classes":    rec.OfType(tokens.EC2NodeClass),
		}
		for what, regs := range needed {
			require.NotEmptyf(t, regs, "no %s registered", what)
			for _, reg := range regs {
				rec.RequireDependsOn(t, cleanup, reg)
			}
		}
	})

}

// longestCreateChain is the number of cloud resources on the longest chain
// of creates that must run in order, skipping those for which skip says
// so. A command with no create step takes no time and does not count.
func longestCreateChain(rec *mock.Recorder, skip func(*mock.Registration) bool) int {
	regs := programRegistrations(rec)
	memo := map[string]int{}
	var depth func(reg *mock.Registration) int
	depth = func(reg *mock.Registration) int {
		if d, ok := memo[reg.URN]; ok {
			return d
		}
		memo[reg.URN] = 0
		longest := 0
		for _, urn := range reg.Edges() {
			if dep, ok := rec.ByURN(urn); ok && !skip(dep) {
				longest = max(longest, depth(dep))
			}
		}
		own := 1
		if !reg.Custom || reg.Type == "command:local:Command" || strings.HasPrefix(reg.Type, "pulumi:providers:") {
			own = 0
		}
		memo[reg.URN] = longest + own
		return memo[reg.URN]
	}
	longest := 0
	for _, reg := range regs {
		if !skip(reg) {
			longest = max(longest, depth(reg))
		}
	}
	return longest
}

func TestDay1AddonsKeepTheBootstrapLength(t *testing.T) {
	rec := runDevStack(t).rec
	dayOne := []string{"aws-ebs-csi-driver", "ebs-csi", "gp3", "metrics-server", "eks-node-monitoring-agent", "destroy-cleanup-of-workload-lbs-and-volumes"}
	for _, name := range dayOne {
		found := false
		for _, reg := range programRegistrations(rec) {
			found = found || reg.Name == "eks-demo-addons-"+name
		}
		require.Truef(t, found, "no eks-demo-addons-%s is registered; the lengths below would compare nothing", name)
	}
	added := func(reg *mock.Registration) bool {
		for _, name := range dayOne {
			if strings.HasSuffix(reg.Name, "-addons-"+name) {
				return true
			}
		}
		return false
	}
	without := longestCreateChain(rec, added)
	with := longestCreateChain(rec, func(*mock.Registration) bool { return false })
	require.Greater(t, without, 5, "the chain runs cluster -> Fargate -> Karpenter -> pools -> CoreDNS -> LB controller -> ArgoCD")
	assert.Equal(t, without, with, "the EBS CSI driver, metrics-server, the node monitoring agent and the destroy cleanup must hang off the bootstrap chain, not lengthen it")
}

// takenBySibling are the modelled children of a remote component that
// another of its children uses, so that the engine deletes them only
// after it: pulumi-eks's EKS cluster takes its service role.
var takenBySibling = map[string]map[string]string{
	"eks:index:Cluster": {"aws:iam/role:Role": "aws:eks/cluster:Cluster"},
}

// deletedBeforeProtection are the resources a destroy deletes although
// some are protected: the engine refuses a protected resource's delete,
// goes on, and skips only what that resource depends on, not those
// dependencies' children (pulumi/pulumi pkg/resource/deploy
// step_executor.go, deployment_executor.go). A resource is deleted only
// after everything that depends on it, is parented to it or uses it as
// provider, so one with a protected dependent, directly or not, is never
// reached. A remote component is reached when one of its modelled
// children (childrenOf, after the transforms) is protected neither
// explicitly nor as what a protected sibling takes: its protection is not
// relied on to reach them.
func deletedBeforeProtection(rec *mock.Recorder) []string {
	regs := programRegistrations(rec)
	dependents := map[string][]*mock.Registration{}
	for _, reg := range regs {
		for _, urn := range append(reg.Edges(), reg.Parent) {
			dependents[urn] = append(dependents[urn], reg)
		}
	}
	memo := map[string]bool{}
	var reached func(*mock.Registration) bool
	reached = func(reg *mock.Registration) bool {
		if d, ok := memo[reg.URN]; ok {
			return d
		}
		memo[reg.URN] = false
		if reg.Remote && reg.Transformed != nil {
			for typ, child := range reg.Transformed {
				taker, taken := takenBySibling[reg.Type][typ]
				if !child.Protect && !(taken && reg.Transformed[taker].Protect) {
					memo[reg.URN] = true
				}
			}
			return memo[reg.URN]
		}
		ok := !reg.Protect
		for _, d := range dependents[reg.URN] {
			ok = ok && reached(d)
		}
		memo[reg.URN] = ok
		return ok
	}
	var out []string
	for _, reg := range regs {
		if (reg.Custom || reg.Remote) && reached(reg) {
			out = append(out, reg.Type+"::"+reg.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestProductionDestroyStopsBeforeData(t *testing.T) {
	rec := stackWith(t, "testdata/stack-multipool.yaml", map[string]string{"argocd": "true"}).rec
	deleted := deletedBeforeProtection(rec)
	assert.Empty(t, deleted, "a destroy of a production stack must stop before it deletes anything: no volume, "+
		"load balancer, node, security group rule, interruption rule or add-on")
	assert.True(t, rec.Get(t, tokens.Command, "eks-prod-addons-destroy-cleanup-of-workload-lbs-and-volumes").Protect, "the cleanup is protected")
	assert.True(t, rec.Get(t, tokens.HelmRelease, "eks-prod-addons-argocd").Protect, "ArgoCD is protected")

	dev := runDevStack(t).rec
	assert.False(t, dev.Get(t, tokens.Command, "eks-demo-addons-destroy-cleanup-of-workload-lbs-and-volumes").Protect, "a dev stack destroys without ceremony")
}

// The deploy/ project grants its deploy role exactly what this program
// creates and gives it a session long enough for the longest destroy. It is
// a module of its own and cannot run this program, so these tests record
// both in testdata/ for deploy/'s tests to hold its policy and session to.

// stacksForDeployInputs are the configurations whose union the deploy role
// must cover: the dev stack, the production-shaped one, and every optional
// resource switched on.
func stacksForDeployInputs(t *testing.T) []stackRun {
	t.Helper()
	full := stackConfig(t, "Pulumi.dev.yaml")
	full[testProject+":iamPath"] = "/eks/"
	full[testProject+":accessEntries"] = `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"view"}}`
	var runs []stackRun
	for _, cfg := range []map[string]string{stackConfig(t, "Pulumi.dev.yaml"), stackConfig(t, "testdata/stack-multipool.yaml"), full} {
		run := runProgram(t, cfg, fakeaws.DevVpc())
		require.NoError(t, run.err)
		runs = append(runs, run)
	}
	// An update of a cluster that exists also reads its version.
	upgrade := runProgramOn(t, stackConfig(t, "Pulumi.dev.yaml"), fakeaws.DevVpc(), "1.35")
	require.NoError(t, upgrade.err)
	return append(runs, upgrade)
}

func TestRegisteredTypesForTheDeployRole(t *testing.T) {
	resources, invokes := map[string]bool{}, map[string]bool{}
	for _, run := range stacksForDeployInputs(t) {
		for _, reg := range programRegistrations(run.rec) {
			resources[reg.Type] = true
		}
		for _, inv := range run.rec.Invocations() {
			invokes[inv.Token] = true
		}
	}
	keys := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	require.Contains(t, resources, tokens.EKSCluster)
	requireGolden(t, "registered-types.golden.json", map[string][]string{"resources": keys(resources), "invokes": keys(invokes)})
}

// TestIAMObjectsPerStackForTheDeployFleet writes, for deploy/'s quota
// check, the most IAM roles, customer managed policies and OIDC providers
// one stack of the program creates in its account, over every stack
// configuration the deploy inputs are read from: the roles and policies
// it registers, the service role pulumi-eks creates when the program gives
// it none (cluster/audit.go gives one with a permissions boundary), and
// the OIDC provider pulumi-eks creates for IRSA (CreateOidcProvider).
func TestIAMObjectsPerStackForTheDeployFleet(t *testing.T) {
	most := map[string]int{}
	for _, run := range stacksForDeployInputs(t) {
		count := map[string]int{}
		for _, reg := range programRegistrations(run.rec) {
			switch reg.Type {
			case tokens.Role:
				count["roles"]++
			case tokens.Policy:
				count["policies"]++
			case tokens.EKSCluster:
				if _, given := reg.Inputs["serviceRole"]; !given {
					count["roles"]++
				}
				if reg.Inputs["createOidcProvider"].BoolValue() {
					count["oidcProviders"]++
				}
			}
		}
		for k, v := range count {
			most[k] = max(most[k], v)
		}
	}
	require.Positive(t, most["roles"])
	require.Equal(t, 1, most["oidcProviders"], "one IRSA provider per cluster")
	requireGolden(t, "iam-per-stack.golden.json", most)
}

// deleteTimeModel is how long deleting one resource may take: its custom
// delete timeout, else the wait its provider applies by default.
func deleteTimeModel(reg *mock.Registration) time.Duration {
	// A release's uninstall takes Helm's timeout, whatever custom timeout
	// it has (pulumi-kubernetes provider/pkg/provider/helm_release.go).
	if reg.Type == "kubernetes:helm.sh/v3:Release" {
		if v, ok := reg.Inputs["timeout"]; ok && v.IsNumber() {
			return time.Duration(v.NumberValue()) * time.Second
		}
		return 5 * time.Minute // Helm's default operation timeout
	}
	if reg.DeleteTimeout != "" {
		d, err := time.ParseDuration(reg.DeleteTimeout)
		if err == nil {
			return d
		}
	}
	switch {
	case strings.HasPrefix(reg.Type, "kubernetes:"):
		return 10 * time.Minute // pulumi-kubernetes' default delete await
	case reg.Type == "aws:eks/addon:Addon":
		return 40 * time.Minute // the AWS provider's default delete timeout for add-ons
	case reg.Type == "eks:index:Cluster":
		return 20 * time.Minute // the EKS cluster (15 min default) and pulumi-eks's other children
	case reg.Type == "aws:eks/fargateProfile:FargateProfile":
		return 10 * time.Minute
	case !reg.Custom && !reg.Remote, strings.HasPrefix(reg.Type, "pulumi:providers:"):
		return 0 // a local component or a provider deletes nothing in the cloud
	}
	return 5 * time.Minute
}

// longestDestroy is the longest chain of deletes that must run one after
// another: a resource is deleted only after everything that depends on it.
func longestDestroy(rec *mock.Recorder) (time.Duration, []string) {
	regs := programRegistrations(rec)
	dependents := map[string][]*mock.Registration{} // urn -> registrations that depend on it
	for _, reg := range regs {
		for _, urn := range reg.Edges() {
			dependents[urn] = append(dependents[urn], reg)
		}
		if reg.Parent != "" {
			// A component is deleted after its children.
			dependents[reg.Parent] = append(dependents[reg.Parent], reg)
		}
	}
	// The destroy cleanup deletes every NodePool and waits for its nodes,
	// so Pulumi's own NodePool deletes after it find nothing left to drain.
	cleanedUp := slices.ContainsFunc(regs, func(r *mock.Registration) bool {
		return r.Type == tokens.Command && strings.HasSuffix(r.Name, "-destroy-cleanup-of-workload-lbs-and-volumes")
	})
	weight := func(reg *mock.Registration) time.Duration {
		if cleanedUp && reg.Type == "kubernetes:karpenter.sh/v1:NodePool" {
			return 0
		}
		return deleteTimeModel(reg)
	}
	memo := map[string]time.Duration{}
	next := map[string]*mock.Registration{}
	var finish func(reg *mock.Registration) time.Duration // time from the start of destroy until reg is gone
	finish = func(reg *mock.Registration) time.Duration {
		if d, ok := memo[reg.URN]; ok {
			return d
		}
		memo[reg.URN] = 0 // the graph is acyclic (TestWholeGraph); guard anyway
		var before time.Duration
		for _, dep := range dependents[reg.URN] {
			// Ties go to the smaller URN, so the recorded path is stable.
			if d := finish(dep); d > before || (d == before && next[reg.URN] != nil && dep.URN < next[reg.URN].URN) {
				before, next[reg.URN] = d, dep
			}
		}
		memo[reg.URN] = before + weight(reg)
		return memo[reg.URN]
	}
	var longest time.Duration
	var last *mock.Registration
	for _, reg := range regs {
		if d := finish(reg); d > longest || (d == longest && last != nil && reg.URN < last.URN) {
			longest, last = d, reg
		}
	}
	var path []string
	for reg := last; reg != nil; reg = next[reg.URN] {
		path = append(path, reg.Type+"::"+reg.Name)
	}
	slices.Reverse(path)
	return longest, path
}

func TestLongestDestroyForTheDeployRole(t *testing.T) {
	var longest time.Duration
	var path []string
	for _, run := range stacksForDeployInputs(t) {
		if d, p := longestDestroy(run.rec); d > longest {
			longest, path = d, p
		}
	}
	assert.Greater(t, longest, 2*time.Hour, "a destroy drains the pools (terminationGracePeriod 1h + 15m) behind the add-ons")
	requireGolden(t, "destroy-bound.golden.json", map[string]any{
		"seconds": int(longest.Seconds()),
		"model":   "each resource's delete timeout (custom, else its provider's default wait), summed along the longest chain of deletes that must run in order; NodePools count nothing once the destroy cleanup has drained them",
		"path":    path,
	})
}

// kubernetesSDK is the pulumi-kubernetes Go SDK; every package of it costs
// cold-build time on every fresh runner, whether the program uses it or not.
const kubernetesSDK = "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"

// allowedKubernetesPackages are the SDK packages the program may link, each
// for a reason. kubernetes/yaml (imported by helm/v3 and helm/v4's Chart)
// pulls in all 69 API groups; internal/helmrelease registers the Release
// without it.
var allowedKubernetesPackages = map[string]string{
	"":               "the Kubernetes provider",
	"/utilities":     "the SDK's version pinning, shared by every package",
	"/meta/v1":       "ObjectMeta of the Karpenter custom resources",
	"/apiextensions": "CustomResource for EC2NodeClass and NodePool",
	"/core/v1":       "imported by pulumi-eks",
	"/storage/v1":    "imported by pulumi-eks",
}

// forbiddenModules belong to the offline checks (test/kubecheck, a module
// of its own) or to the package (provider/, pulumi-go-provider and Pulumi's
// code generators) and must never reach the program's binary or its
// go.mod: a runner that builds the program would download and compile
// them, and karpenter-provider-aws needs a newer Go than the program does.
var forbiddenModules = []string{"helm.sh/helm/", "k8s.io/apiextensions-apiserver", "github.com/aws/karpenter-provider-aws",
	"github.com/pulumi/pulumi-go-provider", "github.com/pulumi/pulumi/pkg/v3"}

func TestProgramImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps .: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, kubernetesSDK, "the program must still link the Kubernetes provider; is go list reading this module?")

	var linked []string
	for _, pkg := range deps {
		if rest, ok := strings.CutPrefix(pkg, kubernetesSDK); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			linked = append(linked, rest)
			_, allowed := allowedKubernetesPackages[rest]
			assert.Truef(t, allowed, "the program links %s; import only what it uses "+
				"(kubernetes/yaml and helm/* bring in every API group: use internal/helmrelease)", pkg)
		}
		for _, m := range forbiddenModules {
			assert.Falsef(t, strings.HasPrefix(pkg, m), "the program links %s, which only the offline checks or provider/ may use", pkg)
		}
	}
	slices.Sort(linked)
	t.Logf("pulumi-kubernetes packages linked: %q", linked)

	goMod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for _, m := range forbiddenModules {
		assert.NotContainsf(t, string(goMod), m, "go.mod requires %s; it belongs in test/go.mod or provider/go.mod", m)
	}
}

// TestNoServiceRacesTheLBControllerWebhook lists every step of the
// bootstrap that can create a Service, with its namespace, and holds each
// to one of three: the LB controller's Service webhook skips its
// namespace (as the release's registered values say), it is created
// after the controller's release (whose Helm install waits for the
// controller's pods), or before the webhook exists (the release depends
// on it). A Service created while the webhook exists and its pods do not
// serve is refused (failurePolicy Fail). A step of a kind this test
// cannot place fails it.
func TestNoServiceRacesTheLBControllerWebhook(t *testing.T) {
	rec := devStackWith(t, map[string]string{"argocd": "true", "metricsServer": "true"}).rec
	lbc := rec.Get(t, tokens.HelmRelease, "eks-demo-addons-lb-controller")
	var skipped []string
	selectors := lbc.Inputs["values"].ObjectValue()["serviceMutatorWebhookConfig"].ObjectValue()["namespaceSelectors"].ArrayValue()
	require.Len(t, selectors, 1)
	sel := selectors[0].ObjectValue()
	require.Equal(t, "kubernetes.io/metadata.name", sel["key"].StringValue())
	require.Equal(t, "NotIn", sel["operator"].StringValue())
	for _, v := range sel["values"].ArrayValue() {
		skipped = append(skipped, v.StringValue())
	}

	// The namespace each add-on installs into (the EKS user guide's page of
	// each; none of these takes another), by name: an add-on not named
	// here fails the test until it is placed. A release creates Services
	// in its namespace.
	addonNamespaces := map[string]string{"vpc-cni": "kube-system", "kube-proxy": "kube-system", "coredns": "kube-system",
		"eks-pod-identity-agent": "kube-system", "eks-node-monitoring-agent": "kube-system", "aws-ebs-csi-driver": "kube-system",
		"metrics-server": "kube-system"}
	namespaceOf := map[string]func(*mock.Registration) string{
		tokens.Addon: func(r *mock.Registration) string {
			ns, ok := addonNamespaces[r.Inputs["addonName"].StringValue()]
			require.Truef(t, ok, "add-on %s: place its namespace in this test", r.Inputs["addonName"].StringValue())
			return ns
		},
		tokens.HelmRelease: func(r *mock.Registration) string { return r.Inputs["namespace"].StringValue() },
	}
	cannotCreateServices := map[string]bool{
		tokens.EC2NodeClass: true, tokens.NodePool: true, tokens.StorageClass: true, tokens.KubernetesProvider: true,
		// The LB controller's CRDs, and nothing else.
		tokens.ConfigGroup: true,
	}
	checked := 0
	for _, reg := range programRegistrations(rec) {
		inCluster := reg.Type == tokens.Addon || strings.HasPrefix(reg.Type, "kubernetes:")
		if !inCluster || reg == lbc || cannotCreateServices[reg.Type] {
			continue
		}
		ns, ok := namespaceOf[reg.Type]
		if !assert.Truef(t, ok, "%s %s may create Services: place it in this test", reg.Type, reg.Name) {
			continue
		}
		checked++
		switch {
		case slices.Contains(skipped, ns(reg)):
		case rec.DependsOn(reg, lbc), rec.DependsOn(lbc, reg):
		default:
			t.Errorf("%s %s creates Services in %s while the LB controller's webhook may not serve: skip the namespace, or order it", reg.Type, reg.Name, ns(reg))
		}
	}
	assert.GreaterOrEqual(t, checked, 9, "the add-ons and the Karpenter and ArgoCD releases")
}
