package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/recovery"
	"nodeless-eks/testkit/iamtest"
)

// TestDeployTypesAreInTheRecoveryInventory: the recovery of an interrupted
// run of deploy/ itself knows every type deploy/ registers.
func TestDeployTypesAreInTheRecoveryInventory(t *testing.T) {
	for _, file := range []string{"Pulumi.example.yaml", "Pulumi.fleet-example.yaml"} {
		rec, res := runFile(t, file, nil)
		require.NoError(t, res.Err)
		for _, reg := range rec.All() {
			assert.Contains(t, recovery.Inventory, reg.Type, "deploy/ registers %s (%s): add it to internal/recovery's inventory", reg.Type, file)
		}
	}
}

// TestDeployerPolicyCoversTheRecovery: what the recovery asks of AWS for
// the root program's types, a deploy role may ask, so that the pre-run
// command can decide with the run's own credentials.
func TestDeployerPolicyCoversTheRecovery(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err)
	var registered struct{ Resources []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	doc, err := DeployerPolicy(scope{partition: "aws", region: "eu-west-1", account: account, cluster: "nodeless-eks-prod",
		boundaryArn: "arn:aws:iam::" + account + ":policy/deploy-nodeless-eks-prod-boundary"}).JSON()
	require.NoError(t, err)
	var granted []string
	for _, st := range iamtest.Parse(t, doc) {
		if st.Effect == "Allow" {
			granted = append(granted, st.Action...)
		}
	}
	// pulumi-eks's children (see internal/recovery's inventory test).
	types := append(registered.Resources, "aws:eks/cluster:Cluster", "aws:iam/openIdConnectProvider:OpenIdConnectProvider")
	checked := 0
	for _, typ := range types {
		for _, a := range recovery.Inventory[typ].Actions {
			assert.Truef(t, allows(granted, a), "the recovery of a pending %s calls %s, which the deployer policy does not allow", typ, a)
			checked++
		}
	}
	assert.Greater(t, checked, 20)
}

// TestRecoveryCommand runs the exact pre-run command with fakes of the
// pulumi CLI (a state with or without pending operations) and of go
// (which records that it ran, and runs the real go): a run that was not
// interrupted builds nothing; one that was runs cmd/recover-pending, for
// real, on the state; a state that cannot be read stops the run.
func TestRecoveryCommand(t *testing.T) {
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	realGo, err := exec.LookPath("go")
	require.NoError(t, err)
	bin, work := t.TempDir(), t.TempDir()
	stateFile, goRan, pulumiCalls := filepath.Join(work, "state.json"), filepath.Join(work, "go-ran"), filepath.Join(work, "pulumi-calls")
	pulumi := "#!/bin/sh\necho \"$*\" >> " + pulumiCalls + "\n" +
		"case \"$1 $2\" in\n" +
		"'stack export') [ -f " + stateFile + " ] || { echo 'error: [403] Forbidden' >&2; exit 255; }; cat " + stateFile + ";;\n" +
		"'whoami --json') echo '{\"url\":\"file://" + work + "\"}';;\n" +
		"*) echo \"unexpected pulumi $*\" >&2; exit 2;;\nesac\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pulumi"), []byte(pulumi), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho \"$*\" >> "+goRan+"\nexec "+realGo+" \"$@\"\n"), 0o755))
	run := func(op, state string) (string, error) {
		_ = os.Remove(goRan)
		_ = os.Remove(stateFile)
		if state != "" {
			require.NoError(t, os.WriteFile(stateFile, []byte(state), 0o644))
		}
		cmd := exec.Command("sh", "-c", RecoveryCommand("."))
		cmd.Dir = "." // deploy/: the command finds the root project with git
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PULUMI_CI_OPERATION="+op,
			"PULUMI_CI_ORGANIZATION=organization", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK=dev")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	clean := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": []}}`
	out, err := run("update", clean)
	require.NoError(t, err, out)
	assert.NoFileExists(t, goRan, "a state without pending operations builds nothing")

	// An interrupted update of a role: decided without AWS (the next run
	// performs it again), through the real command.
	interrupted := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": [], "pending_operations": [
		{"type": "updating", "resource": {"urn": "urn:pulumi:dev::nodeless-eks::aws:iam/role:Role::r", "type": "aws:iam/role:Role", "custom": true, "id": "r"}}]}}`
	out, err = run("update", interrupted)
	require.NoError(t, err, out)
	ran, err := os.ReadFile(goRan)
	require.NoError(t, err)
	assert.Equal(t, "run ./cmd/recover-pending\n", string(ran))
	assert.Contains(t, out, "stack organization/nodeless-eks/dev has 1 pending operation(s)")
	assert.Contains(t, out, "retry     r (aws:iam/role:Role, updating)")

	// An import an earlier recovery did not get to read.
	unread := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": [
		{"urn": "urn:pulumi:dev::nodeless-eks::aws:iam/role:Role::r", "type": "aws:iam/role:Role", "custom": true, "id": "r", "initErrors": [` +
		strconv.Quote(recovery.Unread) + `]}]}}`
	require.Contains(t, recovery.Unread, recoveryMark)
	out, _ = run("update", unread)
	ran, err = os.ReadFile(goRan)
	require.NoError(t, err, "an unread import builds the recovery: %s", out)
	assert.Equal(t, "run ./cmd/recover-pending\n", string(ran))

	out, err = run("preview", interrupted)
	require.NoError(t, err, out)
	assert.NoFileExists(t, goRan, "a preview changes no state")

	out, err = run("destroy", "")
	require.Error(t, err, "a state that cannot be read stops the run")
	assert.Contains(t, out, "nodeless-eks: could not read the stack's state to look for what an interrupted run left: error: [403] Forbidden")

	calls, err := os.ReadFile(pulumiCalls)
	require.NoError(t, err)
	assert.Contains(t, string(calls), "stack export --stack organization/nodeless-eks/dev")
	assert.True(t, strings.Count(string(calls), "stack export") >= 3)
}
