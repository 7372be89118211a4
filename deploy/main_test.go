package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakecloud"
	"nodeless-eks/testkit/iamtest"
	"nodeless-eks/testkit/mock"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	project = "nodeless-eks-deploy"
	// account is the account the credentials running deploy/ are for (the
	// example's dev account); prodAccount the production account it
	// reaches through a role.
	account     = fakeaws.AccountID
	prodAccount = "111122223333"
)

// cloudToken is the token the fake Pulumi Cloud accepts.
const cloudToken = "pul-admin-token"

// withCloud points the program's Pulumi Cloud client at a fake whose
// organizations (my-org, the example's, and acme, the fleet's) answer org
// as their metadata (a *fakecloud.OrgMetadata, or any other JSON), with a
// token it accepts.
func withCloud(t *testing.T, org any) *fakecloud.API {
	t.Helper()
	api := fakecloud.New(cloudToken, "my-org/nodeless-eks/none")
	t.Cleanup(api.Close)
	api.Put("/api/orgs/my-org/metadata", org)
	api.Put("/api/orgs/acme/metadata", org)
	api.PutOrg("my-org", isolatedOrg())
	api.PutOrg("acme", isolatedOrg())
	t.Setenv("PULUMI_API", api.URL)
	t.Setenv("PULUMI_ACCESS_TOKEN", cloudToken)
	t.Setenv("PULUMI_HOME", t.TempDir())
	return api
}

// isolated is an organization whose defaults isolate production, with
// the features of the example's editions.
var isolated = &fakecloud.OrgMetadata{DefaultStackPermission: 0, DefaultEnvironmentPermission: "none",
	Features: map[string]bool{"driftDetectionEnabled": true, "driftRemediationEnabled": true, "teamsEnabled": true}}

// runFile runs the program with a stack file of deploy/ and the given
// changes, against an organization whose defaults isolate production.
func runFile(t *testing.T, stackFile string, set map[string]string) (*mock.Recorder, mock.Result) {
	t.Helper()
	return runFleet(t, stackFile, set)
}

// run runs the program with Pulumi.example.yaml and the given changes.
func run(t *testing.T, set map[string]string) (*mock.Recorder, error) {
	rec, res := runFile(t, "Pulumi.example.yaml", set)
	return rec, res.Err
}

// policyOf is a role's deployer policy, its registered parts as one
// document, each part within a managed policy's size.
func policyOf(t *testing.T, rec *mock.Recorder, role string) iampolicy.Document {
	t.Helper()
	var all iampolicy.Document
	for i := 1; ; i++ {
		reg, ok := rec.Find("aws:iam/policy:Policy", fmt.Sprintf("%s-%d", role, i))
		if !ok {
			break
		}
		doc, err := iampolicy.Parse(reg.Inputs["policy"].StringValue())
		require.NoError(t, err)
		assert.LessOrEqual(t, doc.Size(), iampolicy.MaxManagedPolicySize, "%s part %d fits a managed policy", role, i)
		all.Version, all.Statement = doc.Version, append(all.Statement, doc.Statement...)
	}
	require.NotEmpty(t, all.Statement, "the deployer policy of %s", role)
	return all
}

// boundaryOf is the registered permissions boundary of a stack (or of the
// review template).
func boundaryOf(t *testing.T, rec *mock.Recorder, key string) iampolicy.Document {
	t.Helper()
	doc, err := iampolicy.Parse(rec.Get(t, "aws:iam/policy:Policy", "boundary-"+key).Inputs["policy"].StringValue())
	require.NoError(t, err)
	return doc
}

// trustOf is a role's registered trust policy.
func trustOf(t *testing.T, rec *mock.Recorder, role string) iampolicy.Document {
	t.Helper()
	doc, err := iampolicy.Parse(rec.Get(t, "aws:iam/role:Role", role).Inputs["assumeRolePolicy"].StringValue())
	require.NoError(t, err)
	return doc
}

// accountOfReg is the account a registration was created in: its
// provider's allowedAccountIds, or the default credentials' account.
func accountOfReg(t *testing.T, rec *mock.Recorder, reg *mock.Registration) string {
	t.Helper()
	if reg.ProviderURN() == "" {
		return toolingAccount
	}
	p, ok := rec.ByURN(reg.ProviderURN())
	require.True(t, ok)
	return p.Inputs["allowedAccountIds"].ArrayValue()[0].StringValue()
}

// boundaryArn is the ARN of a stack's boundary in an account.
func boundaryArn(acct, stack string) string {
	return "arn:aws:iam::" + acct + ":policy/deploy-nodeless-eks-" + stack + "-boundary"
}

func TestExampleConfig(t *testing.T) {
	rec, err := run(t, nil)
	require.NoError(t, err)

	t.Run("each account is reached through its own account role, and production's resources only in production's account", func(t *testing.T) {
		providers := map[string]*mock.Registration{}
		for _, p := range rec.OfType("pulumi:providers:aws") {
			providers[p.Name] = p
		}
		require.Len(t, providers, 2, "deploy/ runs in a tooling account of its own and reaches both through roles")
		for name, acct := range map[string]string{"aws-prod": prodAccount, "aws-dev": account} {
			p := providers[name]
			require.NotNil(t, p, name)
			assert.Equal(t, []any{acct}, p.Inputs["allowedAccountIds"].Mappable(), "a wrong roleArn fails instead of acting elsewhere")
			assert.Equal(t, "arn:aws:iam::"+acct+":role/"+AccountRoleName, p.Inputs["assumeRole"].ObjectValue()["roleArn"].StringValue())
		}
		for _, reg := range rec.All() {
			if !strings.HasPrefix(reg.Type, "aws:") {
				continue
			}
			want := account
			if reg.Name == "deploy-prod" || strings.HasPrefix(reg.Name, "deploy-prod-") || reg.Name == "boundary-prod" || reg.Name == "pulumi-cloud-prod" {
				want = prodAccount
			}
			assert.Equal(t, want, accountOfReg(t, rec, reg), "%s %s", reg.Type, reg.Name)
		}
	})

	t.Run("Pulumi Cloud is an OIDC provider in each account, with ESC's audience only where an environment logs in", func(t *testing.T) {
		audiences := func(name string) []any {
			p := rec.Get(t, "aws:iam/openIdConnectProvider:OpenIdConnectProvider", name)
			assert.Equal(t, "https://api.pulumi.com/oidc", p.Inputs["url"].StringValue())
			assert.Equal(t, "organization/"+project+"/admin", p.Inputs["tags"].ObjectValue()[OwnerTagKey].StringValue(), "tagged as this deploy/ stack's")
			return p.Inputs["clientIdLists"].Mappable().([]any)
		}
		assert.Equal(t, []any{"my-org", "aws:my-org"}, audiences("pulumi-cloud-dev"))
		assert.Equal(t, []any{"my-org"}, audiences("pulumi-cloud-prod"), "production has no ESC environment")
	})

	t.Run("a role per stack, trusted by that stack's runs alone", func(t *testing.T) {
		var names []string
		for _, r := range rec.OfType("aws:iam/role:Role") {
			names = append(names, r.Name)
		}
		assert.ElementsMatch(t, []string{"deploy-prod", "deploy-staging", "deploy-review"}, names)

		prod := iamtest.Parse(t, rec.Get(t, "aws:iam/role:Role", "deploy-prod").Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, prod, 1, "no ESC statement: production has no environment")
		var prodSubjects []string
		for _, sub := range prod[0].Condition["StringLike"]["api.pulumi.com/oidc:sub"].([]any) {
			prodSubjects = append(prodSubjects, sub.(string))
		}
		for _, op := range []string{"update", "refresh", "destroy", "detect-drift", "remediate-drift"} {
			assert.Contains(t, prodSubjects, "pulumi:deploy:org:my-org:project:nodeless-eks:stack:prod:operation:"+op+":scope:write")
		}
		for _, sub := range prodSubjects {
			assert.Contains(t, sub, ":stack:prod:", "the production role trusts the production stack alone")
			assert.NotContains(t, sub, "operation:preview", "no pull request preview runs with production credentials")
			assert.NotContains(t, sub, "operation:*")
		}
		assert.Equal(t, map[string]any{"api.pulumi.com/oidc:aud": "my-org"}, prod[0].Condition["StringEquals"])
		assert.Equal(t, "arn:aws:iam::"+prodAccount+":oidc-provider/api.pulumi.com/oidc", prod[0].PrincipalOf("Federated"),
			"through the production account's own provider")

		staging := iamtest.Parse(t, rec.Get(t, "aws:iam/role:Role", "deploy-staging").Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, staging, 2)
		assert.Equal(t, []any{"pulumi:deploy:org:my-org:project:nodeless-eks:stack:staging:operation:*:scope:write"},
			staging[0].Condition["StringLike"]["api.pulumi.com/oidc:sub"], "staging previews pull requests")
		assert.Equal(t, map[string]map[string]any{
			"StringEquals": {"api.pulumi.com/oidc:aud": "aws:my-org"},
			"StringLike":   {"api.pulumi.com/oidc:sub": []any{"pulumi:environments:pulumi.organization.login:my-org:rootEnvironment.name:nodeless-eks/staging"}},
		}, staging[1].Condition, "ESC: aws:<org> as audience, the stack's environment as the root environment")
		review := iamtest.Parse(t, rec.Get(t, "aws:iam/role:Role", "deploy-review").Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, review, 1, "review stacks have no ESC environment")
		assert.Equal(t, []any{"pulumi:deploy:org:my-org:project:nodeless-eks:stack:pr-*:operation:*:scope:write"},
			review[0].Condition["StringLike"]["api.pulumi.com/oidc:sub"])
		for _, role := range rec.OfType("aws:iam/role:Role") {
			for _, st := range iamtest.Parse(t, role.Inputs["assumeRolePolicy"].StringValue()) {
				assert.Equal(t, []string{"sts:AssumeRoleWithWebIdentity"}, st.Action)
				assert.Equal(t, "arn:aws:iam::"+accountOfReg(t, rec, role)+":oidc-provider/api.pulumi.com/oidc", st.PrincipalOf("Federated"))
			}
		}
	})

	t.Run("each role's policy is scoped to its cluster in its account", func(t *testing.T) {
		eks := func(acct, cluster string) iamtest.Request {
			return iamtest.Request{Action: "eks:UpdateClusterVersion", Resource: "arn:aws:eks:eu-west-1:" + acct + ":cluster/" + cluster}
		}
		assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(policyOf(t, rec, "deploy-prod"), nil, eks(prodAccount, "nodeless-eks-prod")))
		assert.Equal(t, iamtest.ImplicitDeny, iamtest.Evaluate(policyOf(t, rec, "deploy-prod"), nil, eks(account, "nodeless-eks-staging")))
		assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(policyOf(t, rec, "deploy-staging"), nil, eks(account, "nodeless-eks-staging")))
		assert.Equal(t, iamtest.ImplicitDeny, iamtest.Evaluate(policyOf(t, rec, "deploy-staging"), nil, eks(prodAccount, "nodeless-eks-prod")))
		assert.Equal(t, iamtest.ImplicitDeny, iamtest.Evaluate(policyOf(t, rec, "deploy-staging"), nil, eks(account, "nodeless-eks-prod")),
			"not even a cluster of production's name in its own account")
		assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(policyOf(t, rec, "deploy-review"), nil, eks(account, "nodeless-eks-pr-17")))
		assert.Equal(t, iamtest.ImplicitDeny, iamtest.Evaluate(policyOf(t, rec, "deploy-review"), nil, eks(prodAccount, "nodeless-eks-prod")),
			"a review run, which runs a pull request's code, cannot touch production")
		assert.Equal(t, iamtest.ImplicitDeny, iamtest.Evaluate(policyOf(t, rec, "deploy-review"), nil, eks(account, "nodeless-eks-staging")))
	})

	t.Run("each role's scope has its own boundary, under the name its stacks give", func(t *testing.T) {
		passes := func(key, acct, cluster string) bool {
			doc := boundaryOf(t, rec, key)
			allowAll := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
			return iamtest.Allowed == iamtest.Evaluate(allowAll, &doc, iamtest.Request{Action: "iam:PassRole",
				Resource: "arn:aws:iam::" + acct + ":role/" + cluster + "-karpenter-node", Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
		}
		for _, key := range []string{"prod", "staging", "pr"} {
			b := rec.Get(t, "aws:iam/policy:Policy", "boundary-"+key)
			assert.Equal(t, "deploy-nodeless-eks-"+key+"-boundary", b.Inputs["name"].StringValue())
			assert.LessOrEqual(t, boundaryOf(t, rec, key).Size(), iampolicy.MaxManagedPolicySize)
		}
		assert.True(t, passes("prod", prodAccount, "nodeless-eks-prod"))
		assert.False(t, passes("prod", account, "nodeless-eks-prod"), "the production boundary reaches its own account only")
		assert.False(t, passes("pr", prodAccount, "nodeless-eks-prod"), "a role a review run mints cannot put production's node role on an instance")
		assert.False(t, passes("staging", account, "nodeless-eks-prod"))
		assert.True(t, passes("pr", account, "nodeless-eks-pr-17"))
	})

	t.Run("every stack it configures exists, and outlives this project", func(t *testing.T) {
		for _, stack := range []string{"prod", "staging", "pr"} {
			st := rec.Get(t, "pulumiservice:index:Stack", "stack-"+stack)
			assert.Equal(t, stack, st.Inputs["stackName"].StringValue())
			assert.Equal(t, "nodeless-eks", st.Inputs["projectName"].StringValue())
			assert.True(t, st.RetainOnDelete, "destroying deploy/ keeps the stack %s and its state", stack)
			assert.Empty(t, st.ImportID)
			settings := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-"+stack)
			// The settings endpoints answer 404 for a stack that does not exist.
			rec.RequireDependsOn(t, settings, st)
		}
	})

	t.Run("settings and drift schedule per stack; an environment only where asked for", func(t *testing.T) {
		for stack, want := range map[string]struct {
			role     string
			acct     string
			previews bool
		}{"prod": {"deploy-prod", prodAccount, false}, "staging": {"deploy-staging", account, true}} {
			settings := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-"+stack)
			vcs := settings.Inputs["vcs"].ObjectValue()
			assert.Equal(t, "github", vcs["provider"].StringValue())
			assert.Equal(t, "my-org/nodeless-eks", vcs["repository"].StringValue())
			assert.Equal(t, true, vcs["deployCommits"].V, "push to deploy")
			assert.Equal(t, want.previews, vcs["previewPullRequests"].V, "%s previews pull requests: %v", stack, want.previews)
			assert.Equal(t, false, vcs["pullRequestTemplate"].V)
			git := settings.Inputs["sourceContext"].ObjectValue()["git"].ObjectValue()
			assert.Equal(t, "refs/heads/main", git["branch"].StringValue())
			assert.Equal(t, ".", git["repoDir"].StringValue())
			opctx := settings.Inputs["operationContext"].ObjectValue()
			oidc := opctx["oidc"].ObjectValue()["aws"].ObjectValue()
			assert.Equal(t, "arn:aws:iam::"+want.acct+":role/"+want.role+"-7f3a", oidc["roleARN"].StringValue())
			assert.Equal(t, "6h0m0s", oidc["duration"].StringValue())
			assert.Equal(t, []resource.PropertyKey{"GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_TOKEN"},
				opctx["environmentVariables"].ObjectValue().StableKeys(),
				"Pulumi's GitHub tokens withheld, and no PULUMI_ACCESS_TOKEN: a run keeps its stack-only token")
			assert.NotContains(t, opctx, "role", "no Pulumi Cloud role: the default, stack-only access")

			drift := rec.Get(t, "pulumiservice:index:DriftSchedule", "drift-"+stack)
			assert.Equal(t, false, drift.Inputs["autoRemediate"].V, "drift is reported, not overwritten")
			rec.RequireDependsOn(t, drift, settings) // a schedule needs the stack's settings
			rec.RequireDependsOn(t, drift, rec.Get(t, "pulumiservice:index:Stack", "stack-"+stack))
		}
		assert.Equal(t, "0 */6 * * *", rec.Get(t, "pulumiservice:index:DriftSchedule", "drift-staging").Inputs["scheduleCron"].StringValue())

		_, ok := rec.Find("pulumiservice:index:Environment", "env-prod")
		assert.False(t, ok, "no production environment unless asked for: whoever opens it is the production role")
		env := rec.Get(t, "pulumiservice:index:Environment", "env-staging")
		assert.Equal(t, "staging", env.Inputs["name"].StringValue())
		assert.Equal(t, "nodeless-eks", env.Inputs["project"].StringValue())
		yaml := env.Inputs["yaml"].AssetValue().Text
		assert.Contains(t, yaml, "roleArn: arn:aws:iam::"+account+":role/deploy-staging-7f3a")
		assert.Contains(t, yaml, "fn::open::aws-login:")
		assert.Contains(t, yaml, "subjectAttributes:\n            - rootEnvironment.name", "the subject the role's trust accepts, also when a stack file imports it")
	})

	t.Run("the production team administers the production stack; nobody else is given it", func(t *testing.T) {
		perms := rec.OfType("pulumiservice:index:TeamStackPermission")
		require.Len(t, perms, 1, "productionTeam only; nonProductionTeam is unset")
		p := perms[0]
		assert.Equal(t, "platform", p.Inputs["team"].StringValue())
		assert.Equal(t, "prod", p.Inputs["stack"].StringValue())
		assert.Equal(t, float64(103), p.Inputs["permission"].NumberValue(), "admin")
		rec.RequireDependsOn(t, p, rec.Get(t, "pulumiservice:index:Stack", "stack-prod"))
		assert.Empty(t, rec.OfType("pulumiservice:index:TeamEnvironmentPermission"), "production has no environment to give")
	})

	t.Run("path filters: the program and the stack's own file, not another stack's, docs or tests", func(t *testing.T) {
		settings := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-prod")
		var paths []string
		for _, p := range settings.Inputs["vcs"].ObjectValue()["paths"].ArrayValue() {
			paths = append(paths, p.StringValue())
		}
		deployed := func(file string) bool {
			in := false
			for _, p := range paths { // the last matching filter wins
				if globMatch(strings.TrimPrefix(p, "!"), file) {
					in = !strings.HasPrefix(p, "!")
				}
			}
			return in
		}
		for file, want := range map[string]bool{
			"main.go": true, "cluster/cluster.go": true, "go.sum": true, "Pulumi.yaml": true, "Pulumi.prod.yaml": true,
			"Pulumi.staging.yaml": false, "README.md": false, "docs/upgrades.md": false, "deploy/main.go": false,
			"examples/vpc/main.go": false, "config/config_test.go": false, "stack_test.go": false, "test/kubecheck/chart.go": false,
			"config/keys.go": true, "testkit/mock/mock.go": false,
		} {
			assert.Equalf(t, want, deployed(file), "a change to %s deploys prod: %v (filters %v)", file, want, paths)
		}
	})

	t.Run("runs fail fast with a GitHub token, without Go, the AWS CLI, the stack's boundary, region, cluster or production, and recover an interrupted run first", func(t *testing.T) {
		c := configOf(t, "Pulumi.example.yaml", nil)
		cmds := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-prod").Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		require.Len(t, cmds, 5, "named stacks get no TTL")
		assert.Equal(t, GitHubTokenCheckCommand(), cmds[0].StringValue(), "before any of the repository's code")
		assert.Contains(t, cmds[1].StringValue(), "command -v go")
		assert.Contains(t, cmds[2].StringValue(), "command -v aws")
		assert.Equal(t, StackCheckCommand(c, boundaryArn(prodAccount, "prod"), RoleOf(c, "prod"), false), cmds[3].StringValue(),
			"the production stack's own boundary, in its own account")
		assert.Contains(t, cmds[3].StringValue(), `[ "$got" = "nodeless-eks-prod" ]`, "its cluster")
		assert.Contains(t, cmds[3].StringValue(), `[ "$got" = "true" ]`, "production")
		staging := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-staging").Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		assert.Contains(t, staging[3].StringValue(), boundaryArn(account, "staging"))
		assert.Contains(t, staging[3].StringValue(), `[ "$got" = "false" ]`, "not production")
		review := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-pr").Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		assert.Contains(t, review[3].StringValue(), boundaryArn(account, "pr"))
		assert.Contains(t, review[3].StringValue(), `case "$got" in "nodeless-eks-pr-"*)`, "a review cluster's name")
		for _, settings := range rec.OfType("pulumiservice:index:DeploymentSettings") {
			cmds := settings.Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
			assert.Equal(t, RecoveryCommand("."), cmds[4].StringValue(), "%s recovers an interrupted run before its own", settings.Name)
		}
	})

	t.Run("no stack that runs pull-request code shares the dependency cache, production reads none, and no run keeps Pulumi's GitHub token", func(t *testing.T) {
		cache := map[string]bool{}
		for _, settings := range rec.OfType("pulumiservice:index:DeploymentSettings") {
			stack := settings.Inputs["stack"].StringValue()
			cache[stack] = settings.Inputs["cacheOptions"].ObjectValue()["enable"].BoolValue()
			env := settings.Inputs["operationContext"].ObjectValue()["environmentVariables"].ObjectValue()
			assert.Equal(t, GitHubTokenWithheld, env["GITHUB_TOKEN"].StringValue(), "%s: Pulumi's GitHub App token is overridden", stack)
			assert.NotContains(t, env, resource.PropertyKey("PULUMI_ACCESS_TOKEN"), "%s keeps its own stack token", stack)
		}
		assert.Equal(t, map[string]bool{"prod": false, "staging": false, "pr": false}, cache,
			"production reads nothing another run wrote; staging previews pull requests; pr is the review stacks' template")
	})

	t.Run("the cache is the project's: a stack caches only while no stack of the fleet runs pull-request code", func(t *testing.T) {
		var c Config
		c.Stacks = map[string]StackSettings{"prod": {Production: true}, "staging": {}, "qa": {AgentPoolID: "pool-1"}}
		no := false
		for name, s := range c.Stacks {
			s.PreviewPullRequests = &no
			c.Stacks[name] = s
		}
		assert.True(t, CachesDependencies(&c, "staging", false), "push-only, on Pulumi's hosted runners")
		assert.False(t, CachesDependencies(&c, "prod", false), "production never")
		assert.False(t, CachesDependencies(&c, "qa", false), "a customer-managed pool keeps its own")
		c.ReviewStacks = true
		assert.False(t, CachesDependencies(&c, "staging", false), "review stacks would write what staging restores")
		c.ReviewStacks = false
		yes := true
		qa := c.Stacks["qa"]
		qa.PreviewPullRequests = &yes
		c.Stacks["qa"] = qa
		assert.False(t, CachesDependencies(&c, "staging", false), "qa's previews would write what staging restores")
	})

	t.Run("the review template is never deployed itself, and its copies expire after their last update", func(t *testing.T) {
		tmpl := rec.Get(t, "pulumiservice:index:DeploymentSettings", "settings-pr")
		vcs := tmpl.Inputs["vcs"].ObjectValue()
		assert.Equal(t, true, vcs["pullRequestTemplate"].V)
		assert.Equal(t, false, vcs["deployCommits"].V)
		assert.Equal(t, false, vcs["previewPullRequests"].V)
		oidc := tmpl.Inputs["operationContext"].ObjectValue()["oidc"].ObjectValue()["aws"].ObjectValue()
		assert.Equal(t, "arn:aws:iam::"+account+":role/deploy-review-7f3a", oidc["roleARN"].StringValue(), "review stacks copy the review role")
		cmds := tmpl.Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		require.Len(t, cmds, 6)
		ttl := cmds[5].StringValue()
		assert.Equal(t, ReviewTTLCommand(".", "pr", 8), ttl)
		for _, d := range rec.OfType("pulumiservice:index:DriftSchedule") {
			assert.NotEqual(t, "pr", d.Inputs["stack"].StringValue(), "the template has nothing to drift")
		}
		assert.Empty(t, rec.OfType("pulumiservice:index:TtlSchedule"), "a TtlSchedule names one stack and one time")
	})
}

func TestSessionCoversTheLongestDestroy(t *testing.T) {
	raw, err := os.ReadFile("../testdata/destroy-bound.golden.json")
	require.NoError(t, err, "written by the root project's TestLongestDestroyForTheDeployRole")
	var bound struct {
		Seconds int      `json:"seconds"`
		Path    []string `json:"path"`
	}
	require.NoError(t, json.Unmarshal(raw, &bound))
	require.Positive(t, bound.Seconds)

	rec, err := run(t, nil)
	require.NoError(t, err)
	roles := rec.OfType("aws:iam/role:Role")
	require.NotEmpty(t, roles)
	for _, role := range roles {
		session := role.Inputs["maxSessionDuration"].NumberValue()
		assert.GreaterOrEqual(t, int(session), bound.Seconds,
			"%s's session must outlast the root program's longest destroy: %v", role.Name, bound.Path)
		assert.LessOrEqual(t, int(session), 12*3600, "IAM allows at most 12 hours")
	}
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

func TestDeployerPolicyCoversWhatTheRootProgramCreates(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err, "written by the root project's TestRegisteredTypesForTheDeployRole")
	var registered struct{ Resources, Invokes []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	require.NotEmpty(t, registered.Resources)

	doc, err := DeployerPolicy(scope{partition: "aws", region: "eu-west-1", account: account, cluster: "nodeless-eks-prod",
		boundaryArn: "arn:aws:iam::" + account + ":policy/deploy-nodeless-eks-prod-boundary"}).JSON()
	require.NoError(t, err)
	var granted []string
	for _, st := range iamtest.Parse(t, doc) {
		if st.Effect == "Deny" {
			continue
		}
		granted = append(granted, st.Action...)
		for _, r := range st.Resource {
			if r == "*" {
				// Every action on * is read-only or carries a condition.
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
		if !assert.Truef(t, ok, "the root program registers %s, which no entry of deployerActions covers; add its actions and a statement", typ) {
			continue
		}
		for _, a := range actions {
			assert.Truef(t, allows(granted, a), "%s needs %s, which the deployer policy does not allow", typ, a)
		}
	}
}

func TestOrganisationManagedPolicyAndProvider(t *testing.T) {
	withCloud(t, isolated)
	const reused = "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"
	rec, res := runPrepared(t, "Pulumi.example.yaml", map[string]string{
		"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access",
			"oidcProviderArn": "` + reused + `",
			"deployPolicyArns": ["arn:aws:iam::111122223333:policy/platform-deployer"]},
			"dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access"}}`,
	}, fixture{aws: func(_ *Config, a *fakeaws.Account) {
		a.Others[prodAccount].PulumiOIDC = &fakeaws.OIDCProvider{Arn: reused}
	}})
	err := res.Err
	require.NoError(t, err)
	providers := rec.OfType("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
	require.Len(t, providers, 1, "an account has one provider per URL: production's is reused")
	assert.Equal(t, "pulumi-cloud-dev", providers[0].Name)
	assert.Equal(t, reused, trustOf(t, rec, "deploy-prod").Statement[0].Principal.(map[string]any)["Federated"])
	_, ok := rec.Find("aws:iam/policy:Policy", "deploy-prod-1")
	assert.False(t, ok, "the organisation's policy replaces production's deployer policy")
	policyOf(t, rec, "deploy-staging") // the dev account keeps its own
	var prodAttachments []string
	for _, a := range rec.OfType("aws:iam/rolePolicyAttachment:RolePolicyAttachment") {
		if strings.HasPrefix(a.Name, "own-policy-prod-") {
			prodAttachments = append(prodAttachments, a.Inputs["policyArn"].StringValue())
			assert.Equal(t, prodAccount, accountOfReg(t, rec, a))
		}
	}
	assert.Equal(t, []string{"arn:aws:iam::111122223333:policy/platform-deployer"}, prodAttachments)
	assert.Equal(t, []string{"deploy-prod-org-0"}, rec.Get(t, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "own-policy-prod-0").Aliases,
		"renamed without a replacement")
	boundaryOf(t, rec, "prod") // the boundary stays: every role a run creates carries it
}

func TestImportExistingStacks(t *testing.T) {
	rec, err := run(t, map[string]string{"importStacks": "true"})
	require.NoError(t, err)
	for _, stack := range []string{"prod", "staging", "pr"} {
		assert.Equal(t, "my-org/nodeless-eks/"+stack, rec.Get(t, "pulumiservice:index:Stack", "stack-"+stack).ImportID)
	}
}

// TestNoEscalation evaluates what a deploy run may do with the production
// role's policy (and, for roles it creates, the workload boundary), as the
// example registers them in the production account: create and change only
// roles that carry the boundary, attach only the program's policies, never
// lift or rewrite the boundary, read no secret through a describe, and
// reach only its own cluster's keys and security groups.
func TestNoEscalation(t *testing.T) {
	const account = prodAccount // the requests below are in production's account
	const (
		boundaryArn = "arn:aws:iam::" + account + ":policy/deploy-nodeless-eks-prod-boundary"
		ours        = "arn:aws:iam::" + account + ":role/nodeless-eks-prod-karpenter-controller-1a2b3c4"
	)
	rec, err := run(t, nil)
	require.NoError(t, err)
	policy := policyOf(t, rec, "deploy-prod")
	boundary := boundaryOf(t, rec, "prod")
	withBoundary := map[string][]string{"iam:PermissionsBoundary": {boundaryArn}}
	ctx := func(kv ...string) map[string][]string {
		m := map[string][]string{"iam:PermissionsBoundary": {boundaryArn}}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []string{kv[i+1]}
		}
		return m
	}
	tests := []struct {
		name string
		req  iamtest.Request
		want iamtest.Decision
	}{
		{"create a role of its cluster with the boundary", iamtest.Request{Action: "iam:CreateRole", Resource: ours, Context: withBoundary}, iamtest.Allowed},
		{"create a role of its cluster without the boundary", iamtest.Request{Action: "iam:CreateRole", Resource: ours}, iamtest.ImplicitDeny},
		{"create a role of its cluster with another boundary", iamtest.Request{Action: "iam:CreateRole", Resource: ours,
			Context: map[string][]string{"iam:PermissionsBoundary": {"arn:aws:iam::aws:policy/AdministratorAccess"}}}, iamtest.ImplicitDeny},
		{"attach AdministratorAccess to it", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: ours,
			Context: ctx("iam:PolicyARN", "arn:aws:iam::aws:policy/AdministratorAccess")}, iamtest.ImplicitDeny},
		{"attach another account policy to it", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: ours,
			Context: ctx("iam:PolicyARN", "arn:aws:iam::"+account+":policy/platform-admin")}, iamtest.ImplicitDeny},
		{"attach a node's managed policy", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: ours,
			Context: ctx("iam:PolicyARN", "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")}, iamtest.Allowed},
		{"attach its cluster's own policy", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: ours,
			Context: ctx("iam:PolicyARN", "arn:aws:iam::"+account+":policy/nodeless-eks-prod-karpenter-controller-9f8e7d6")}, iamtest.Allowed},
		{"attach a policy to a role without the boundary", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: ours,
			Context: map[string][]string{"iam:PolicyARN": {"arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"}}}, iamtest.ImplicitDeny},
		{"remove a role's boundary", iamtest.Request{Action: "iam:DeleteRolePermissionsBoundary", Resource: ours}, iamtest.ExplicitDeny},
		{"rewrite the boundary", iamtest.Request{Action: "iam:CreatePolicyVersion", Resource: boundaryArn}, iamtest.ExplicitDeny},
		{"change a deploy role", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: "arn:aws:iam::" + account + ":role/deploy-prod-7f3a",
			Context: ctx("iam:PolicyARN", "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy")}, iamtest.ExplicitDeny},
		{"create a role outside its clusters", iamtest.Request{Action: "iam:CreateRole", Resource: "arn:aws:iam::" + account + ":role/admin", Context: withBoundary}, iamtest.ImplicitDeny},
		{"pass a role of its cluster to pods", iamtest.Request{Action: "iam:PassRole", Resource: ours,
			Context: map[string][]string{"iam:PassedToService": {"pods.eks.amazonaws.com"}}}, iamtest.Allowed},
		{"pass another role to pods", iamtest.Request{Action: "iam:PassRole", Resource: "arn:aws:iam::" + account + ":role/admin",
			Context: map[string][]string{"iam:PassedToService": {"pods.eks.amazonaws.com"}}}, iamtest.ImplicitDeny},
		{"schedule the deletion of another key", iamtest.Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/other",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"billing"}}}, iamtest.ExplicitDeny},
		{"rewrite an untagged key's policy", iamtest.Request{Action: "kms:PutKeyPolicy", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/other"}, iamtest.ImplicitDeny},
		{"delete its cluster's key, after KMS's longest window", iamtest.Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/ours",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}, "kms:ScheduleKeyDeletionPendingWindowInDays": {"30"}}}, iamtest.Allowed},
		// A key of someone else's that the run has tagged as its own.
		{"delete a key it tagged within a week", iamtest.Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}, "kms:ScheduleKeyDeletionPendingWindowInDays": {"7"}}}, iamtest.ImplicitDeny},
		{"rewrite the policy of a key it tagged", iamtest.Request{Action: "kms:PutKeyPolicy", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}}}, iamtest.ImplicitDeny},
		{"grant itself a key it tagged", iamtest.Request{Action: "kms:CreateGrant", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}, "kms:GrantIsForAWSResource": {"false"}}}, iamtest.ImplicitDeny},
		{"decrypt with a key it tagged", iamtest.Request{Action: "kms:Decrypt", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}}}, iamtest.ImplicitDeny},
		{"retag another cluster's key as its own cluster's", iamtest.Request{Action: "kms:TagResource", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-staging"}, "aws:RequestTag/nodeless-eks/cluster": {"nodeless-eks-prod"},
				"aws:RequestedRegion": {"eu-west-1"}}}, iamtest.ExplicitDeny},
		{"schedule the deletion of a key tagged for another cluster", iamtest.Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/theirs",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-staging"}, "kms:ScheduleKeyDeletionPendingWindowInDays": {"30"}}}, iamtest.ExplicitDeny},
		{"read instances' user data", iamtest.Request{Action: "ec2:DescribeInstanceAttribute", Resource: "*",
			Context: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}, iamtest.ExplicitDeny},
		{"let EKS use its cluster's key", iamtest.Request{Action: "kms:CreateGrant", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/ours",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}, "kms:GrantIsForAWSResource": {"true"}}}, iamtest.Allowed},
		{"create a key for another cluster", iamtest.Request{Action: "kms:CreateKey", Resource: "*",
			Context: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}, "aws:RequestTag/nodeless-eks/cluster": {"other"}}}, iamtest.ImplicitDeny},
		{"open another security group", iamtest.Request{Action: "ec2:AuthorizeSecurityGroupIngress", Resource: "arn:aws:ec2:eu-west-1:" + account + ":security-group/sg-db",
			Context: map[string][]string{"aws:ResourceTag/karpenter.sh/discovery": {"other"}}}, iamtest.ImplicitDeny},
		{"change its node security group", iamtest.Request{Action: "ec2:RevokeSecurityGroupIngress", Resource: "arn:aws:ec2:eu-west-1:" + account + ":security-group/sg-node",
			Context: map[string][]string{"aws:ResourceTag/karpenter.sh/discovery": {"nodeless-eks-prod"}}}, iamtest.Allowed},
		{"add a rule to its EKS cluster security group", iamtest.Request{Action: "ec2:AuthorizeSecurityGroupIngress", Resource: "arn:aws:ec2:eu-west-1:" + account + ":security-group/sg-eks",
			Context: map[string][]string{"aws:ResourceTag/aws:eks:cluster-name": {"nodeless-eks-prod"}}}, iamtest.Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, iamtest.Evaluate(policy, nil, tt.req))
		})
	}

	// ec2:Describe* would reach them; the deployer policy and every
	// boundary deny each, whatever else a role holds.
	t.Run("no describe that returns user data, a VPN key or an upload policy", func(t *testing.T) {
		admin := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
		for _, action := range []string{"ec2:DescribeInstanceAttribute", "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeSpotInstanceRequests",
			"ec2:DescribeSpotFleetRequests", "ec2:DescribeVpnConnections", "ec2:DescribeBundleTasks"} {
			req := iamtest.Request{Action: action, Resource: "*", Context: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}
			assert.Equalf(t, iamtest.ExplicitDeny, iamtest.Evaluate(policy, nil, req), "the deploy role: %s", action)
			for _, key := range []string{"prod", "staging", "pr"} {
				b := boundaryOf(t, rec, key)
				assert.Equalf(t, iamtest.ExplicitDeny, iamtest.Evaluate(admin, &b, req), "a role with boundary %s: %s", key, action)
			}
		}
		assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(policy, nil, iamtest.Request{Action: "ec2:DescribeSubnets", Resource: "*",
			Context: map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}), "the lookups still work")
	})

	// The escalation a run could try: a role of its cluster, which must
	// carry the boundary, given a policy that allows everything.
	t.Run("a role with the boundary gains nothing in IAM from a policy that allows everything", func(t *testing.T) {
		admin := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
		for _, req := range []iamtest.Request{
			{Action: "iam:CreateRole", Resource: "arn:aws:iam::" + account + ":role/backdoor"},
			{Action: "iam:AttachRolePolicy", Resource: "arn:aws:iam::" + account + ":role/backdoor"},
			{Action: "iam:PassRole", Resource: "arn:aws:iam::" + account + ":role/admin", Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}},
			{Action: "iam:CreateUser", Resource: "arn:aws:iam::" + account + ":user/backdoor"},
			{Action: "organizations:LeaveOrganization", Resource: "*"},
			{Action: "s3:GetObject", Resource: "arn:aws:s3:::company-secrets/key"},
		} {
			assert.Equalf(t, iamtest.BoundaryDeny, iamtest.Evaluate(admin, &boundary, req), "%s on %s", req.Action, req.Resource)
		}
		assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(admin, &boundary, iamtest.Request{Action: "ec2:RunInstances",
			Resource: "arn:aws:ec2:eu-west-1:" + account + ":instance/i-0abc"}), "the workloads' own services stay within it")
	})

	// What the boundary still grants on every resource, and what it does
	// not: a minted role reaches no further than the program's roles do.
	t.Run("a role with the boundary cannot take data out or cross into other clusters", func(t *testing.T) {
		admin := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
		ec2 := func(resource string) string { return "arn:aws:ec2:eu-west-1:" + account + ":" + resource }
		for _, req := range []iamtest.Request{
			{Action: "ec2:ModifySnapshotAttribute", Resource: ec2("snapshot/snap-0abc")},
			{Action: "ec2:ModifyImageAttribute", Resource: ec2("image/ami-0abc")},
			{Action: "ec2:CreateVpcPeeringConnection", Resource: ec2("vpc/vpc-0abc")},
			{Action: "ec2:GetPasswordData", Resource: ec2("instance/i-0abc")},
			{Action: "ec2:DescribeInstanceAttribute", Resource: "*"}, // user data
			{Action: "kms:Decrypt", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/any"},
			{Action: "kms:CreateGrant", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/any"},
			{Action: "ssm:GetParameter", Resource: "arn:aws:ssm:eu-west-1:" + account + ":parameter/prod/db-password"},
			{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:eu-west-1:" + account + ":payments"},
			{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:eu-west-1:" + account + ":nodeless-eks-staging-karpenter-interruption-queue-1a2b"},
			{Action: "iam:PassRole", Resource: "arn:aws:iam::" + account + ":role/nodeless-eks-staging-karpenter-node",
				Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}},
			{Action: "iam:RemoveRoleFromInstanceProfile", Resource: "arn:aws:iam::" + account + ":instance-profile/karpenter/eu-west-1/nodeless-eks-staging/u1/nodeless-eks-staging_1"},
			{Action: "iam:DeleteInstanceProfile", Resource: "arn:aws:iam::" + account + ":instance-profile/bastion"},
			{Action: "eks:DescribeCluster", Resource: "arn:aws:eks:eu-west-1:" + account + ":cluster/payments"},
			{Action: "logs:CreateLogGroup", Resource: "*"},
		} {
			assert.NotEqualf(t, iamtest.Allowed, iamtest.Evaluate(admin, &boundary, req), "%s on %s", req.Action, req.Resource)
		}
		for _, req := range []iamtest.Request{
			{Action: "eks-auth:AssumeRoleForPodIdentity", Resource: "*"}, // the node role's Pod Identity agent
			{Action: "iam:PassRole", Resource: "arn:aws:iam::" + account + ":role/nodeless-eks-prod-karpenter-node",
				Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}},
			{Action: "iam:CreateInstanceProfile", Resource: "arn:aws:iam::" + account + ":instance-profile/karpenter/eu-west-1/nodeless-eks-prod/u1/nodeless-eks-prod_1"},
			{Action: "ssm:GetParameter", Resource: "arn:aws:ssm:eu-west-1:" + account + ":parameter/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id"},
			{Action: "kms:GenerateDataKeyWithoutPlaintext", Resource: "arn:aws:kms:eu-west-1:" + account + ":key/any", // an encrypted node volume
				Context: map[string][]string{"kms:ViaService": {"ec2.eu-west-1.amazonaws.com"}}},
		} {
			assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(admin, &boundary, req), "%s on %s", req.Action, req.Resource)
		}
	})
}

// TestBoundaryCoversTheProgramsPolicies: every request the policies the
// root program gives its roles allow, the workload boundary allows too:
// Karpenter's controller policy and the LB controller's (as the root
// project's goldens hold them, for cluster eks-demo), and the AWS managed
// policies the program attaches (testdata/managed-policies, pinned from
// IAMTrail). For each statement, a witness request: each '*' of its
// resources made concrete, each condition met.
func TestBoundaryCoversTheProgramsPolicies(t *testing.T) {
	boundary := WorkloadBoundary(scope{partition: "aws", region: "eu-west-1", account: account, cluster: "eks-demo"})
	allowAll := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
	docs := map[string]iampolicy.Document{}
	for _, golden := range []string{"../testdata/karpenter-controller-policy.golden.json", "../testdata/lb-controller-policy.golden.json"} {
		raw, err := os.ReadFile(golden)
		require.NoError(t, err)
		docs[golden], err = iampolicy.Parse(string(raw))
		require.NoError(t, err)
	}
	managed, err := filepath.Glob("testdata/managed-policies/*.json")
	require.NoError(t, err)
	require.Len(t, managed, 7, "the cluster, Fargate, node (4) and EBS CSI roles' managed policies")
	for _, path := range managed {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		var pinned struct{ Document json.RawMessage }
		require.NoError(t, json.Unmarshal(raw, &pinned))
		docs[path], err = iampolicy.Parse(string(pinned.Document))
		require.NoError(t, err)
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
					if narrower, ok := narrowedOnPurpose[action]; ok && res == "*" {
						req.Resource = narrower
					}
					assert.Equalf(t, iamtest.Allowed, iamtest.Evaluate(allowAll, &boundary, req),
						"%s: %s on %s (as %s, %v) is outside the workload boundary", name, action, res, req.Resource, context)
				}
			}
		}
		assert.Greater(t, checked, 0, "%s holds a policy", name)
	}
}

// narrowedOnPurpose are actions a managed policy grants on every resource
// that the boundary grants only on what the program's roles use, with the
// resource a request of theirs names.
var narrowedOnPurpose = map[string]string{
	// A node describes its own cluster (AmazonEKSWorkerNodePolicy).
	"eks:DescribeCluster": "arn:aws:eks:eu-west-1:" + account + ":cluster/eks-demo",
	// Nodes read AWS's public parameters (AMI IDs). The SSM agent's
	// GetParameters on the account's own parameters
	// (AmazonSSMManagedInstanceCore), for Run Command documents that
	// reference them, is given up: it would let a minted role read them.
	"ssm:GetParameter":  "arn:aws:ssm:eu-west-1::parameter/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id",
	"ssm:GetParameters": "arn:aws:ssm:eu-west-1::parameter/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id",
}

// witnessResource is a resource a pattern admits, as Karpenter and the
// controllers name them: an instance profile under Karpenter's path, any
// other '*' a plain name, in the test's account.
func witnessResource(pattern string) string {
	if pattern == "*" {
		return pattern // a request on every resource, as the policy grants it
	}
	if strings.Contains(pattern, ":instance-profile/") {
		return "arn:aws:iam::" + account + ":instance-profile/karpenter/eu-west-1/eks-demo/u1/eks-demo_1"
	}
	parts := strings.SplitN(pattern, ":", 6)
	if len(parts) == 6 && parts[4] == "*" {
		parts[4] = account
	}
	return strings.ReplaceAll(strings.Join(parts, ":"), "*", "x")
}

// witnessContext meets a statement's conditions: each key set to a value
// it admits, a Null "true" key left out.
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

// TestStackCheckCommand runs the pre-run stack check with a fake pulumi on
// PATH, from a subdirectory of the checkout.
func TestStackCheckCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH; the command finds the checkout with git")
	}
	bin := t.TempDir()
	where := filepath.Join(t.TempDir(), "pwd")
	// Like the real CLI, it fails for a key the stack does not set, and
	// with FAKE_FAIL as it would for a stack it cannot read.
	fake := "#!/bin/sh\npwd > " + where + "\n" +
		"[ -n \"$FAKE_FAIL\" ] && { echo \"$FAKE_FAIL\" >&2; exit 255; }\n" +
		"case \"$3\" in\n*:iamPermissionsBoundary) v=\"$FAKE_BOUNDARY\";;\naws:region) v=\"$FAKE_REGION\";;\n" +
		"*:clusterName) v=\"$FAKE_CLUSTER\";;\n*:production) v=\"$FAKE_PRODUCTION\";;\nesac\n" +
		"[ -n \"$v\" ] || { echo \"error: configuration key '$3' not found for stack '$5'\" >&2; exit 255; }\n" +
		"echo \"$v\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "pulumi"), []byte(fake), 0o755))
	c := configOf(t, "Pulumi.example.yaml", nil)
	arn := boundaryArn(prodAccount, "prod")
	tmp := t.TempDir()
	run := func(stack string, template bool, env ...string) (string, error) {
		cmd := exec.Command("sh", "-c", StackCheckCommand(c, boundaryArn(prodAccount, "prod"), RoleOf(c, stack), template))
		cmd.Dir = "." // deploy/, not the project's directory
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BOUNDARY="+arn, "FAKE_REGION=eu-west-1",
			"FAKE_CLUSTER=nodeless-eks-prod", "FAKE_PRODUCTION=true",
			"PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK="+stack, "TMPDIR="+tmp)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("prod", false)
	require.NoError(t, err, out)
	pwd, err := os.ReadFile(where)
	require.NoError(t, err)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(top)), strings.TrimSpace(string(pwd)), "pulumi config runs in the project's directory")

	for _, tt := range []struct {
		name, stack string
		template    bool
		env         []string
		want        string
	}{
		{"a stack without the boundary", "prod", false, []string{"FAKE_BOUNDARY="}, "stack prod must set nodeless-eks:iamPermissionsBoundary to " + arn},
		{"a stack in another region than its role reaches", "prod", false, []string{"FAKE_REGION=us-east-1"},
			`stack prod must set aws:region to eu-west-1 (it has "us-east-1"): its deploy role reaches that region only`},
		{"a stack that sets no region", "prod", false, []string{"FAKE_REGION="},
			`stack prod must set aws:region to eu-west-1 (it has ""): its deploy role reaches that region only`},
		{"a stack file copied from another, with its clusterName", "prod", false, []string{"FAKE_CLUSTER=nodeless-eks-staging"},
			`stack prod must set nodeless-eks:clusterName to nodeless-eks-prod (it has "nodeless-eks-staging"): its deploy role may touch only that cluster's resources`},
		{"a production stack whose file says it is not", "prod", false, []string{"FAKE_PRODUCTION=false"},
			`stack prod must set nodeless-eks:production to true (it has "false")`},
		{"a production stack whose file leaves production unset", "prod", false, []string{"FAKE_PRODUCTION="},
			`stack prod must set nodeless-eks:production to true (it has "false")`},
		{"a review stack whose cluster is outside the review prefix", "pr-7", true, []string{"FAKE_CLUSTER=nodeless-eks-prod", "FAKE_PRODUCTION=false"},
			"stack pr-7 must set nodeless-eks:clusterName to a name that starts with nodeless-eks-pr-"},
		{"a review stack that says production", "pr-7", true, []string{"FAKE_CLUSTER=", "FAKE_PRODUCTION=true"},
			`stack pr-7 must set nodeless-eks:production to false (it has "true")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stack := tt.stack
			if tt.template {
				stack = "pr" // review stacks run with the template's settings
			}
			role := RoleOf(c, stack)
			cmd := exec.Command("sh", "-c", StackCheckCommand(c, arn, role, tt.template))
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BOUNDARY="+arn, "FAKE_REGION=eu-west-1",
				"PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK="+tt.stack, "TMPDIR="+tmp)
			if !tt.template {
				cmd.Env = append(cmd.Env, "FAKE_CLUSTER=nodeless-eks-prod", "FAKE_PRODUCTION=true")
			}
			cmd.Env = append(cmd.Env, tt.env...)
			raw, err := cmd.CombinedOutput()
			require.Error(t, err, "the run stops: %s", raw)
			assert.Contains(t, string(raw), tt.want)
			assert.Less(t, time.Since(start), 5*time.Second, "within seconds, before any build")
		})
	}
	t.Run("a review stack named after its stack passes", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", StackCheckCommand(c, arn, RoleOf(c, "pr"), true))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_BOUNDARY="+arn, "FAKE_REGION=eu-west-1",
			"PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK=pr-7", "TMPDIR="+tmp)
		raw, err := cmd.CombinedOutput()
		require.NoError(t, err, "an unset clusterName is nodeless-eks-pr-7: %s", raw)
	})

	out, err = run("prod", false, "FAKE_FAIL=error: failed to load stack: [401] Unauthorized")
	require.Error(t, err, "a CLI that cannot read the stack stops the run")
	assert.Contains(t, out, "could not read nodeless-eks:iamPermissionsBoundary of stack prod, so its value is not checked; the command failed with:")
	assert.Contains(t, out, "error: failed to load stack: [401] Unauthorized", "with what the CLI said")
	assert.NotContains(t, out, "must set", "not reported as a wrong value")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "the captured output is removed")
}

// TestGitHubTokenCheckCommand runs the first pre-run command: a run with
// the token the settings give it, or none, goes on; one with any other
// GITHUB_TOKEN (Pulumi's app token) stops before the repository's code.
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
	_, err = run("GITHUB_TOKEN=")
	require.Error(t, err, "an empty token is not the settings' value either")
	// GitHub Enterprise Server: Pulumi sets two more variables to its token.
	for _, v := range []string{"GITHUB_ENTERPRISE_TOKEN", "GH_ENTERPRISE_TOKEN"} {
		_, err = run("GITHUB_TOKEN="+GitHubTokenWithheld, v+"=ghs_16C7e42F292c6912E7710c838347Ae178B4a")
		require.Error(t, err, "%s holds Pulumi's token", v)
		_, err = run("GITHUB_TOKEN="+GitHubTokenWithheld, v+"="+GitHubTokenWithheld)
		require.NoError(t, err, "%s withheld", v)
	}
}

// TestReviewTTLCommand runs the exact pre-run command of review stacks
// against a local fake of the schedules API, from the repository's root.
func TestReviewTTLCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH; the command finds the checkout with git")
	}
	command := ReviewTTLCommand(".", "pr", 8)
	runCommand := func(t *testing.T, api *fakecloud.API, stack, op, token string) (string, error) {
		t.Helper()
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "PULUMI_API="+api.URL, "PULUMI_ACCESS_TOKEN="+token, "PULUMI_CI_ORGANIZATION=my-org",
			"PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK="+stack, "PULUMI_CI_OPERATION="+op)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ttls := func(api *fakecloud.API) []string {
		var out []string
		for _, s := range api.Schedules() {
			if s.ScheduleOnce != "" && s.Definition["request"].(map[string]any)["operationContext"] != nil {
				out = append(out, s.ScheduleOnce)
			}
		}
		return out
	}

	api := fakecloud.New("stack-token", "my-org/nodeless-eks/pr-42", fakecloud.Drift("drift"))
	defer api.Close()
	out, err := runCommand(t, api, "pr-42", "update", "stack-token")
	require.NoError(t, err, out)
	assert.Contains(t, out, "review stack pr-42: created its time-to-live schedule")
	first := ttls(api)
	require.Len(t, first, 1)
	expires, err := time.Parse(time.RFC3339, first[0])
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(8*time.Hour), expires, 5*time.Minute, "8 hours after this update")

	out, err = runCommand(t, api, "pr-42", "update", "stack-token")
	require.NoError(t, err, out)
	assert.Contains(t, out, "moved its time-to-live schedule ttl-new-1")
	assert.Len(t, ttls(api), 1, "a later update moves the schedule; nothing piles up")
	assert.Empty(t, api.BadHeaders, "every call sends the documented headers")

	before := len(api.Requests)
	for _, skip := range []struct{ stack, op string }{{"pr-42", "preview"}, {"pr", "update"}} {
		out, err = runCommand(t, api, skip.stack, skip.op, "stack-token")
		require.NoError(t, err, out)
	}
	assert.Len(t, api.Requests, before, "previews and the template itself get no TTL")

	out, err = runCommand(t, api, "pr-42", "update", "expired-token")
	require.Error(t, err, "an error fails the run")
	assert.Contains(t, out, "Pulumi Cloud answered 401")
	assert.Contains(t, out, "nodeless-eks: could not set this review stack's time to live")

	t.Run("a paused schedule is moved and resumed", func(t *testing.T) {
		paused := fakecloud.TTL("ttl-p", "2026-11-30 08:00:00.000")
		paused.Paused = true
		api := fakecloud.New("stack-token", "my-org/nodeless-eks/pr-7", paused)
		defer api.Close()
		out, err := runCommand(t, api, "pr-7", "update", "stack-token")
		require.NoError(t, err, out)
		assert.Contains(t, out, "moved its time-to-live schedule ttl-p and resumed it")
		assert.False(t, api.Schedules()[0].Paused)
	})
	t.Run("an edition without TTL schedules: the update goes on, and says the stack will not expire", func(t *testing.T) {
		api := fakecloud.New("stack-token", "my-org/nodeless-eks/pr-8")
		defer api.Close()
		api.Fail("/deployments/ttl/schedules", 402)
		out, err := runCommand(t, api, "pr-8", "update", "stack-token")
		require.NoError(t, err, "a missing feature is said, not failed: %s", out)
		assert.Contains(t, out, "this organization's Pulumi Cloud edition has no time-to-live schedules")
		assert.Contains(t, out, "Review stack pr-8 will NOT expire after 8 hours without an update")
		assert.Contains(t, out, "Pulumi Cloud answered 402")
	})
	for _, code := range []int{403, 404} {
		t.Run(fmt.Sprintf("%d fails the run", code), func(t *testing.T) {
			api := fakecloud.New("stack-token", "my-org/nodeless-eks/pr-9")
			defer api.Close()
			api.Fail("/deployments/schedules", code)
			out, err := runCommand(t, api, "pr-9", "update", "stack-token")
			require.Error(t, err, "only a missing feature lets the update go on: %s", out)
			assert.Contains(t, out, fmt.Sprintf("Pulumi Cloud answered %d", code))
			assert.Contains(t, out, "nodeless-eks: could not set this review stack's time to live")
		})
	}
}

func TestBadConfig(t *testing.T) {
	const prod = `"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access"}`
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"no organization", map[string]string{"organization": ""}, "organization: required"},
		{"repository without owner", map[string]string{"repository": "nodeless-eks"}, `repository "nodeless-eks": required, the GitHub repository as owner/name`},
		{"no stacks", map[string]string{"stacks": "{}"}, "stacks: name at least one stack"},
		{"a stack named like a review stack", map[string]string{"stacks": `{"pr-1":{"account":"dev"}}`}, `stacks "pr-1": reserved for review stacks`},
		{"a stack named like the review role", map[string]string{"stacks": `{"review":{"account":"dev"}}`}, `stacks "review": deploy-review is the review stacks' role`},
		{"a drift schedule that is not cron", map[string]string{"stacks": `{"prod":{"account":"prod","production":true,"driftSchedule":"daily"}}`}, `stacks.prod.driftSchedule "daily": want a cron expression`},
		{"an unknown stack setting", map[string]string{"stacks": `{"prod":{"drift":"0 4 * * *"}}`}, `stacks: want an object of stacks by name, each ` + stackFields + `: json: unknown field "drift"`},
		{"a TTL of zero", map[string]string{"reviewStackTtlHours": "0"}, `reviewStackTtlHours "0": want 1-720 hours`},
		{"a session beyond IAM's limit", map[string]string{"sessionHours": "13"}, `sessionHours "13": want 1-12`},
		{"review stacks not a bool", map[string]string{"reviewStacks": "yes"}, `reviewStacks: "yes": want true or false`},
		{"a repoDir outside the repository", map[string]string{"repoDir": "../other"}, `repoDir "../other": want a directory inside the repository`},
		{"a review cluster name prefix too short", map[string]string{"reviewClusterNamePrefix": "a"}, `reviewClusterNamePrefix "a": want 3-41 letters`},
		{"an organization with capitals", map[string]string{"organization": "My-Org"}, `organization "My-Org": Pulumi Cloud organization names are lowercase, and the OIDC audience the deploy roles trust is matched case-sensitively; write "my-org"`},
		{"a cluster named like the deploy roles", map[string]string{"stacks": `{"ops":{"account":"dev","clusterName":"deploy-ops"}}`}, `stacks.ops.clusterName "deploy-ops": the deploy roles are named "deploy-"...`},
		{"a cluster named like review stacks", map[string]string{"stacks": `{"ops":{"account":"dev","clusterName":"nodeless-eks-pr-ops"}}`}, `stacks.ops.clusterName "nodeless-eks-pr-ops": its resources' names ("nodeless-eks-pr-ops-"..., "nodeless-eks-pr-ops_"...) and reviewClusterNamePrefix "nodeless-eks-pr-" overlap in account dev, so review runs could change them`},
		{"a production stack that previews pull requests", map[string]string{"stacks": `{"prod":{"account":"prod","production":true,"previewPullRequests":true}}`},
			"stacks.prod.previewPullRequests: a production stack's role would then trust pull-request runs"},
		{"a project name with a wildcard", map[string]string{"project": "nodeless-*"}, `project "nodeless-*": want the root project's name`},
		{"a review stack prefix with a wildcard", map[string]string{"reviewStackPrefix": "*"}, `reviewStackPrefix "*": want the start of a stack name`},
		{"a stack name too long for its role", map[string]string{"stacks": `{"` + strings.Repeat("p", 50) + `":{"account":"dev"}}`},
			"stacks: " + deployRoleName + strings.Repeat("p", 50) + " would reach 65, over the limit of 64 (IAM role name length): shorten the stack's name"},
		{"two clusters in one account, one name inside the other", map[string]string{"stacks": `{"app":{"account":"dev"},"app-eu":{"account":"dev"}}`},
			`stacks.app.clusterName "nodeless-eks-app": stack app-eu's cluster "nodeless-eks-app-eu" in the same account starts with it`},
		{"import not a bool", map[string]string{"importStacks": "sure"}, `importStacks: "sure": want true or false`},
		{"no region", map[string]string{"aws:region": ""}, `aws:region "": want the region deploy/ calls AWS in`},

		// Accounts.
		{"no accounts", map[string]string{"accounts": "{}"}, "accounts: name at least one AWS account"},
		{"an account ID that is not one", map[string]string{"accounts": `{` + prod + `, "dev": {"id": "1234"}}`}, `accounts.dev.id "1234": want the 12-digit AWS account ID`},
		{"a role of another account", map[string]string{"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::444455556666:role/Admin"}, "dev": {"id": "123456789012"}}`},
			`accounts.prod.roleArn "arn:aws:iam::444455556666:role/Admin": want the ARN of a role in account 111122223333`},
		{"two accounts on the ambient credentials", map[string]string{"accounts": `{"prod": {"id": "111122223333"}, "dev": {"id": "123456789012"}}`},
			"accounts dev, prod: at most one account may leave roleArn empty"},
		{"one account twice", map[string]string{"accounts": `{"prod": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/Admin"}, "dev": {"id": "123456789012"}}`},
			"accounts.prod.id 123456789012: accounts.dev has the same ID"},
		{"another account's OIDC provider", map[string]string{"accounts": `{` + prod + `, "dev": {"id": "123456789012", "oidcProviderArn": "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"}}`},
			`accounts.dev.oidcProviderArn "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc": want the ARN of account 123456789012's api.pulumi.com/oidc provider`},
		{"another provider's ARN", map[string]string{"accounts": `{` + prod + `, "dev": {"id": "123456789012", "oidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"}}`},
			"want the ARN of account 123456789012's api.pulumi.com/oidc provider"},
		{"a policy name for an ARN", map[string]string{"accounts": `{` + prod + `, "dev": {"id": "123456789012", "deployPolicyArns": ["AdministratorAccess"]}}`},
			`accounts.dev.deployPolicyArns[0] "AdministratorAccess": want a managed policy of account 123456789012`},
		{"a stack in no account", map[string]string{"stacks": `{"prod":{"account":"production","production":true}}`}, `stacks.prod.account "production": want one of accounts (dev, prod)`},
		{"a stack that names no account among several", map[string]string{"stacks": `{"staging":{}}`}, `stacks.staging.account "": want one of accounts (dev, prod)`},
		{"review stacks in no account", map[string]string{"reviewAccount": ""}, `reviewAccount "": want the account review stacks deploy into`},
		{"credentials of another account than the ambient one", map[string]string{"accounts": `{` + prod + `, "dev": {"id": "999999999999"}}`},
			"accounts.dev.id 999999999999: the credentials deploy/ runs with are for account " + toolingAccount},
		{"a stack whose role would be the account role", map[string]string{"stacks": `{"account-access":{"account":"dev"}}`},
			`stacks "account-access": its deploy role would be deploy-account-access, the role deploy/ assumes in each account`},

		// Production's account.
		{"production beside a non-production stack", map[string]string{"stacks": `{"prod":{"account":"prod","production":true},"staging":{"account":"prod","previewPullRequests":false}}`},
			"accounts.prod: holds production stack(s) prod and staging; their runs could copy production's EBS volumes"},
		{"production beside a stack that previews pull requests, acknowledged", map[string]string{
			"stacks":   `{"prod":{"account":"prod","production":true},"staging":{"account":"prod"}}`,
			"accounts": `{"prod":{"id":"111122223333","roleArn":"arn:aws:iam::111122223333:role/deploy-account-access","sharedWithNonProduction":true},"dev":{"id":"123456789012","roleArn":"arn:aws:iam::123456789012:role/deploy-account-access"}}`},
			"which preview pull requests: a preview runs the pull request's code"},
		{"production beside the review stacks", map[string]string{"reviewAccount": "prod"},
			`reviewAccount "prod": account prod holds production stack(s) prod, and review stacks run a pull request's code`},
		{"production beside the review stacks, acknowledged", map[string]string{"reviewAccount": "prod",
			"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access", "sharedWithNonProduction": true}, "dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access"}}`},
			"sharedWithNonProduction does not admit them"},
		{"an acknowledgement that no longer holds", map[string]string{"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access", "sharedWithNonProduction": true}, "dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access"}}`},
			"accounts.prod.sharedWithNonProduction: the account does not hold a production stack together with others"},

		// Editions.
		{"an edition Pulumi does not sell", map[string]string{"edition": "team"}, `edition "team": want the organization's Pulumi Cloud edition: free, essentials, pro, enterprise`},
		{"drift detection on Essentials", map[string]string{"edition": "essentials"},
			"driftDetection: drift detection needs Pulumi Cloud's Pro edition or above, and edition is Essentials"},
		{"TTL on Free", map[string]string{"edition": "free", "driftDetection": "false", "stacks": `{"prod":{"account":"prod","production":true},"staging":{"account":"dev"}}`, "productionTeam": ""},
			"reviewStackTtl: time-to-live stacks needs Pulumi Cloud's Pro edition or above, and edition is Free"},
		{"a team on Free", map[string]string{"edition": "free", "driftDetection": "false", "reviewStackTtl": "false", "stacks": `{"prod":{"account":"prod","production":true},"staging":{"account":"dev"}}`},
			"productionTeam: teams and their permissions needs Pulumi Cloud's Pro edition or above, and edition is Free"},
		{"a drift schedule without drift detection", map[string]string{"driftDetection": "false"},
			"stacks.prod.driftSchedule: drift detection is off (driftDetection: false), so the schedule would be ignored"},
		{"a TTL without review stacks", map[string]string{"reviewStacks": "false"}, "reviewStackTtl: there are no review stacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := run(t, tt.set)
			rec.RequireRefused(t, err, tt.want)
		})
	}
}

// globMatch matches a path filter: ** spans directories, * does not.
func globMatch(glob, file string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			re.WriteString(".*")
			i++
		case glob[i] == '*':
			re.WriteString("[^/]*")
		default:
			re.WriteString(regexp.QuoteMeta(string(glob[i])))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(file)
}
