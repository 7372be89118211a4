package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accountRoleFiles are the committed documents of the account role, with
// their placeholders, as the setup passes them to aws iam.
var accountRoleFiles = map[string]func() iampolicy.Document{
	"account-role/trust-policy.json": func() iampolicy.Document { return AccountRoleTrust(placeholderPrincipal) },
	"account-role/permissions-policy.json": func() iampolicy.Document {
		return AccountRolePolicy(placeholderPartition, placeholderAccount)
	},
}

// renderAccountRole fills a committed document's placeholders as the
// README's sed command does.
func renderAccountRole(t *testing.T, file, principal, partition, acct string) iampolicy.Document {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	doc, err := iampolicy.Parse(strings.NewReplacer(placeholderPrincipal, principal, placeholderPartition, partition,
		placeholderAccount, acct).Replace(string(raw)))
	require.NoError(t, err)
	return doc
}

// TestAccountRoleDocuments holds the committed account-role documents to
// the code (go test -run TestAccountRoleDocuments -update rewrites them),
// and their sizes to IAM's: a trust policy of 2,048 characters and an
// inline role policy of 10,240.
func TestAccountRoleDocuments(t *testing.T) {
	for file, doc := range accountRoleFiles {
		want, err := json.MarshalIndent(doc(), "", "  ")
		require.NoError(t, err)
		want = append(want, '\n')
		if *update {
			require.NoError(t, os.WriteFile(file, want, 0o644))
		}
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s is generated: go test -run TestAccountRoleDocuments -update", file)
	}
	assert.LessOrEqual(t, renderAccountRole(t, "account-role/trust-policy.json", "arn:aws-us-gov:iam::210987654321:role/platform-admin", "aws-us-gov", prodAccount).Size(), 2048)
	assert.LessOrEqual(t, renderAccountRole(t, "account-role/permissions-policy.json", "", "aws-us-gov", prodAccount).Size(), 10240)
}

// TestAccountRoleCoversWhatDeployCreates evaluates the account role, as
// the setup creates it in production's account from the committed
// documents, on every request deploy/ makes there for what it registers
// and looks up through that account's provider; and on the requests that
// would make it an administrator: none is allowed. Its trust admits the
// principal that runs deploy/ and nobody else.
func TestAccountRoleCoversWhatDeployCreates(t *testing.T) {
	const principal = "arn:aws:iam::" + toolingAccount + ":role/platform-admin"
	policy := renderAccountRole(t, "account-role/permissions-policy.json", principal, "aws", prodAccount)
	trust := renderAccountRole(t, "account-role/trust-policy.json", principal, "aws", prodAccount)
	rec, err := run(t, nil)
	require.NoError(t, err)
	iam := func(res string) string { return "arn:aws:iam::" + prodAccount + ":" + res }

	physical := func(reg *mock.Registration) string {
		if n, ok := reg.Inputs["name"]; ok && n.IsString() {
			return n.StringValue()
		}
		return names.Autoname(reg.Name)
	}
	checked := map[string]int{}
	for _, reg := range rec.All() {
		if !strings.HasPrefix(reg.Type, "aws:") || accountOfReg(t, rec, reg) != prodAccount {
			continue
		}
		actions, ok := accountRoleActions[reg.Type]
		require.Truef(t, ok, "deploy/ registers %s in an account, which accountRoleActions does not cover", reg.Type)
		var resource string
		ctx := map[string][]string{}
		switch reg.Type {
		case "aws:iam/openIdConnectProvider:OpenIdConnectProvider":
			resource = iam("oidc-provider/api.pulumi.com/oidc")
		case "aws:iam/policy:Policy":
			resource = iam("policy/" + physical(reg))
		case "aws:iam/role:Role":
			resource = iam("role/" + physical(reg))
		case "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
			resource = iam("role/" + reg.Inputs["role"].StringValue())
			ctx["iam:PolicyARN"] = []string{reg.Inputs["policyArn"].StringValue()}
		}
		for _, a := range actions {
			checked[reg.Type]++
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, iamtest.Request{Action: a, Resource: resource, Context: ctx}),
				"%s %s needs %s on %s", reg.Type, reg.Name, a, resource)
		}
	}
	for _, typ := range []string{"aws:iam/openIdConnectProvider:OpenIdConnectProvider", "aws:iam/policy:Policy", "aws:iam/role:Role",
		"aws:iam/rolePolicyAttachment:RolePolicyAttachment"} {
		assert.Positivef(t, checked[typ], "no %s of production's account was checked", typ)
	}
	looked := 0
	for _, inv := range rec.Invocations() {
		if !strings.HasPrefix(inv.Provider, "urn:") || !strings.Contains(inv.Provider, "::aws-prod") {
			continue
		}
		actions, ok := accountRoleActions[inv.Token]
		if inv.Token == "aws:index/getCallerIdentity:getCallerIdentity" || inv.Token == "aws:index/getPartition:getPartition" {
			continue
		}
		require.Truef(t, ok, "deploy/ looks up %s in an account, which accountRoleActions does not cover", inv.Token)
		for _, a := range actions {
			looked++
			resource := "*"
			if a == "iam:GetOpenIDConnectProvider" {
				// By URL, the lookup reads every provider of the account.
				resource = iam("oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF")
			}
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, iamtest.Request{Action: a, Resource: resource}), "%s needs %s", inv.Token, a)
		}
	}
	assert.Positive(t, looked, "the preview's lookups in production's account were checked")

	for _, tt := range []struct {
		name string
		req  iamtest.Request
	}{
		{"create a role of another name", iamtest.Request{Action: "iam:CreateRole", Resource: iam("role/admin")}},
		{"create a user", iamtest.Request{Action: "iam:CreateUser", Resource: iam("user/intruder")}},
		{"give a deploy role AdministratorAccess", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: iam("role/deploy-prod-1a2b3c4"),
			Context: map[string][]string{"iam:PolicyARN": {"arn:aws:iam::aws:policy/AdministratorAccess"}}}},
		{"rewrite its own trust", iamtest.Request{Action: "iam:UpdateAssumeRolePolicy", Resource: iam("role/" + AccountRoleName)}},
		{"give itself a policy", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: iam("role/" + AccountRoleName),
			Context: map[string][]string{"iam:PolicyARN": {iam("policy/deploy-x")}}}},
		{"write an inline policy on a deploy role", iamtest.Request{Action: "iam:PutRolePolicy", Resource: iam("role/deploy-prod-1a2b3c4")}},
		{"create a policy of another name", iamtest.Request{Action: "iam:CreatePolicy", Resource: iam("policy/admin")}},
		{"run an instance", iamtest.Request{Action: "ec2:RunInstances", Resource: "arn:aws:ec2:eu-west-1:" + prodAccount + ":instance/*"}},
		{"read the cluster's secrets", iamtest.Request{Action: "eks:DescribeCluster", Resource: "arn:aws:eks:eu-west-1:" + prodAccount + ":cluster/nodeless-eks-prod"}},
	} {
		assert.NotEqualf(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, tt.req), "the account role may not %s", tt.name)
	}

	assume := func(p string) iamtest.Decision {
		return iamtest.Evaluate(trustAsPolicy(trust, p), nil, iamtest.Request{Action: "sts:AssumeRole", Resource: "*"})
	}
	assert.Equal(t, iamtest.Allowed, assume(principal), "the principal that runs deploy/")
	for _, other := range []string{"arn:aws:iam::" + account + ":root", "arn:aws:iam::" + account + ":role/deploy-staging-1a2b3c4", "*",
		"arn:aws:iam::" + toolingAccount + ":root", "arn:aws:iam::" + toolingAccount + ":role/other"} {
		assert.NotEqual(t, iamtest.Allowed, assume(other), "%s may not assume it", other)
	}
	b, err := json.Marshal(trust)
	require.NoError(t, err)
	assert.NotContains(t, string(b), ":root", "no account is trusted as a whole")
}

// trustAsPolicy turns a trust policy into the identity policy that the
// principal p holds by it: its statements whose Principal names p (IAM
// compares the ARN itself), without the Principal.
func trustAsPolicy(trust iampolicy.Document, p string) iampolicy.Document {
	var out iampolicy.Document
	out.Version = trust.Version
	for _, s := range trust.Statement {
		m, ok := s.Principal.(map[string]any)
		if !ok || m["AWS"] != p {
			continue
		}
		s.Principal = nil
		out.Statement = append(out.Statement, s)
	}
	return out
}

// TestChecklistCommands runs step 4's sed commands from README.md on the
// committed documents, and holds step 7's stack file to RootStackFile.
func TestChecklistCommands(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(raw)
	var seds []string
	for _, line := range strings.Split(readme, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "sed ") && strings.Contains(l, "deploy/account-role/") {
			seds = append(seds, l)
		}
	}
	require.Len(t, seds, 2, "step 4 renders the trust and the permissions")
	tmp := t.TempDir()
	const principal = "arn:aws:iam::210987654321:role/platform-admin"
	for _, sed := range seds {
		script := strings.ReplaceAll(sed, "/tmp/", tmp+"/")
		cmd := exec.Command("sh", "-c", "cd .. && "+script)
		cmd.Env = append(os.Environ(), "DEPLOYER="+principal, "ACCOUNT="+prodAccount)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", sed, out)
	}
	for file, want := range map[string]iampolicy.Document{
		"trust.json": AccountRoleTrust(principal), "permissions.json": AccountRolePolicy("aws", prodAccount),
	} {
		got, err := os.ReadFile(filepath.Join(tmp, file))
		require.NoError(t, err)
		wantJSON, err := want.JSON()
		require.NoError(t, err)
		assert.JSONEq(t, wantJSON, string(got), "the README's sed gives what the code means by %s", file)
	}
	checkGenerated(t, "README.md", "stack-file", "```yaml\n"+RootStackFile(configOf(t, "Pulumi.example.yaml", nil), "prod", "aws")+"```\n")
}
