package main

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	require.Contains(t, resources, "eks:index:Cluster")
	requireGolden(t, "registered-types.golden.json", map[string][]string{"resources": keys(resources), "invokes": keys(invokes)})
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
		return r.Type == "command:local:Command" && strings.HasSuffix(r.Name, "-destroy-cleanup")
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
