//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"nodeless-eks/karpenter"
)

// TestAccInterruptedUpRecovers kills `pulumi up` as a dead runner would
// (SIGKILL to its process group: no graceful cancel, plugins included)
// once during the EKS cluster's create and once during a Helm release's,
// runs the recovery (cmd/recover-pending) after each, and requires the
// next `pulumi up` to converge with no other step than the `pulumi cancel`
// of the dead run's lock, which the recovery names and never removes. It
// uses a self-managed backend in a temporary directory, whose first `up`
// leaves no history, so the recovery is told when the run started
// (-since; docs/recovery.md). About 60
// minutes:
//
//	NODELESS_EKS_ACC=1 NODELESS_EKS_REGION=… NODELESS_EKS_VPC_NAME=… \
//	NODELESS_EKS_PRIVATE_SUBNET_PATTERN=… NODELESS_EKS_POD_SUBNET_PATTERN=… \
//	go test -run TestAccInterruptedUpRecovers -timeout 150m -v .
func TestAccInterruptedUpRecovers(t *testing.T) {
	if reason := accSkipReason(os.Getenv, exec.LookPath, awsCredentials); reason != "" {
		t.Skip(reason)
	}
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-accDestroyReserve))
		t.Cleanup(cancel)
	}
	name, region := "acc-"+randomSuffix(t), os.Getenv("NODELESS_EKS_REGION")
	env := map[string]string{"PULUMI_BACKEND_URL": "file://" + t.TempDir(), "PULUMI_CONFIG_PASSPHRASE": "acceptance-" + name}
	stack, err := auto.UpsertStackLocalSource(ctx, name, ".", auto.EnvVars(env))
	require.NoError(t, err)
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	require.NoError(t, err)
	t.Cleanup(func() { destroyAndSweep(t, stack, name, region, awsCfg) })
	cfg := auto.ConfigMap{testProject + ":clusterName": {Value: name}, testProject + ":argocd": {Value: "false"}}
	for _, s := range accSettings {
		cfg[s.key] = auto.ConfigValue{Value: os.Getenv(s.env)}
	}
	require.NoError(t, stack.SetAllConfig(ctx, cfg))

	steps := []struct {
		what, typ, resource string
		after               time.Duration
		// id is the ID the resource's provider gives it; imported, that
		// the recovery must import it (not clear it).
		id       string
		imported bool
	}{
		// CreateCluster has been called and EKS is creating it: the
		// recovery waits for it and imports it by its name.
		{"the EKS cluster's create", "aws:eks/cluster:Cluster", name + "-eksCluster", 90 * time.Second, name, true},
		// Helm has written the release's record (pending-install) and
		// waits for the controller's Fargate pods: the recovery leaves it
		// to a person, who, as its report says, deletes the record and
		// clears the create, or imports a release that was deployed
		// meanwhile (pulumi-kubernetes's ID, <namespace>/<name>).
		{"a Helm release's install", "kubernetes:helm.sh/v3:Release", name + "-karpenter-controller", 20 * time.Second,
			karpenter.Namespace + "/karpenter", false},
	}
	for _, step := range steps {
		started := time.Now().Add(-time.Second) // AWS's clock may run a little behind
		killUpDuring(t, ctx, name, env, step.typ, step.resource, step.after)
		pending := pendingOperations(t, ctx, stack)
		require.NotEmpty(t, pending, "killing pulumi during %s leaves a pending create", step.what)
		// The dead run's lock stays; the recovery never removes it, a
		// person who knows the run is gone does.
		out, err := recoverPending(ctx, name, env)
		require.Error(t, err, "the recovery stops at the dead run's lock: %s", out)
		require.Contains(t, out, "pulumi cancel --stack "+name+" --yes")
		require.NoError(t, stack.Cancel(ctx))
		// The first up of a self-managed stack has no history: the person
		// says when the run started.
		since := []string{"-since", started.UTC().Format(time.RFC3339)}
		out, err = recoverPending(ctx, name, env, since...)
		if !step.imported {
			require.Error(t, err, "a Helm release is a person's to decide: %s", out)
			require.Contains(t, out, "status=pending-install", "the report says which record to delete")
			urn := pendingURN(t, pending, step.typ)
			if helmDecide(t, ctx, name, region, karpenter.Namespace, "karpenter") {
				out, err = recoverPending(ctx, name, env, append(since, "-import", urn+"="+step.id)...)
			} else {
				out, err = recoverPending(ctx, name, env, append(since, "-clear", urn)...)
			}
		}
		require.NoError(t, err, "the recovery after %s: %s", step.what, out)
		assert.Empty(t, pendingOperations(t, ctx, stack), "after the recovery of %s", step.what)
		// Any recovery that reaches `pulumi stack import` leaves no
		// pending operation; the decision is what tells a right one.
		r := stateResource(t, ctx, stack, step.typ, step.resource)
		switch {
		case r != nil:
			assert.Equal(t, step.id, r.ID.String(), "the recovery imported %s with its provider's ID", step.what)
		case step.imported:
			t.Errorf("the recovery of %s did not import it: %s", step.what, out)
		}
	}
	up, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout))
	require.NoError(t, err, "the next pulumi up converges with no other step")
	for _, step := range steps {
		r := stateResource(t, ctx, stack, step.typ, step.resource)
		if assert.NotNil(t, r, "%s, cut off, is in the state after the next up", step.resource) {
			assert.NotEmpty(t, r.ID)
			assert.Equal(t, step.id, r.ID.String())
		}
	}
	// An import that the next run took for a changed object would show as
	// a replacement or a delete.
	if changes := up.Summary.ResourceChanges; changes != nil {
		for _, op := range []string{"replace", "delete", "create-replacement", "delete-replaced"} {
			assert.Zero(t, (*changes)[op], "the converging up does no %s", op)
		}
	}
}

// killUpDuring runs `pulumi up` and kills its process group, SIGKILL,
// after the engine has begun creating resource (of typ) for after.
func killUpDuring(t *testing.T, ctx context.Context, stack string, env map[string]string, typ, resource string, after time.Duration) {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cmd := exec.CommandContext(ctx, "pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", stack, "--event-log", events)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// --event-log exists when PULUMI_DEBUG_COMMANDS is set
	// (pkg/cmd/pulumi/operations/up.go).
	cmd.Env = append(os.Environ(), "PULUMI_DEBUG_COMMANDS=true")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var begun time.Time
	for begun.IsZero() {
		select {
		case err := <-done:
			t.Fatalf("pulumi up ended (%v) before it created %s", err, resource)
		case <-time.After(2 * time.Second):
		}
		if createStarted(events, typ, resource) {
			begun = time.Now()
		}
	}
	select {
	case err := <-done:
		t.Fatalf("pulumi up ended (%v) within %s of creating %s", err, after, resource)
	case <-time.After(after):
	}
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	<-done
	t.Logf("killed pulumi up %s after it began creating %s", time.Since(begun).Round(time.Second), resource)
}

// createStarted reads the engine's event log for the start of the create
// of resource, of typ.
func createStarted(path, typ, resource string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e apitype.EngineEvent
		if json.Unmarshal(scanner.Bytes(), &e) == nil && e.ResourcePreEvent != nil &&
			e.ResourcePreEvent.Metadata.Type == typ && strings.HasSuffix(e.ResourcePreEvent.Metadata.URN, "::"+resource) &&
			e.ResourcePreEvent.Metadata.Op == apitype.OpCreate {
			return true
		}
	}
	return false
}

func pendingOperations(t *testing.T, ctx context.Context, stack auto.Stack) []apitype.OperationV2 {
	t.Helper()
	exported, err := stack.Export(ctx)
	require.NoError(t, err)
	var d apitype.DeploymentV3
	require.NoError(t, json.Unmarshal(exported.Deployment, &d))
	return d.PendingOperations
}

// stateResource is the stack's live resource of typ named name, nil when
// the state holds none.
func stateResource(t *testing.T, ctx context.Context, stack auto.Stack, typ, name string) *apitype.ResourceV3 {
	t.Helper()
	exported, err := stack.Export(ctx)
	require.NoError(t, err)
	var d apitype.DeploymentV3
	require.NoError(t, json.Unmarshal(exported.Deployment, &d))
	for i, r := range d.Resources {
		if string(r.Type) == typ && strings.HasSuffix(string(r.URN), "::"+name) && !r.Delete {
			return &d.Resources[i]
		}
	}
	return nil
}

// pendingURN is the URN of the pending create of type typ.
func pendingURN(t *testing.T, pending []apitype.OperationV2, typ string) string {
	t.Helper()
	for _, op := range pending {
		if string(op.Resource.Type) == typ {
			return string(op.Resource.URN)
		}
	}
	t.Fatalf("no pending create of %s", typ)
	return ""
}

// helmDecide does what the recovery's report tells a person to do with a
// Helm release it leaves undecided: it reads the release's records with
// a kubeconfig the AWS CLI writes, deletes one left pending-install, and
// reports whether a deployed one exists (to import rather than clear).
func helmDecide(t *testing.T, ctx context.Context, cluster, region, namespace, release string) (deployed bool) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	out, err := exec.CommandContext(ctx, "aws", "eks", "update-kubeconfig", "--name", cluster, "--region", region,
		"--kubeconfig", kubeconfig).CombinedOutput()
	require.NoError(t, err, "%s", out)
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	// Helm's secret driver labels each record owner=helm, name=<release>,
	// status=<status> (helm pkg/storage/driver/secrets.go).
	records, err := kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	require.NoError(t, err)
	for _, r := range records.Items {
		switch r.Labels["status"] {
		case "deployed":
			deployed = true
		case "pending-install":
			require.NoError(t, kube.CoreV1().Secrets(namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}))
		}
	}
	return deployed
}

// recoverPending runs the recovery as a person would at the terminal.
func recoverPending(ctx context.Context, stack string, env map[string]string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./cmd/recover-pending", "-stack", stack}, args...)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	os.Stdout.Write(out.Bytes())
	return strings.TrimSpace(out.String()), err
}
