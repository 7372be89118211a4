package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/internal/pulumicloud"
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
	// processes are the running processes `ps` sees, by PID.
	processes map[int]string
	// inProgress is whether Pulumi Cloud's stack shows a currentOperation.
	inProgress bool
	// stacks are the stacks Pulumi Cloud knows, fully qualified.
	stacks []string
	aws    *fakeAWS
}

func (p *fakePulumi) run(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
	switch name {
	case "aws":
		return p.aws.run(ctx, env, name, args...)
	case "ps":
		pid, _ := strconv.Atoi(args[1])
		if comm, ok := p.processes[pid]; ok {
			return []byte(comm + "\n"), "", nil
		}
		return nil, "", exitStatus(1)
	case "pulumi":
	default:
		return nil, "", fmt.Errorf("unexpected command %s", name)
	}
	p.calls = append(p.calls, strings.Join(args, " "))
	switch {
	case args[0] == "whoami":
		return []byte(`{"user":"me","organizations":["me"],"url":"` + p.backend + `"}`), "", nil
	case args[0] == "stack" && args[1] == "--show-name":
		require.Contains(p.t, args, "--fully-qualify-stack-names")
		return []byte("my-org/nodeless-eks/" + arg(args, "--stack") + "\n"), "", nil
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
	s := &Session{Run: p.run, Dir: dir, Stack: "dev", Out: out, Lookups: l, Hostname: func() (string, error) { return "runner-1", nil },
		BackupDir: t.TempDir(), Readlink: func(string) (string, error) { return initPIDNamespace, nil },
		// The processes the fake sees, as /proc or ps would name them.
		Command: func(pid int) (string, error) {
			out, _, err := p.run(context.Background(), nil, "ps", "-p", strconv.Itoa(pid), "-o", "comm=")
			return strings.TrimSpace(string(out)), err
		}}
	if strings.HasPrefix(p.backend, "https://") {
		s.Cloud = &pulumicloud.Client{API: p.cloud(t), Token: "pul-test"}
	}
	return s
}

// cloud serves GET /api/stacks/{org}/{project}/{stack} as Pulumi Cloud
// does (apitype.Stack): a currentOperation while p.inProgress.
func (p *fakePulumi) cloud(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "token pul-test", r.Header.Get("Authorization"))
		name := strings.TrimPrefix(r.URL.Path, "/api/stacks/")
		if r.Method != http.MethodGet || !slices.Contains(p.stacks, name) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"code":404,"message":"Stack '`+name+`' not found"}`)
			return
		}
		parts := strings.Split(name, "/")
		st := map[string]any{"orgName": parts[0], "projectName": parts[1], "stackName": parts[2]}
		if p.inProgress {
			st["currentOperation"] = map[string]any{"kind": "update", "author": "alice", "started": 1764763200}
		}
		json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
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
// holding the self-managed backend's lock. The recovery removes the
// lock, waits for the cluster, imports it, clears a role whose create
// never reached IAM, and leaves the queue's interrupted update to the
// next run.
func TestUpInterruptedDuringTheClusterCreate(t *testing.T) {
	requireProcessChecks(t)
	f := newFixture(t)
	polls := 0
	f.aws.on("eks describe-cluster", func([]string) awsAnswer {
		polls++
		status := map[bool]string{true: "CREATING", false: "ACTIVE"}[polls < 3]
		return awsAnswer{out: map[string]any{"cluster": map[string]any{"status": status, "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster"}}}
	})
	f.aws.refuse("iam get-role", "NoSuchEntity")
	resources := append(baseResources(),
		res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil),
		res(karpQueue, "aws:sqs/queue:Queue", true, "https://sqs/q", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "q"}))
	cluster := res(eksCluster, "aws:eks/cluster:Cluster", true, "", eksComp, awsProviderURN+"::prov-id",
		map[string]any{"name": "eks-demo", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster", "version": "1.36"}, clusterRole)
	role := res(karpRole, "aws:iam/role:Role", true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo-karpenter-controller-1a2b3c4"})
	queueUpdate := pending(Updating, resources[len(resources)-1])
	p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), resources,
		[]map[string]any{pending(Creating, cluster), pending(Creating, role), queueUpdate})}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	// The dead run's lock: pid 4242 on this machine, which no longer runs
	// (the same PID is now another program).
	root := strings.TrimPrefix(p.backend, "file://")
	lockDir := filepath.Join(root, ".pulumi", "locks", "organization", "nodeless-eks", "dev")
	require.NoError(t, os.MkdirAll(lockDir, 0o755))
	lock := filepath.Join(lockDir, "7f9a.json")
	require.NoError(t, os.WriteFile(lock, []byte(`{"pid":4242,"username":"runner","hostname":"runner-1","timestamp":"2026-12-01T10:00:00Z"}`), 0o600))
	p.processes = map[int]string{4242: "/usr/bin/sleep"}

	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.NoFileExists(t, lock, "the dead run's lock is removed")
	assert.Contains(t, out.String(), "removed the lock of runner@runner-1 (pid 4242)")
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
// controller, after it wrote the release's record. The record is deleted,
// so that the next install is not refused, and the create cleared.
func TestUpInterruptedDuringAHelmRelease(t *testing.T) {
	f := newFixture(t)
	f.kube.helmRecord("karpenter", "karpenter", 1, "pending-install")
	f.kube.helmRecord("karpenter", "karpenter-crd", 1, "deployed")
	resources := append(baseResources(),
		res(eksCluster, "aws:eks/cluster:Cluster", true, "eks-demo", eksComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo"}),
		res(k8sProvider, "pulumi:providers:kubernetes", true, "k8s-id", clusterComp, "", map[string]any{}, eksComp),
		res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
	release := res(karpRelease, helmRelease, true, "", karpComp, k8sProvider+"::k8s-id",
		map[string]any{"name": "karpenter", "namespace": "karpenter", "chart": "oci://public.ecr.aws/karpenter/karpenter"})
	p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, release)})}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	res, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Equal(t, []string{karpRelease}, res.Cleared)
	assert.Equal(t, []string{"secrets/karpenter/sh.helm.release.v1.karpenter.v1"}, f.kube.deleted)
	assert.Empty(t, finalState(t, p).PendingOperations)
	assert.NotContains(t, strings.Join(p.calls, "\n"), "refresh", "nothing imported, nothing to read")
	assert.Contains(t, out.String(), "done: delete the release record(s) sh.helm.release.v1.karpenter.v1 in namespace karpenter")
}

// TestUndecidedChangesNothing: one create the recovery cannot decide stops
// it before any fix, import or clear, with the command to run.
func TestUndecidedChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.kube.helmRecord("karpenter", "karpenter", 1, "pending-install")
	f.aws.refuse("iam get-role", "AccessDenied")
	resources := append(baseResources(), res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
	release := res(karpRelease, helmRelease, true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "karpenter", "namespace": "karpenter"})
	role := res(karpRole, "aws:iam/role:Role", true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "r-1"})
	before := exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, release), pending(Creating, role)})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.ErrorIs(t, err, ErrUndecided)
	assert.Equal(t, before, p.export, "the state is not written")
	assert.Empty(t, f.kube.deleted, "no fix is applied")
	assert.Contains(t, out.String(), "undecided eks-demo-karpenter-controller (aws:iam/role:Role, creating)")
	assert.Contains(t, out.String(), "URN: "+karpRole)
	assert.Contains(t, out.String(), "go run ./cmd/recover-pending -stack dev -import '"+karpRole+"=<ID>'")
}

// requireProcessChecks skips where the recovery cannot tell whether a
// process runs (processExists), and so removes no lock.
func requireProcessChecks(t *testing.T) {
	t.Helper()
	if _, err := processExists(os.Getpid()); err != nil {
		t.Skipf("no process checks here: %v", err)
	}
}

func TestLocksThatAreNotStale(t *testing.T) {
	requireProcessChecks(t)
	// The lock's process is this test's, which the system sees running;
	// the fake ps names it.
	pid := os.Getpid()
	for name, tc := range map[string]struct {
		hostname, comm, want string
	}{
		"a live pulumi":         {"runner-1", "pulumi", "a pulumi process that is still running"},
		"another machine's":     {"laptop", "", "on another machine, which the recovery cannot check: if that run is gone, `pulumi cancel --stack dev --yes`"},
		"a live pulumi by path": {"runner-1", "/usr/local/bin/pulumi", "still running"},
		// ps fails (missing, or the process just ended): no proof it is gone.
		"a live process ps cannot name": {"runner-1", "", fmt.Sprintf("cannot tell whether process %d, which holds the stack's lock, is pulumi", pid)},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
			before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})
			p := &fakePulumi{export: before, processes: map[int]string{}}
			if tc.comm != "" {
				p.processes[pid] = tc.comm
			}
			var out bytes.Buffer
			s := newSession(t, p, f, &out)
			dir := filepath.Join(strings.TrimPrefix(p.backend, "file://"), ".pulumi", "locks", "dev") // the legacy layout
			require.NoError(t, os.MkdirAll(dir, 0o755))
			lock := filepath.Join(dir, "l.json")
			require.NoError(t, os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"username":"u","hostname":"%s","timestamp":"2026-12-01T10:00:00Z"}`, pid, tc.hostname)), 0o600))
			_, err := s.Recover(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.FileExists(t, lock)
			assert.Equal(t, before, p.export)
			assert.Empty(t, f.aws.calls, "nothing is looked up while another run may be writing")
		})
	}
}

func TestAnUpdateInProgressInPulumiCloud(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("iam get-role", "NoSuchEntity")
	role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
	before := exportOf(t, time.Now().Add(-time.Hour), baseResources(), []map[string]any{pending(Creating, role)})
	p := &fakePulumi{export: before, backend: "https://api.pulumi.com", inProgress: true, stacks: []string{"my-org/nodeless-eks/dev"}}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Pulumi Cloud says an operation on my-org/nodeless-eks/dev is in progress (update by alice)")
	assert.Contains(t, err.Error(), "`pulumi cancel --stack my-org/nodeless-eks/dev --yes` ends it")
	assert.Equal(t, before, p.export)
	assert.Empty(t, f.aws.calls, "nothing is looked up while another run may be writing")

	s.Stack = "my-org/nodeless-eks/qa" // a stack Pulumi Cloud does not know
	_, err = s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot tell whether another update of my-org/nodeless-eks/qa is running")
	assert.Contains(t, err.Error(), "answered 404")

	token := s.Cloud
	s.Cloud = nil // no token: nothing says no update runs
	_, err = s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no Pulumi Cloud token")
	s.Cloud = token

	p.inProgress = false
	s.Stack = "my-org/nodeless-eks/dev"
	out.Reset()
	_, err = s.Recover(context.Background())
	require.NoError(t, err, out.String())
	assert.Empty(t, finalState(t, p).PendingOperations)
}

func TestAnotherRunWritesMeanwhile(t *testing.T) {
	f := newFixture(t)
	f.aws.refuse("iam get-role", "NoSuchEntity")
	role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
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
	assert.Contains(t, err.Error(), "another run is writing its state")
	assert.NotContains(t, strings.Join(p.calls, "\n"), "stack import")
}

func TestRefreshThatFailsOrFindsItGone(t *testing.T) {
	setup := func(t *testing.T) (*fakePulumi, *Session, *bytes.Buffer) {
		f := newFixture(t)
		f.aws.answer("iam get-role", map[string]any{"Role": map[string]any{}})
		role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
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
	// create left to the next up: the backup puts the pending create back.
	p, s, out := setup(t)
	before := p.export
	p.gone = map[string]bool{karpRole: true}
	res, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Equal(t, []string{karpRole}, res.Gone)
	assert.Contains(t, err.Error(), "the refresh found no object with the ID imported for "+karpRole)
	backups, _ := filepath.Glob(filepath.Join(s.BackupDir, "dev-*.json"))
	require.Len(t, backups, 1, out.String())
	assert.Contains(t, err.Error(), "`pulumi stack import` drops pending operations", "the backup cannot bring the pending create back")
	assert.Contains(t, err.Error(), "adopt it first with `pulumi import <type> <name> <ID>`")
	assert.Contains(t, err.Error(), "its type and inputs are in "+backups[0])
	assert.NotContains(t, err.Error(), "puts the pending create back")
	kept, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(kept), "the backup is the state as it was before the edit")
	info, err := os.Stat(backups[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the backup holds the stack's ciphertext: its user's only")
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.kube.helmRecord("karpenter", "karpenter", 1, "pending-install")
	resources := append(baseResources(), res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
	release := res(karpRelease, helmRelease, true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "karpenter", "namespace": "karpenter"})
	before := exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, release)})
	p := &fakePulumi{export: before}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	s.DryRun = true
	_, err := s.Recover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, before, p.export)
	assert.Empty(t, f.kube.deleted)
	assert.Contains(t, out.String(), "first: delete the release record(s)")
	assert.Contains(t, out.String(), "dry run: nothing changed")
}

func TestEditKeepsTheStateWhole(t *testing.T) {
	cluster := res(eksCluster, "aws:eks/cluster:Cluster", true, "", eksComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo"}, clusterRole)
	role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
	raw := exportOf(t, time.Now(), baseResources(), []map[string]any{pending(Creating, cluster), pending(Creating, role), pending(Deleting, baseResources()[3])})
	// A number JSON's float64 would round, in a field the recovery does not read.
	raw = bytes.Replace(raw, []byte(`"sequenceNumber": 1`), []byte(`"sequenceNumber": 12345678901234567891`), 1)
	edited, err := Edit(raw, map[string]Imported{eksCluster: {ID: "eks-demo"}}, map[string]bool{karpRole: true})
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

	_, err = Edit(raw, map[string]Imported{eksCluster: {ID: "eks-demo"}, karpQueue: {ID: "q"}}, map[string]bool{karpRole: true})
	assert.ErrorContains(t, err, "has no pending create to import")

	// `pulumi stack import` would drop a create left pending: a clear no
	// one decided.
	_, err = Edit(raw, map[string]Imported{eksCluster: {ID: "eks-demo"}}, nil)
	assert.ErrorContains(t, err, karpRole+" is a pending create with no decision")
}

func TestLookupsReachTheStatesCluster(t *testing.T) {
	resources := append(baseResources(),
		res(eksCluster, "aws:eks/cluster:Cluster", true, "eks-demo", eksComp, awsProviderURN+"::prov-id", map[string]any{"name": "eks-demo"}))
	d, err := ParseExport(exportOf(t, time.Now(), resources, nil))
	require.NoError(t, err)
	l := (&Session{}).lookupsFor(d).(*CLILookups)
	assert.Equal(t, "eks-demo", l.ClusterName)
	assert.Equal(t, testRegion, l.Cluster.Region)
}

// TestARecoveryThatDiedIsResumed: an import whose refresh never ran (the
// refresh failed, or the recovery itself was killed) stays marked, the
// fast test sees it, and the next recovery reads it first.
func TestARecoveryThatDiedIsResumed(t *testing.T) {
	f := newFixture(t)
	f.aws.answer("iam get-role", map[string]any{"Role": map[string]any{}})
	role := res(karpRole, "aws:iam/role:Role", true, "", stackURN, awsProviderURN+"::prov-id", map[string]any{"name": "r"})
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

// TestFixesComeAfterTheStateWrite: the backend's refusal (another run
// holds the stack) stops the recovery before it touches the cluster, and
// a fix that fails after the write says what is left to do.
func TestFixesComeAfterTheStateWrite(t *testing.T) {
	setup := func(t *testing.T) (*fixture, *fakePulumi, *Session) {
		f := newFixture(t)
		f.kube.helmRecord("karpenter", "karpenter", 1, "pending-install")
		resources := append(baseResources(), res(karpComp, "nodeless-eks:karpenter:Karpenter", false, "", stackURN, "", nil))
		release := res(karpRelease, helmRelease, true, "", karpComp, awsProviderURN+"::prov-id", map[string]any{"name": "karpenter", "namespace": "karpenter"})
		p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, release)})}
		var out bytes.Buffer
		return f, p, newSession(t, p, f, &out)
	}
	f, p, s := setup(t)
	s.Run = func(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
		if name == "pulumi" && args[0] == "stack" && args[1] == "import" {
			return nil, "error: the stack is currently locked by 1 lock(s)", exitStatus(255)
		}
		return p.run(ctx, env, name, args...)
	}
	_, err := s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the stack is currently locked")
	assert.Empty(t, f.kube.deleted, "the cluster is not touched when the state cannot be written")

	f, p, s = setup(t)
	// The record is found; the API server goes away while the state is written.
	s.Run = func(ctx context.Context, env []string, name string, args ...string) ([]byte, string, error) {
		if name == "pulumi" && args[0] == "stack" && args[1] == "import" {
			f.kube.err = errors.New("connection refused")
		}
		return p.run(ctx, env, name, args...)
	}
	_, err = s.Recover(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the state is recovered, but eks-demo-karpenter-controller (delete the release record(s) sh.helm.release.v1.karpenter.v1 in namespace karpenter) failed")
	assert.Empty(t, finalState(t, p).PendingOperations)
}

func TestImportedObjectsAreReadWithTheirSeed(t *testing.T) {
	f := newFixture(t)
	f.kube.put(kubeapi.NodePools, "", "general", nil, map[string]any{"managedFields": []any{
		map[string]any{"manager": "pulumi-kubernetes-1f2e3d4c", "operation": "Apply"}}})
	pool := testStack + "nodeless-eks:nodepool:NodePools$kubernetes:karpenter.sh/v1:NodePool::eks-demo-nodepools-pool-general"
	resources := append(baseResources(), res(k8sProvider, "pulumi:providers:kubernetes", true, "k8s-id", clusterComp, "", map[string]any{}, eksComp))
	op := res(pool, "kubernetes:karpenter.sh/v1:NodePool", true, "", stackURN, k8sProvider+"::k8s-id",
		map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "general"}})
	p := &fakePulumi{export: exportOf(t, time.Now().Add(-time.Hour), resources, []map[string]any{pending(Creating, op)})}
	var out bytes.Buffer
	s := newSession(t, p, f, &out)
	_, err := s.Recover(context.Background())
	require.NoError(t, err, out.String())
	imported := finalState(t, p).byURN(pool)
	require.NotNil(t, imported)
	assert.Equal(t, "general", imported.ID)
	assert.Equal(t, map[string]any{"__fieldManager": "pulumi-kubernetes-1f2e3d4c"}, imported.Outputs["seed"], "the read got the seed")
}

// TestAnUpgradeTheRecoveryCannotReadDoesNotStop: a Deployments pre-run
// that cannot reach the cluster lets the run go on to retry a cut-off
// Helm upgrade, instead of stopping every run on it with no decision to
// make (-import and -clear answer creates only).
func TestAnUpgradeTheRecoveryCannotReadDoesNotStop(t *testing.T) {
	f := newFixture(t)
	f.kube.err = errors.New("dial tcp: i/o timeout")
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
	assert.Contains(t, out.String(), "retry     eks-demo-karpenter-controller (kubernetes:helm.sh/v3:Release, updating)")
	assert.Contains(t, out.String(), "(kubernetes:helm.sh/v3:Release, updating): an interrupted update; the recovery could not ready the release for it: dial tcp: i/o timeout")
	assert.Contains(t, out.String(), "`helm rollback karpenter <last deployed revision> -n karpenter`")
}
