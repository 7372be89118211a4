package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/recovery"
	"nodeless-eks/testkit/iamtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundaryArn is the ARN of a stack's boundary in an account.
func boundaryArn(acct, key string) string {
	return "arn:aws:iam::" + acct + ":policy/deploy-nodeless-eks-" + key + "-boundary"
}

// fakePulumi writes a pulumi that answers `config get <key>` from FAKE_*
// variables, like the real CLI failing for a key the stack does not set,
// and with FAKE_FAIL as it would for a stack it cannot read; it records
// where it ran.
func fakePulumi(t *testing.T) (bin, where string) {
	t.Helper()
	bin = t.TempDir()
	where = filepath.Join(t.TempDir(), "pwd")
	fake := "#!/bin/sh\npwd > " + where + "\n" +
		"[ -n \"$FAKE_FAIL\" ] && { echo \"$FAKE_FAIL\" >&2; exit 255; }\n" +
		"case \"$3\" in\n*:iamPermissionsBoundary) v=\"$FAKE_BOUNDARY\";;\naws:region) v=\"$FAKE_REGION\";;\n" +
		"*:clusterName) v=\"$FAKE_CLUSTER\";;\n*:production) v=\"$FAKE_PRODUCTION\";;\nesac\n" +
		"[ -n \"$v\" ] || { echo \"error: configuration key '$3' not found for stack '$5'\" >&2; exit 255; }\n" +
		"echo \"$v\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pulumi"), []byte(fake), 0o755))
	return bin, where
}

// TestStackCheckCommand runs the pre-run stack check with a fake pulumi:
// a stack file its deploy role cannot carry out stops the run in seconds,
// saying which key to set; the CLI's failure to read the stack is not
// taken for a wrong value.
func TestStackCheckCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH; the command finds the checkout with git")
	}
	bin, where := fakePulumi(t)
	c := configOf(t, "Pulumi.example.yaml", nil)
	arn := boundaryArn(prodAccount, "prod")
	tmp := t.TempDir()
	run := func(template string, stack string, env ...string) (string, error) {
		cmd := exec.Command("sh", "-c", StackCheckCommand(c, arn, RoleOf(c, template)))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BOUNDARY="+arn, "FAKE_REGION=eu-west-1",
			"FAKE_CLUSTER=nodeless-eks-prod", "FAKE_PRODUCTION=true",
			"PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK="+stack, "TMPDIR="+tmp)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("prod", "prod")
	require.NoError(t, err, out)
	pwd, err := os.ReadFile(where)
	require.NoError(t, err)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(top)), strings.TrimSpace(string(pwd)), "pulumi config runs in the project's directory")

	for _, tt := range []struct {
		name, template, stack string
		env                   []string
		want                  string
	}{
		{"no boundary", "prod", "prod", []string{"FAKE_BOUNDARY="}, "stack prod must set nodeless-eks:iamPermissionsBoundary to " + arn},
		{"another region", "prod", "prod", []string{"FAKE_REGION=us-east-1"}, `stack prod must set aws:region to eu-west-1 (it has "us-east-1")`},
		{"a file copied from staging", "prod", "prod", []string{"FAKE_CLUSTER=nodeless-eks-staging"},
			`stack prod must set nodeless-eks:clusterName to nodeless-eks-prod (it has "nodeless-eks-staging")`},
		{"production unset", "prod", "prod", []string{"FAKE_PRODUCTION="}, `stack prod must set nodeless-eks:production to true (it has "false")`},
		{"a review stack outside the prefix", "pr", "pr-7", []string{"FAKE_PRODUCTION=false"},
			"stack pr-7 must set nodeless-eks:clusterName to a name that starts with nodeless-eks-pr-"},
		{"a review stack that says production", "pr", "pr-7", []string{"FAKE_CLUSTER=", "FAKE_PRODUCTION=true"},
			`stack pr-7 must set nodeless-eks:production to false (it has "true")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, err := run(tt.template, tt.stack, tt.env...)
			require.Error(t, err, "the run stops: %s", out)
			assert.Contains(t, out, tt.want)
			assert.Less(t, time.Since(start), 5*time.Second, "before any build")
		})
	}
	out, err = run("pr", "pr-7", "FAKE_CLUSTER=", "FAKE_PRODUCTION=")
	require.NoError(t, err, "an unset clusterName is nodeless-eks-pr-7: %s", out)

	out, err = run("prod", "prod", "FAKE_FAIL=error: failed to load stack: [401] Unauthorized")
	require.Error(t, err)
	assert.Contains(t, out, "could not read nodeless-eks:iamPermissionsBoundary of stack prod, so its value is not checked")
	assert.Contains(t, out, "error: failed to load stack: [401] Unauthorized")
	assert.NotContains(t, out, "must set")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the captured output is removed")
}

// TestStackFileIsWhatTheRoleCarriesOut: the stack file the checklist
// writes for each stack passes its stack check.
func TestStackFileIsWhatTheRoleCarriesOut(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	c := configOf(t, "Pulumi.example.yaml", nil)
	for _, stack := range []string{"prod", "staging", "pr"} {
		file := StackFile(c, stack, "aws")
		r := RoleOf(c, stack)
		value := func(key string) string {
			for _, line := range strings.Split(file, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+": "); ok {
					return v
				}
			}
			return ""
		}
		bin, _ := fakePulumi(t)
		cmd := exec.Command("sh", "-c", StackCheckCommand(c, BoundaryArn(c, "aws", c.Accounts[r.Account].ID, r.Key), r))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BOUNDARY="+value("nodeless-eks:iamPermissionsBoundary"),
			"FAKE_REGION="+value("aws:region"), "FAKE_CLUSTER="+value("nodeless-eks:clusterName"), "FAKE_PRODUCTION="+value("nodeless-eks:production"),
			"PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK="+strings.Replace(stack, "pr", "pr-42", 1), "TMPDIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s\n%s", stack, file, out)
	}
	assert.Contains(t, StackFile(c, "prod", "aws"), "nodeless-eks:production: true")
	assert.NotContains(t, StackFile(c, "staging", "aws"), "production")
}

// TestGitHubTokenCheckCommand: a run with the token the settings give it,
// or none, goes on; one with Pulumi's app token stops before the
// repository's code.
func TestGitHubTokenCheckCommand(t *testing.T) {
	run := func(env ...string) (string, error) {
		cmd := exec.Command("sh", "-c", GitHubTokenCheckCommand())
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	_, err := run("GITHUB_TOKEN=" + GitHubTokenWithheld)
	require.NoError(t, err)
	_, err = run()
	require.NoError(t, err, "no token at all")
	out, err := run("GITHUB_TOKEN=ghs_16C7e42F292c6912E7710c838347Ae178B4a")
	require.Error(t, err)
	assert.Contains(t, out, "this run holds in GITHUB_TOKEN or GITHUB_ENTERPRISE_TOKEN or GH_ENTERPRISE_TOKEN a token that deploy/ did not give it")
	for _, v := range []string{"GITHUB_ENTERPRISE_TOKEN", "GH_ENTERPRISE_TOKEN"} {
		_, err = run("GITHUB_TOKEN="+GitHubTokenWithheld, v+"=ghs_16C7e42F292c6912E7710c838347Ae178B4a")
		require.Error(t, err, "%s holds Pulumi's token", v)
	}
}

// TestRecoveryCommand runs the pre-run recovery with a fake pulumi CLI and
// the real go: a run that was not interrupted builds nothing; one that was
// runs cmd/recover-pending, for real, on the state; a state that cannot
// be read stops the run.
func TestRecoveryCommand(t *testing.T) {
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	realGo, err := exec.LookPath("go")
	require.NoError(t, err)
	bin, work := t.TempDir(), t.TempDir()
	stateFile, goRan := filepath.Join(work, "state.json"), filepath.Join(work, "go-ran")
	pulumi := "#!/bin/sh\ncase \"$1 $2\" in\n" +
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
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PULUMI_CI_OPERATION="+op,
			"PULUMI_CI_ORGANIZATION=organization", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK=dev")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	clean := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": []}}`
	out, err := run("update", clean)
	require.NoError(t, err, out)
	assert.NoFileExists(t, goRan, "a state without pending operations builds nothing")

	interrupted := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": [], "pending_operations": [
		{"type": "updating", "resource": {"urn": "urn:pulumi:dev::nodeless-eks::aws:iam/role:Role::r", "type": "aws:iam/role:Role", "custom": true, "id": "r"}}]}}`
	out, err = run("update", interrupted)
	require.NoError(t, err, out)
	ran, err := os.ReadFile(goRan)
	require.NoError(t, err)
	assert.Equal(t, "run ./cmd/recover-pending\n", string(ran))
	assert.Contains(t, out, "retry     r (aws:iam/role:Role, updating)")

	unread := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": [
		{"urn": "urn:pulumi:dev::nodeless-eks::aws:iam/role:Role::r", "type": "aws:iam/role:Role", "custom": true, "id": "r", "initErrors": [` +
		strconv.Quote(recovery.Unread) + `]}]}}`
	require.Contains(t, recovery.Unread, recoveryMark)
	out, _ = run("update", unread)
	_, err = os.ReadFile(goRan)
	require.NoError(t, err, "an unread import builds the recovery: %s", out)

	// A killed up, mid-create of the cluster: the pre-run resolves it with
	// no person, through cmd/recover-pending with a fake pulumi and aws
	// CLI (the state is written by `stack import`, read by the refresh).
	cluster := `{"urn": "urn:pulumi:dev::nodeless-eks::aws:eks/cluster:Cluster::eks-demo-eksCluster", "type": "aws:eks/cluster:Cluster", ` +
		`"custom": true, "provider": "urn:pulumi:dev::nodeless-eks::pulumi:providers:aws::default::p1", ` +
		`"inputs": {"name": "eks-demo", "roleArn": "arn:aws:iam::123456789012:role/eks-demo-cluster"}}`
	killed := `{"version": 3, "deployment": {"manifest": {"time": "2026-12-01T10:00:00Z"}, "resources": [
		{"urn": "urn:pulumi:dev::nodeless-eks::pulumi:providers:aws::default", "type": "pulumi:providers:aws", "custom": true, "id": "p1",
		 "inputs": {"region": "eu-west-1", "allowedAccountIds": "[\"123456789012\"]"}}],
		"pending_operations": [{"type": "creating", "resource": ` + cluster + `}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pulumi"), []byte(pulumi[:strings.Index(pulumi, "*)")]+
		"'stack history') echo '[{\"startTime\":\"2026-12-01T09:00:00Z\",\"endTime\":\"2026-12-01T09:10:00Z\",\"result\":\"succeeded\"}]';;\n"+
		"'stack import') cp \"$4\" "+stateFile+";;\n"+
		"'refresh --yes') sed -i '/nodeless-eks recovery: imported/d' "+stateFile+";;\n"+
		"*) echo \"unexpected pulumi $*\" >&2; exit 2;;\nesac\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "aws"), []byte("#!/bin/sh\ncase \"$1 $2\" in\n"+
		"'sts get-caller-identity') echo '{\"Account\":\"123456789012\",\"Arn\":\"arn:aws:sts::123456789012:assumed-role/deploy-dev/x\"}';;\n"+
		"'eks describe-cluster') echo '{\"cluster\":{\"status\":\"ACTIVE\",\"roleArn\":\"arn:aws:iam::123456789012:role/eks-demo-cluster\","+
		"\"createdAt\":\"2026-12-01T09:30:00Z\"}}';;\n*) echo \"unexpected aws $*\" >&2; exit 2;;\nesac\n"), 0o755))
	out, err = run("update", killed)
	require.NoError(t, err, out)
	t.Log(out)
	assert.Contains(t, out, "import    eks-demo-eksCluster (aws:eks/cluster:Cluster, creating)")
	recovered, err := os.ReadFile(stateFile)
	require.NoError(t, err)
	assert.NotContains(t, string(recovered), "pending_operations", "no pending operation is left for the run")
	assert.Contains(t, string(recovered), `"id": "eks-demo"`, "the cluster is in the state")
	assert.NotContains(t, string(recovered), recoveryMark, "and was read by the refresh")

	for _, op := range []string{"preview", "detect-drift"} {
		out, err = run(op, interrupted)
		require.NoError(t, err, out)
		assert.NoFileExists(t, goRan, "a %s changes no state", op)
	}
	out, err = run("destroy", "")
	require.Error(t, err, "a state that cannot be read stops the run")
	assert.Contains(t, out, "could not read the stack's state to look for what an interrupted run left: error: [403] Forbidden")
}

// TestDeployerPolicyCoversTheRecovery: what the recovery asks of AWS for
// the root program's types, a deploy role may ask, so that the pre-run
// command decides with the run's own credentials.
func TestDeployerPolicyCoversTheRecovery(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err)
	var registered struct{ Resources []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	const cluster, region, account = "nodeless-eks-prod", "eu-west-1", prodAccount
	// What deploy/ registers for production's deploy role, as IAM gets it.
	rec, res := newWorld(t, "Pulumi.example.yaml", nil).run(t, false)
	require.NoError(t, res.Err)
	policy := policyOf(t, rec, "prod")
	arn := func(service, resource string) string {
		return "arn:aws:" + service + ":" + region + ":" + account + ":" + resource
	}
	inRegion := map[string][]string{"aws:RequestedRegion": {region}}
	requests := map[string]iamtest.Request{
		"sqs:GetQueueUrl":            {Resource: arn("sqs", cluster+"-karpenter-interruption-queue-5d4c3b2"), Context: inRegion},
		"sqs:GetQueueAttributes":     {Resource: arn("sqs", cluster+"-karpenter-interruption-queue-5d4c3b2"), Context: inRegion},
		"eks:DescribeCluster":        {Resource: arn("eks", "cluster/"+cluster), Context: inRegion},
		"eks:DescribeFargateProfile": {Resource: arn("eks", "fargateprofile/"+cluster+"/"+cluster+"-karpenter-6b7c8d9/0ec7"), Context: inRegion},
		"eks:DescribeAddon":          {Resource: arn("eks", "addon/"+cluster+"/coredns/0ec7"), Context: inRegion},
	}
	// pulumi-eks's cluster, and the NAT gateway of a stack that makes its
	// VPC (the golden's stacks name theirs).
	types := append(registered.Resources, "aws:eks/cluster:Cluster", "aws:ec2/natGateway:NatGateway")
	checked := 0
	for _, typ := range types {
		for _, a := range recovery.Inventory[typ].Actions {
			req, ok := requests[a]
			if strings.HasPrefix(a, "ec2:Describe") {
				req, ok = iamtest.Request{Resource: "*", Context: inRegion}, true // no resource-level scope
			}
			if !assert.Truef(t, ok, "the recovery of a pending %s calls %s: add the object it asks it of", typ, a) {
				continue
			}
			req.Action = a
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, req), "the recovery of a pending %s calls %s on %s", typ, a, req.Resource)
			checked++
		}
	}
	assert.GreaterOrEqual(t, checked, 6, "the queue's two, the NAT gateway's, the cluster's, the Fargate profile's, the add-on's")
}
