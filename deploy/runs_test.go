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
	"nodeless-eks/testkit/apiserver"
	"nodeless-eks/testkit/iamtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundaryArn is the ARN of a stack's boundary in an account.
func boundaryArn(acct, key string) string {
	return "arn:aws:iam::" + acct + ":policy/deploy-nodeless-eks-" + key + "-boundary"
}

// realPulumi is the Pulumi CLI test/pulumicli/install.sh builds, v3.276.0
// (deploy/'s SDK's), or $NODELESS_EKS_PULUMI_CLI.
func realPulumi(t *testing.T) string {
	return apiserver.Cached(t, "NODELESS_EKS_PULUMI_CLI", "NODELESS_EKS_PULUMI_CLI_REQUIRED", filepath.Join("pulumi-v3.276.0", "pulumi"),
		"test/pulumicli/install.sh")
}

// TestStackConfigIsDeclared runs the pre-run that sets the keys a deploy
// role decides, as deploy/ writes it into each stack's settings, and the
// stack files it exports, with the real Pulumi CLI on a file backend: a stack file
// copied from another stack runs as its own stack's role allows, the keys
// deploy/ does not decide stay, a review stack gets its cluster name, the
// file the checklist commits holds what the run declares (but what it
// leaves unset), and a stack the CLI cannot load stops the run, saying so.
func TestStackConfigIsDeclared(t *testing.T) {
	cli := realPulumi(t)
	// The project in a directory of the repository, and the pre-run
	// started in another one.
	w := newWorld(t, "Pulumi.example.yaml", map[string]string{"repoDir": "infra"})
	_, res := w.run(t, false)
	require.NoError(t, res.Err)
	c, files := w.c, res.Exports["stackFiles"].(map[string]string)
	// The pre-run command that sets config, from the settings written.
	written := func(stack string) string {
		for _, cmd := range field(w.settingsOf(t, stack), "operationContext.preRunCommands").([]any) {
			if strings.Contains(cmd.(string), "pulumi config set") {
				return cmd.(string)
			}
		}
		t.Fatalf("stack %s's settings set no config", stack)
		return ""
	}
	repo, bin := t.TempDir(), t.TempDir()
	work, elsewhere := filepath.Join(repo, "infra"), filepath.Join(repo, "docs")
	require.NoError(t, os.MkdirAll(work, 0o755))
	require.NoError(t, os.MkdirAll(elsewhere, 0o755))
	require.NoError(t, os.Symlink(cli, filepath.Join(bin, "pulumi")))
	require.NoError(t, os.WriteFile(filepath.Join(work, "Pulumi.yaml"), []byte("name: nodeless-eks\nruntime: go\n"), 0o644))
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PULUMI_HOME="+t.TempDir(), "PULUMI_BACKEND_URL=file://"+t.TempDir(),
		"PULUMI_CONFIG_PASSPHRASE=test", "PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_CI_ORGANIZATION=organization", "PULUMI_CI_PROJECT=nodeless-eks")
	pulumi := func(args ...string) string {
		cmd := exec.Command(cli, args...)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "pulumi %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	require.NoError(t, exec.Command("git", "init", "-q", repo).Run(), "the pre-run finds the project through git")
	for _, s := range []string{"prod", "staging", "pr-7", "pr-42"} {
		pulumi("stack", "init", "organization/nodeless-eks/"+s, "--non-interactive")
	}
	preRun := func(template, stack string) (string, error) {
		cmd := exec.Command("sh", "-c", written(template))
		cmd.Dir, cmd.Env = elsewhere, append(env, "PULUMI_CI_STACK="+stack)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	config := func(stack string) map[string]string {
		var values map[string]struct{ Value string }
		require.NoError(t, json.Unmarshal([]byte(pulumi("config", "--json", "--stack", "organization/nodeless-eks/"+stack)), &values))
		out := map[string]string{}
		for k, v := range values {
			out[k] = v.Value
		}
		return out
	}

	// Staging's file, and a key deploy/ does not decide, on prod.
	file := files["staging"] + "  nodeless-eks:corednsReplicas: \"3\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(work, "Pulumi.prod.yaml"), []byte(file), 0o644))
	start := time.Now()
	out, err := preRun("prod", "prod")
	require.NoError(t, err, out)
	assert.Less(t, time.Since(start), 10*time.Second, "seconds, before any build")
	got := config("prod")
	assert.Equal(t, boundaryArn(prodAccount, "prod"), got["nodeless-eks:iamPermissionsBoundary"])
	assert.Equal(t, "nodeless-eks-prod", got["nodeless-eks:clusterName"])
	assert.Equal(t, "true", got["nodeless-eks:production"])
	assert.Equal(t, c.Stacks["prod"].Region, got["aws:region"])
	assert.Equal(t, "3", got["nodeless-eks:corednsReplicas"], "a key deploy/ does not decide stays")

	// A review stack with no file, and one whose file names another cluster.
	out, err = preRun("pr", "pr-7")
	require.NoError(t, err, out)
	assert.Equal(t, "nodeless-eks-pr-7", config("pr-7")["nodeless-eks:clusterName"])
	assert.Equal(t, "false", config("pr-7")["nodeless-eks:production"])

	// The file the checklist commits holds what each run declares, but
	// for what it leaves unset: production when false, and a review
	// stack's own cluster.
	for template, stack := range map[string]string{"prod": "prod", "staging": "staging", "pr": "pr-42"} {
		file := files[template]
		if template == "pr" {
			file += "  nodeless-eks:clusterName: nodeless-eks-pr-42\n  nodeless-eks:production: false\n"
		} else if !c.Stacks[stack].Production {
			file += "  nodeless-eks:production: false\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(work, "Pulumi."+stack+".yaml"), []byte(file), 0o644))
		before := config(stack)
		out, err := preRun(template, stack)
		require.NoError(t, err, out)
		assert.Equal(t, before, config(stack), "%s: the stack file is what the run declares", stack)
	}

	assert.Contains(t, files["prod"], "nodeless-eks:production: true")
	assert.NotContains(t, files["staging"], "production")

	out, err = preRun("pr", "pr-404")
	require.Error(t, err, "a stack the CLI cannot load")
	assert.Contains(t, out, "no stack named 'organization/nodeless-eks/pr-404' found")
	assert.Contains(t, out, "nodeless-eks: could not set the keys that stack pr-404's deploy role decides")
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
