package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePulumi stands in for the Pulumi CLI over one stack's state: `stack
// export` prints it, `stack import` replaces it after the checks the CLI
// makes (pkg/cmd/pulumi/stack/io.go: the integrity check, then every
// pending operation dropped), `refresh --target` reads the targeted
// resources' outputs, `whoami --json` names the backend.
type fakePulumi struct {
	t       *testing.T
	export  []byte
	backend string
	calls   []string
	// gone are URNs whose objects the refresh finds deleted; refreshFails
	// makes the refresh fail.
	gone         map[string]bool
	refreshFails bool
	// onExport runs before each export (another run writing the state).
	onExport func(n int)
	exports  int
	// history is what `pulumi stack history --json` prints ("": one
	// update that ended at testSince).
	history string
	aws     *fakeAWS
}

func (p *fakePulumi) run(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
	switch name {
	case "aws":
		return p.aws.run(ctx, env, name, args...)
	case "pulumi":
	default:
		return nil, "", fmt.Errorf("unexpected command %s", name)
	}
	p.calls = append(p.calls, strings.Join(args, " "))
	switch {
	case args[0] == "stack" && args[1] == "history":
		if p.history != "" {
			return []byte(p.history), "", nil
		}
		// One update before the interrupted one, ended at testSince.
		return []byte(`[{"version":1,"kind":"update","startTime":"2026-12-01T07:50:00.000Z","endTime":"2026-12-01T08:00:00.000Z","result":"succeeded"}]`), "", nil
	case args[0] == "whoami":
		return []byte(`{"user":"me","organizations":["me"],"url":"` + p.backend + `"}`), "", nil
	case args[0] == "stack" && args[1] == "export":
		p.exports++
		if p.onExport != nil {
			p.onExport(p.exports)
		}
		return p.export, "", nil
	case args[0] == "stack" && args[1] == "import":
		raw, err := os.ReadFile(arg(args, "--file"))
		require.NoError(p.t, err)
		var export map[string]any
		require.NoError(p.t, json.Unmarshal(raw, &export))
		if err := checkIntegrity(export); err != nil {
			return nil, "error: state file contains errors: " + err.Error(), exitStatus(255)
		}
		delete(export["deployment"].(map[string]any), "pending_operations")
		p.export, _ = json.Marshal(export)
		return nil, "", nil
	case args[0] == "refresh":
		if p.refreshFails {
			return nil, "error: refresh failed", exitStatus(255)
		}
		var targets []string
		for i, a := range args {
			if a == "--target" {
				targets = append(targets, args[i+1])
			}
		}
		var export map[string]any
		require.NoError(p.t, json.Unmarshal(p.export, &export))
		dep := export["deployment"].(map[string]any)
		var kept []any
		for _, r := range dep["resources"].([]any) {
			res := r.(map[string]any)
			if slices.Contains(targets, res["urn"].(string)) {
				if p.gone[res["urn"].(string)] {
					continue
				}
				seed, _ := res["outputs"].(map[string]any)
				res["outputs"] = map[string]any{"id": res["id"], "read": "by the refresh", "seed": seed}
				delete(res, "initErrors") // a refresh replaces them with what its read reports

			}
			kept = append(kept, res)
		}
		dep["resources"] = kept
		p.export, _ = json.Marshal(export)
		return nil, "", nil
	}
	return nil, "", fmt.Errorf("unexpected pulumi %s", strings.Join(args, " "))
}

// checkIntegrity makes the checks of Snapshot.VerifyIntegrity
// (pulumi/pulumi pkg/resource/deploy/snapshot.go) that an edit can break:
// every resource has a URN and a type, only custom resources have IDs,
// its provider, parent and dependencies come before it, and a URN is
// live once.
func checkIntegrity(export map[string]any) error {
	seen := map[string]bool{}
	for i, r := range export["deployment"].(map[string]any)["resources"].([]any) {
		res := r.(map[string]any)
		urn, _ := res["urn"].(string)
		if urn == "" || res["type"] == "" {
			return fmt.Errorf("resource %d has no urn or type", i)
		}
		if id, _ := res["id"].(string); id != "" && res["custom"] != true {
			return fmt.Errorf("resource %s has custom false but an ID", urn)
		}
		refs := []string{}
		if p, _ := res["provider"].(string); p != "" {
			refs = append(refs, p[:strings.LastIndex(p, "::")])
		}
		if p, _ := res["parent"].(string); p != "" {
			refs = append(refs, p)
		}
		for _, d := range stringList(res["dependencies"]) {
			refs = append(refs, d)
		}
		for _, ref := range refs {
			if !seen[ref] {
				return fmt.Errorf("resource %s refers to %s, which does not come before it", urn, ref)
			}
		}
		if seen[urn] && res["delete"] != true {
			return fmt.Errorf("duplicate resource %s", urn)
		}
		seen[urn] = true
	}
	return nil
}

const (
	stackURN    = testStack + "pulumi:pulumi:Stack::nodeless-eks-dev"
	clusterComp = testStack + "nodeless-eks:cluster:Cluster::eks-demo"
	eksComp     = testStack + "nodeless-eks:cluster:Cluster$eks:index:Cluster::eks-demo"
	eksCluster  = testStack + "nodeless-eks:cluster:Cluster$eks:index:Cluster$aws:eks/cluster:Cluster::eks-demo-eksCluster"
	clusterRole = testStack + "nodeless-eks:cluster:Cluster$aws:iam/role:Role::eks-demo-cluster"
	k8sProvider = testStack + "nodeless-eks:cluster:Cluster$pulumi:providers:kubernetes::eks-demo-k8s"
	karpComp    = testStack + "nodeless-eks:karpenter:Karpenter::eks-demo-karpenter"
	karpRelease = testStack + "nodeless-eks:karpenter:Karpenter$kubernetes:helm.sh/v3:Release::eks-demo-karpenter-controller"
	karpRole    = testStack + "nodeless-eks:karpenter:Karpenter$aws:iam/role:Role::eks-demo-karpenter-controller"
	karpQueue   = testStack + "nodeless-eks:karpenter:Karpenter$aws:sqs/queue:Queue::eks-demo-karpenter-interruption-queue"
)

// exportOf writes a state as `pulumi stack export` prints it, with the
// fields the recovery does not read, which it must keep.
func exportOf(t *testing.T, written time.Time, resources []map[string]any, pending []map[string]any) []byte {
	t.Helper()
	var ops []any
	for _, p := range pending {
		ops = append(ops, p)
	}
	dep := map[string]any{
		"manifest":          map[string]any{"time": written.Format(time.RFC3339Nano), "magic": "abc", "version": "v3.259.0"},
		"secrets_providers": map[string]any{"type": "service", "state": map[string]any{"url": "https://api.pulumi.com"}},
		"resources":         resources,
		"metadata":          map[string]any{},
	}
	if len(ops) > 0 {
		dep["pending_operations"] = ops
	}
	raw, err := json.MarshalIndent(map[string]any{"version": 3, "deployment": dep}, "", "    ")
	require.NoError(t, err)
	return raw
}

func res(urn, typ string, custom bool, id, parent, provider string, inputs map[string]any, deps ...string) map[string]any {
	r := map[string]any{"urn": urn, "type": typ, "custom": custom, "inputs": inputs, "outputs": inputs,
		"parent": parent, "created": "2026-12-01T10:00:00Z", "sequenceNumber": 1}
	if id != "" {
		r["id"] = id
	}
	if provider != "" {
		r["provider"] = provider
	}
	if len(deps) > 0 {
		r["dependencies"] = deps
		r["propertyDependencies"] = map[string]any{"x": deps}
	}
	return r
}

func pending(typ string, r map[string]any) map[string]any {
	r = cloneMap(r)
	delete(r, "outputs")
	delete(r, "id")
	return map[string]any{"type": typ, "resource": r}
}

func cloneMap(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// baseResources are what the stack holds when the cluster's create
// begins.
func baseResources() []map[string]any {
	return []map[string]any{
		res(stackURN, "pulumi:pulumi:Stack", false, "", "", "", nil),
		res(awsProviderURN, "pulumi:providers:aws", true, "prov-id", stackURN, "", map[string]any{"region": testRegion}),
		res(clusterComp, "nodeless-eks:cluster:Cluster", false, "", stackURN, "", nil),
		res(clusterRole, "aws:iam/role:Role", true, "eks-demo-cluster", clusterComp, awsProviderURN+"::prov-id",
			map[string]any{"name": "eks-demo-cluster", "arn": "arn:aws:iam::" + testAccount + ":role/eks-demo-cluster"}),
		res(eksComp, "eks:index:Cluster", false, "", clusterComp, "", nil),
	}
}

func newSession(t *testing.T, p *fakePulumi, f *fixture, out *bytes.Buffer) *Session {
	p.t, p.aws = t, f.aws
	if p.backend == "" {
		p.backend = "file://" + t.TempDir()
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte("name: nodeless-eks\nruntime: go\n"), 0o644))
	l := f.lookups()
	l.Run = p.run
	return &Session{Run: p.run, Dir: dir, Stack: "dev", Out: out, Lookups: l}
}

func finalState(t *testing.T, p *fakePulumi) *Deployment {
	d, err := ParseExport(p.export)
	require.NoError(t, err)
	return d
}

// TestNoPendingOperationsIsLeftAloneQuickly: the run every Deployments
// update starts with when nothing was interrupted. One export is read,
// nothing else is asked, and the state is not written.
func TestNoPendingOperationsIsLeftAloneQuickly(t *testing.T) {
	var resources []map[string]any
	resources = append(resources, baseResources()...)
	for i := range 200 { // larger than the dev stack's state
		resources = append(resources, res(fmt.Sprintf("%saws:iam/role:Role::r%d", testStack, i), "aws:iam/role:Role", true,
			fmt.Sprintf("r%d", i), stackURN, awsProviderURN+"::prov-id", map[string]any{"name": fmt.Sprintf("r%d", i),
				"assumeRolePolicy": strings.Repeat("x", 2000)}))
	}
	f := newFixture(t)
	p := &fakePulumi{export: exportOf(t, time.Now(), resources, nil)}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	start := time.Now()
	res, err := s.Recover(context.Background())
	took := time.Since(start)
	require.NoError(t, err)
	assert.Zero(t, res.Pending)
	assert.Equal(t, []string{"stack export --cwd " + s.Dir + " --stack dev --non-interactive"}, p.calls, "one export, nothing written")
	assert.Empty(t, f.aws.calls)
	assert.Contains(t, out.String(), "stack dev has no pending operations")
	t.Logf("state of %d KB with no pending operations: decided in %s", len(p.export)/1024, took)
	assert.Less(t, took, 100*time.Millisecond)
}

// TestUpInterruptedDuringTheClusterCreate is the acceptance test's first
// interruption, offline: the runner died while EKS created the cluster,
// holding the self-managed backend's lock. The recovery stops at the lock
// until a person removes it; then it waits for the cluster, imports it, clears a role whose create
// never reached IAM, and leaves the queue's interrupted update to the
// next run.
func TestUpInterruptedDuringTheClusterCreate(t *testing.T) {
	f := newFixture(t)
	polls := 0
	f.aws.on("eks describe-cluster", func([]string) awsAnswer {
		polls++
		status := map[bool]string{true: "CREATING", false: "ACTIVE"}[polls < 3]
		return awsAnswer{out: map[string]any{"cluster": map[string]any{"status": status, "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster",
			"createdAt": testCreated}}}
	})
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	resources := append(baseResources(),
		res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil),
		res(karpQueue, "aws:sqs/queue:Queue", true, "https://sqs/q", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "q"}))
	cluster := res(eksCluster, "aws:eks/cluster:Cluster", true, "", eksComp, awsProviderURN+"::prov-id",
		map[string]any{"name": "eks-demo", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster", "version": "1.36"}, clusterRole)
	role := res(karpRole, "aws:sqs/queue:Queue", true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo-karpenter-controller-1a2b3c4"})
	queueUpdate := pending(Updating, resources[len(resources)-1])
	p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), resources,
		[]map[string]any{pending(Creating, cluster), pending(Creating, role), queueUpdate})}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	// The dead run's lock: the recovery stops at it, and a person who
	// knows the run is gone removes it (`pulumi cancel`).
	root := strings.TrimPrefix(p.backend, "file://")
	lockDir := filepath.Join(root, ".pulumi", "locks", "organization", "nodeless-eks", "dev")
	require.NoError(t, os.MkdirAll(lockDir, 0o755))
	lock := filepath.Join(lockDir, "7f9a.json")
	// The dead run began at 08:30, before it created the cluster (09:00).
	require.NoError(t, os.WriteFile(lock, []byte(`{"pid":4242,"username":"runner","hostname":"runner-1","timestamp":"2026-12-01T08:30:00Z"}`), 0o600))
	_, err := s.Recover(context.Background())
	require.ErrorContains(t, err, "stack dev is locked by runner@runner-1 (pid 4242)")
	require.ErrorContains(t, err, "-since 2026-12-01T08:30:00Z")
	require.NoError(t, os.Remove(lock)) // what `pulumi cancel` does
	// The person follows the advice.
	s.Options.Since = time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)

	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Equal(t, 3, polls, "the cluster was waited for until ACTIVE")
	assert.Equal(t, []string{eksCluster}, res.Imported)
	assert.Equal(t, []string{karpRole}, res.Cleared)

	d := finalState(t, p)
	assert.Empty(t, d.PendingOperations, "the next up starts from a clean state")
	imported := d.byURN(eksCluster)
	require.NotNil(t, imported, "the cluster is in the state")
	assert.Equal(t, "eks-demo", imported.ID)
	assert.Equal(t, "by the refresh", imported.Outputs["read"], "and was read by the refresh")
	assert.Nil(t, d.byURN(karpRole), "the role the next up creates")
	assert.Contains(t, p.calls, "refresh --yes --skip-preview --target "+eksCluster+" --cwd "+s.Dir+" --stack dev --non-interactive",
		"only what was imported is refreshed")
	assert.Contains(t, out.String(), "retry     eks-demo-karpenter-interruption-queue (aws:sqs/queue:Queue, updating)")
	assert.Contains(t, out.String(), "imported 1, cleared 1")

	// What the recovery does not read of the state is kept.
	var export map[string]any
	require.NoError(t, json.Unmarshal(p.export, &export))
	assert.Equal(t, "v3.259.0", export["deployment"].(map[string]any)["manifest"].(map[string]any)["version"])
	assert.NotNil(t, export["deployment"].(map[string]any)["secrets_providers"])

	// A second run finds nothing to do.
	p.calls = nil
	res, err = s.Recover(context.Background())
	require.NoError(t, err)
	assert.Zero(t, res.Pending)
	assert.Len(t, p.calls, 1)
}

// TestUpInterruptedDuringAHelmRelease is the acceptance test's second
// interruption, offline: the runner died while Helm installed Karpenter's
// controller. A Helm release is a person's to decide: the Deployments run
// stops, naming the record to delete and the -clear line, and the run
// after the person's -clear passes.
func TestUpInterruptedDuringAHelmRelease(t *testing.T) {
	f := newFixture(t)
	resources := append(baseResources(),
		res(eksCluster, "aws:eks/cluster:Cluster", true, "eks-demo", eksComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo"}),
		res(k8sProvider, "pulumi:providers:kubernetes", true, "k8s-id", clusterComp, "", map[string]any{}, eksComp),
		res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
	release := res(karpRelease, helmRelease, true, "", karpComp, k8sProvider+"::k8s-id",
		map[string]any{"name": "karpenter", "namespace": "karpenter", "chart": "oci://public.ecr.aws/karpenter/karpenter"})
	before := exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, release)})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.ErrorIs(t, err, ErrUndecided)
	assert.Equal(t, before, p.export)
	assert.Contains(t, out.String(), "`kubectl delete secret -n karpenter -l owner=helm,name=karpenter,status=pending-install` first")
	assert.Contains(t, out.String(), "go run ./cmd/recover-pending -stack dev -clear '"+karpRelease+"'")

	s.Options.Decisions = map[string]Decision{karpRelease: {}} // the person's -clear, once the record is gone
	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Equal(t, []string{karpRelease}, res.Cleared)
	assert.Empty(t, finalState(t, p).PendingOperations)
	assert.Empty(t, f.aws.calls, "nothing is asked of AWS or the cluster for a release")
}

// TestUndecidedChangesNothing: one create the recovery cannot decide stops
// it before any fix, import or clear, with the command to run.
func TestUndecidedChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	resources := append(baseResources(), res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
	queue := res(karpQueue, "aws:sqs/queue:Queue", true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "q-1"})
	role := res(karpRole, "aws:iam/role:Role", true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "r-1"})
	before := exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, queue), pending(Creating, role)})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.ErrorIs(t, err, ErrUndecided)
	assert.Equal(t, before, p.export, "the state is not written, the queue's clear included")
	assert.Contains(t, out.String(), "undecided eks-demo-karpenter-controller (aws:iam/role:Role, creating)")
	assert.Contains(t, out.String(), "URN: "+karpRole)
	assert.Contains(t, out.String(), "find the object the create sent (name r-1)")
	assert.Contains(t, out.String(), "go run ./cmd/recover-pending -stack dev -import '"+karpRole+"=<ID>'")
}

// TestALockIsNeverRemoved: a lock stops the recovery, whoever holds it
// (a live run, one on another machine, or a dead one on this machine that
// a reused PID or a container of the same name could hide), naming its
// holder and `pulumi cancel`; the lock stays, and nothing is looked up.
func TestALockIsNeverRemoved(t *testing.T) {
	for name, layout := range map[string]string{"project-scoped": "organization/nodeless-eks/dev", "legacy": "dev"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
			before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})
			p := &fakePulumi{export: before}
			var out bytes.Buffer
			s := newSession(t, p, f, &out)
			dir := filepath.Join(strings.TrimPrefix(p.backend, "file://"), ".pulumi", "locks", filepath.FromSlash(layout))
			require.NoError(t, os.MkdirAll(dir, 0o755))
			lock := filepath.Join(dir, "l.json")
			// A PID no process here has, on this machine's name: no proof.
			require.NoError(t, os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"username":"u","hostname":"runner-1","timestamp":"2026-12-01T10:00:00Z"}`, 1<<22-7)), 0o600))
			_, err := s.Recover(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("stack dev is locked by u@runner-1 (pid %d) since 2026-12-01T10:00:00Z", 1<<22-7))
			assert.Contains(t, err.Error(), "`pulumi cancel --stack dev --yes` removes the lock")
			assert.Contains(t, err.Error(), "run the recovery again with -since 2026-12-01T10:00:00Z, when that run began")
			assert.FileExists(t, lock)
			assert.Equal(t, before, p.export)
			assert.Empty(t, f.aws.calls, "nothing is looked up while another run may be writing")
		})
	}
	t.Run("a lock that says no time, and locks that cannot be read", func(t *testing.T) {
		f := newFixture(t)
		role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
		p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})}
		s := newSession(t, p, f, &bytes.Buffer{})
		locks := filepath.Join(strings.TrimPrefix(p.backend, "file://"), ".pulumi", "locks")
		require.NoError(t, os.MkdirAll(filepath.Join(locks, "dev"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(locks, "dev", "l.json"), []byte(`{}`), 0o600))
		_, err := s.Recover(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "at a time it does not say")
		assert.Contains(t, err.Error(), "-since when that run began")

		require.NoError(t, os.RemoveAll(filepath.Join(locks, "dev")))
		require.NoError(t, os.WriteFile(filepath.Join(locks, "dev"), nil, 0o600)) // not a directory
		_, err = s.Recover(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the recovery cannot tell whether a run holds the stack")
	})
}

// TestAnotherBackendRefusesTheWrite: on a backend whose locks the
// recovery does not read (Pulumi Cloud, s3://), the state write is
// `pulumi stack import`, which the backend refuses while a run holds the
// stack: the recovery stops there, and nothing else was changed.
func TestAnotherBackendRefusesTheWrite(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	queue := res(karpQueue, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "q"})
	before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, queue)})
	p := &fakePulumi{export: before, backend: "https://api.pulumi.com"}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	s.Run = func(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
		if name == "pulumi" && args[0] == "stack" && args[1] == "import" {
			return nil, "error: [409] Conflict: Another update is currently in progress.", exitStatus(255)
		}
		return p.run(ctx, env, name, args...)
	}
	_, err := s.Recover(context.Background())
	require.ErrorContains(t, err, "Another update is currently in progress")
	assert.Equal(t, before, p.export)
	assert.NotContains(t, strings.Join(p.calls, "\n"), "refresh")
}

func TestAnotherRunWritesMeanwhile(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
	first := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})
	p := &fakePulumi{export: first}
	p.onExport = func(n int) {
		if n == 2 {
			p.export = exportOf(t, time.Now(), baseResources(), nil)
		}
	}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the stack's state changed since the recovery read it")
	assert.NotContains(t, strings.Join(p.calls, "\n"), "stack import")
}

func TestRefreshThatFailsOrFindsItGone(t *testing.T) {
	setup := func(t *testing.T) (*fakePulumi, *Session, *bytes.Buffer) {
		f := newFixture(t)
		f.queueExists("r")
		role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
		p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})}
		var out bytes.Buffer
		return p, newSession(t, p, f, &out), &out
	}
	p, s, _ := setup(t)
	p.refreshFails = true
	_, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run the recovery again (it reads them first) before the next `pulumi up`")

	// An imported ID the refresh finds nothing for is a failure, not a
	// create left to the next up; the log holds what it was.
	p, s, out := setup(t)
	p.gone = map[string]bool{karpRole: true}
	res, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Equal(t, []string{karpRole}, res.Gone)
	assert.Contains(t, err.Error(), "the refresh found no object with the ID imported for "+karpRole)
	assert.Contains(t, err.Error(), "`pulumi stack import` drops pending operations")
	assert.Contains(t, err.Error(), "adopt it first with `pulumi import <type> <name> <ID>`")
	assert.Contains(t, out.String(), "recover-pending: before the edit: creating "+karpRole+", of type aws:sqs/queue:Queue under provider "+
		awsProviderURN+"::prov-id: import "+queueURL("r"), "the essentials are in the log itself")
	assert.Contains(t, out.String(), "which the refresh below replaces: the lines above are the record")
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("sqs get-queue-url", "AWS.SimpleQueueService.NonExistentQueue")
	queue := res(karpQueue, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "q"})
	before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, queue)})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	s.DryRun = true
	res, err := s.Recover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{karpQueue}, res.Cleared, "decided")
	assert.Equal(t, before, p.export, "and not written")
	assert.Contains(t, out.String(), "dry run: nothing changed")
}

func TestEditKeepsTheStateWhole(t *testing.T) {
	cluster := res(eksCluster, "aws:eks/cluster:Cluster", true, "", eksComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo"}, clusterRole)
	role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
	raw := exportOf(t, time.Now(), baseResources(), []map[string]any{pending(Creating, cluster), pending(Creating, role), pending(Deleting, baseResources()[3])})
	// A number JSON's float64 would round, in a field the recovery does not read.
	raw = bytes.Replace(raw, []byte(`"sequenceNumber": 1`), []byte(`"sequenceNumber": 12345678901234567891`), 1)
	edited, err := Edit(raw, map[string]string{eksCluster: "eks-demo"}, map[string]bool{karpRole: true})
	require.NoError(t, err)
	assert.Contains(t, string(edited), `"sequenceNumber": 12345678901234567891`)
	var export map[string]any
	require.NoError(t, json.Unmarshal(edited, &export))
	require.NoError(t, checkIntegrity(export))
	d, err := ParseExport(edited)
	require.NoError(t, err)
	last := d.Resources[len(d.Resources)-1]
	assert.Equal(t, eksCluster, last.URN)
	assert.Equal(t, "eks-demo", last.ID)
	assert.True(t, last.Custom)
	assert.Empty(t, last.Outputs, "the refresh reads it as an import does")
	assert.Equal(t, []string{Unread}, last.InitErrors, "marked until a refresh reads it")
	require.Len(t, d.PendingOperations, 1, "the pending delete is left; `pulumi stack import` drops it")
	assert.Equal(t, Deleting, d.PendingOperations[0].Type)

	_, err = Edit(raw, map[string]string{eksCluster: "eks-demo", karpQueue: "q"}, map[string]bool{karpRole: true})
	assert.ErrorContains(t, err, "has no pending create to import")

	// `pulumi stack import` would drop a create left pending: a clear no
	// one decided.
	_, err = Edit(raw, map[string]string{eksCluster: "eks-demo"}, nil)
	assert.ErrorContains(t, err, karpRole+" is a pending create with no decision")
}

// TestARecoveryThatDiedIsResumed: an import whose refresh never ran (the
// refresh failed, or the recovery itself was killed) stays marked, the
// fast test sees it, and the next recovery reads it first.
func TestARecoveryThatDiedIsResumed(t *testing.T) {
	f := newFixture(t)
	f.queueExists("r")
	role := res(karpRole, "aws:sqs/queue:Queue", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
	p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)}),
		refreshFails: true}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.True(t, MayNeedRecovery(p.export), "the mark is what the fast test and the pre-run look for")
	assert.Equal(t, []string{karpRole}, finalState(t, p).unread())

	p.refreshFails, p.calls = false, nil
	out.Reset()
	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Zero(t, res.Pending)
	assert.Contains(t, out.String(), "1 resource(s) an earlier recovery imported were not read by a refresh; reading them now")
	assert.Contains(t, p.calls, "refresh --yes --skip-preview --target "+karpRole+" --cwd "+s.Dir+" --stack dev --non-interactive")
	assert.NotContains(t, strings.Join(p.calls, "\n"), "stack import", "nothing left to decide")
	assert.Empty(t, finalState(t, p).unread())
	assert.False(t, MayNeedRecovery(p.export))
}

// TestACutOffUpgradeDoesNotStop: a Deployments pre-run lets the run go on
// to retry a cut-off Helm upgrade (-import and -clear answer creates
// only), reading nothing of the cluster.
func TestACutOffUpgradeDoesNotStop(t *testing.T) {
	f := newFixture(t)
	resources := append(baseResources(), res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil),
		res(karpRelease, helmRelease, true, "karpenter/karpenter", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "karpenter", "namespace": "karpenter"}))
	before := exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Updating, resources[len(resources)-1])})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Equal(t, 1, res.Pending)
	assert.Equal(t, before, p.export, "nothing to write: the next run performs the upgrade again")
	assert.Contains(t, out.String(), "retry     eks-demo-karpenter-controller (kubernetes:helm.sh/v3:Release, updating): an interrupted update")
}

// TestSinceIsReadFromTheHistory: the interrupted update began after the
// newest update that succeeded ended (a self-managed backend records an
// update only when it ends), or when the newest began, if it did not
// succeed (Pulumi Cloud records an update in progress); with no history,
// nothing is adopted.
func TestSinceIsReadFromTheHistory(t *testing.T) {
	for name, tc := range map[string]struct{ history, want string }{
		"the newest succeeded": {`[{"startTime":"2026-12-01T06:00:00.000Z","endTime":"2026-12-01T06:20:00.000Z","result":"succeeded"},
			{"startTime":"2026-12-01T07:50:00.000Z","endTime":"2026-12-01T08:00:00.000Z","result":"succeeded"}]`, "2026-12-01T08:00:00Z"},
		"the newest is in progress": {`[{"startTime":"2026-12-01T09:30:00.000Z","result":"in-progress"},
			{"startTime":"2026-12-01T07:50:00.000Z","endTime":"2026-12-01T08:00:00.000Z","result":"succeeded"}]`, "2026-12-01T09:30:00Z"},
		"no history": {`[]`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := &fakePulumi{history: tc.history}
			s := newSession(t, p, newFixture(t), &bytes.Buffer{})
			since, err := s.since(context.Background())
			if tc.want == "" {
				require.ErrorContains(t, err, "the stack's history holds no update")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, since.UTC().Format(time.RFC3339))
		})
	}
}
