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

	"nodeless-eks/internal/names"
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
// command can decide with the run's own credentials. Each action is
// evaluated, with the policy's resources and conditions, on an object the
// finder reads: in the stack's account and region, named as the program
// names it.
func TestDeployerPolicyCoversTheRecovery(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err)
	var registered struct{ Resources []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	const cluster, region = "nodeless-eks-prod", "eu-west-1"
	policy := DeployerPolicy(scope{partition: "aws", region: region, account: account, cluster: cluster,
		boundaryArn: "arn:aws:iam::" + account + ":policy/deploy-nodeless-eks-prod-boundary"})
	doc, err := policy.JSON()
	require.NoError(t, err)
	var granted []string
	for _, st := range iamtest.Parse(t, doc) {
		if st.Effect == "Allow" {
			granted = append(granted, st.Action...)
		}
	}
	arn := func(service, resource string) string {
		return "arn:aws:" + service + ":" + region + ":" + account + ":" + resource
	}
	role := "arn:aws:iam::" + account + ":role/" + cluster + "-karpenter-controller-1a2b3c4"
	key := arn("kms", "key/1234abcd-12ab-34cd-56ef-1234567890ab")
	// IAM is global: its calls are made in us-east-1.
	inIAM := map[string][]string{"aws:RequestedRegion": {"us-east-1"}}
	inRegion := map[string][]string{"aws:RequestedRegion": {region}}
	tagged := func(tag string) map[string][]string {
		return map[string][]string{"aws:RequestedRegion": {region}, "aws:ResourceTag/" + tag: {cluster}}
	}
	// What each action is asked of. The recovery reads the tags of every
	// key (an untagged one too) and describes only those tagged for the
	// cluster; it revokes the default egress of the node security group
	// the cut-off create made, which carries the discovery tag.
	requests := map[string]iamtest.Request{
		"iam:GetRole":                      {Resource: role, Context: inIAM},
		"iam:ListAttachedRolePolicies":     {Resource: role, Context: inIAM},
		"iam:GetPolicy":                    {Resource: "arn:aws:iam::" + account + ":policy/" + cluster + "-karpenter-controller-9f8e7d6", Context: inIAM},
		"iam:GetOpenIDConnectProvider":     {Resource: "arn:aws:iam::" + account + ":oidc-provider/oidc.eks." + region + ".amazonaws.com/id/ABC", Context: inIAM},
		"sqs:GetQueueUrl":                  {Resource: arn("sqs", cluster+"-karpenter-interruption-queue-5d4c3b2"), Context: inRegion},
		"sqs:GetQueueAttributes":           {Resource: arn("sqs", cluster+"-karpenter-interruption-queue-5d4c3b2"), Context: inRegion},
		"events:DescribeRule":              {Resource: arn("events", "rule/"+cluster+"-karpenter-spot-0a1b2c3"), Context: inRegion},
		"events:ListTargetsByRule":         {Resource: arn("events", "rule/"+cluster+"-karpenter-spot-0a1b2c3"), Context: inRegion},
		"logs:DescribeLogGroups":           {Resource: arn("logs", "log-group:*"), Context: inRegion},
		"kms:ListKeys":                     {Resource: "*", Context: inRegion},
		"kms:ListAliases":                  {Resource: "*", Context: inRegion},
		"kms:ListResourceTags":             {Resource: key, Context: inRegion},
		"kms:DescribeKey":                  {Resource: key, Context: tagged(names.ClusterTagKey)},
		"ec2:DescribeSecurityGroups":       {Resource: "*", Context: inRegion},
		"ec2:DescribeSecurityGroupRules":   {Resource: "*", Context: inRegion},
		"ec2:RevokeSecurityGroupEgress":    {Resource: arn("ec2", "security-group/sg-0123456789abcdef0"), Context: tagged(names.DiscoveryTagKey)},
		"eks:DescribeCluster":              {Resource: arn("eks", "cluster/"+cluster), Context: inRegion},
		"eks:DescribeFargateProfile":       {Resource: arn("eks", "fargateprofile/"+cluster+"/"+cluster+"-karpenter-6b7c8d9/0ec7"), Context: inRegion},
		"eks:DescribeAddon":                {Resource: arn("eks", "addon/"+cluster+"/coredns/0ec7"), Context: inRegion},
		"eks:DescribeAccessEntry":          {Resource: arn("eks", "access-entry/"+cluster+"/role/"+account+"/"+cluster+"-karpenter-node/0ec7"), Context: inRegion},
		"eks:ListAssociatedAccessPolicies": {Resource: arn("eks", "access-entry/"+cluster+"/role/"+account+"/ops/0ec7"), Context: inRegion},
		"eks:ListPodIdentityAssociations":  {Resource: arn("eks", "cluster/"+cluster), Context: inRegion},
	}
	// pulumi-eks's children (see internal/recovery's inventory test).
	types := append(registered.Resources, "aws:eks/cluster:Cluster", "aws:iam/openIdConnectProvider:OpenIdConnectProvider")
	checked := 0
	for _, typ := range types {
		for _, a := range recovery.Inventory[typ].Actions {
			assert.Truef(t, allows(granted, a), "the recovery of a pending %s calls %s, which the deployer policy does not allow", typ, a)
			req, ok := requests[a]
			if !assert.Truef(t, ok, "the recovery of a pending %s calls %s: add the object it asks it of", typ, a) {
				continue
			}
			req.Action = a
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, req), "the recovery of a pending %s calls %s on %s", typ, a, req.Resource)
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

	// A drift remediation is `pulumi up --refresh`: it recovers first.
	out, err = run("remediate-drift", interrupted)
	require.NoError(t, err, out)
	ran, err = os.ReadFile(goRan)
	require.NoError(t, err, "a drift remediation writes state: it recovers first: %s", out)
	assert.Equal(t, "run ./cmd/recover-pending\n", string(ran))

	for _, op := range []string{"preview", "detect-drift"} {
		out, err = run(op, interrupted)
		require.NoError(t, err, out)
		assert.NoFileExists(t, goRan, "a %s changes no state", op)
	}

	out, err = run("destroy", "")
	require.Error(t, err, "a state that cannot be read stops the run")
	assert.Contains(t, out, "nodeless-eks: could not read the stack's state to look for what an interrupted run left: error: [403] Forbidden")

	calls, err := os.ReadFile(pulumiCalls)
	require.NoError(t, err)
	assert.Contains(t, string(calls), "stack export --stack organization/nodeless-eks/dev")
	assert.True(t, strings.Count(string(calls), "stack export") >= 3)
}
