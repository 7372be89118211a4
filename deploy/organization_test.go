package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakecloud"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFailedPreconditionNeverStopsTheRestore: each precondition deploy/
// rests on, broken, fails the run naming it, and only after every stack's
// settings, deploy/'s own included, are written back; an answer that lacks
// a field a decision rests on fails closed, naming the field.
func TestAFailedPreconditionNeverStopsTheRestore(t *testing.T) {
	meta := func(name string, v any) func(o *fakecloud.Organization) {
		return func(o *fakecloud.Organization) {
			if v == nil {
				delete(o.Metadata, name)
				return
			}
			o.Metadata[name] = v
		}
	}
	policy := func(p map[string]any) func(o *fakecloud.Organization) {
		return func(o *fakecloud.Organization) { o.Issuers[0].Policies = append(o.Issuers[0].Policies, p) }
	}
	branch := map[string]any{"sub": "repo:my-org/nodeless-eks:ref:refs/heads/main"}
	tests := []struct {
		name   string
		change func(o *fakecloud.Organization)
		want   string
	}{
		{"metadata without a field it decides on", meta("membersCanCreateStacks", nil), "the answer has no membersCanCreateStacks"},
		{"features without self-hosted agents' field", func(o *fakecloud.Organization) {
			delete(o.Metadata["features"].(map[string]any), "selfHostedDeploymentsEnabled")
		}, "the answer has no features.selfHostedDeploymentsEnabled"},
		{"the permissive mode", meta("permissionMode", "permissive"), "is not in the restricted permission mode"},
		{"an edition without the permission mode", meta("permissionMode", nil), "is not in the restricted permission mode"},
		{"members read every stack", meta("defaultStackPermission", 101), "the default stack and environment permissions must be none"},
		{"members open environments", meta("defaultEnvironmentPermission", "open"), "the default stack and environment permissions must be none"},
		{"members create stacks", meta("membersCanCreateStacks", true), "members can create or transfer stacks"},
		{"members transfer stacks", meta("membersCanTransferStacks", true), "members can create or transfer stacks"},
		{"a stack of the project deploy/ does not name", func(o *fakecloud.Organization) {
			o.Stacks["nodeless-eks/scratch"] = &fakecloud.Stack{ID: "stk-scratch"}
			o.Metadata["stackCount"] = len(o.Stacks)
		}, "stack nodeless-eks/scratch is neither one of stacks nor a review stack"},
		{"a stack deploy/ cannot see", meta("stackCount", 9), "holds 9 stacks, and deploy/ sees"},
		{"a default runner pool", func(o *fakecloud.Organization) { o.DefaultAgentPool = "pool-shared" },
			"the organization's default runner pool pool-shared would run deploy/ and the production stacks"},
		// Without self-hosted agents there is no customer-managed pool, and
		// deploy/ does not ask (the fake would refuse, 403); with them, a
		// refusal hides the default pool.
		{"an edition without customer-managed pools", func(o *fakecloud.Organization) {
			o.NoAgentPools = true
			o.Metadata["features"].(map[string]any)["selfHostedDeploymentsEnabled"] = false
		}, ""},
		{"pools deploy/ may not list", func(o *fakecloud.Organization) { o.NoAgentPools = true }, "403"},
		{"an admin organization token by OIDC", policy(map[string]any{"decision": "allow", "tokenType": "organization",
			"authorizedPermissions": []any{"admin"}, "rules": branch}), `an organization token with the permissions ["admin"]`},
		{"an organization token that states no permissions", policy(map[string]any{"decision": "allow", "tokenType": "organization",
			"rules": branch}), "an organization token with the permissions [] (none stated, or admin)"},
		{"a personal token by OIDC", policy(map[string]any{"decision": "allow", "tokenType": "personal", "userLogin": "alice",
			"authorizedPermissions": []any{}, "rules": branch}), `a "personal" token`},
		{"a runner token by OIDC", policy(map[string]any{"decision": "allow", "tokenType": "runner", "runnerID": "r1",
			"authorizedPermissions": []any{}, "rules": branch}), `a "runner" token`},
		{"a subject any pull request presents", policy(map[string]any{"decision": "allow", "tokenType": "team", "teamName": "platform",
			"authorizedPermissions": []any{}, "rules": map[string]any{"sub": "repo:my-org/nodeless-eks:*"}}), `to the subject "repo:my-org/nodeless-eks:*"`},
		{"a GitHub environment's subject", policy(map[string]any{"decision": "allow", "tokenType": "team", "teamName": "platform",
			"authorizedPermissions": []any{}, "rules": map[string]any{"sub": "repo:my-org/nodeless-eks:environment:prod"}}), "which is not one branch's"},
		{"the Everyone team as the operators", func(o *fakecloud.Organization) { o.Teams["developers"].Everyone = true },
			`operatorsTeam "developers" is the organization's Everyone team`},
		{"listings in pages of one", func(o *fakecloud.Organization) { o.PageSize = 1 }, ""}, // a control: read whole
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
			tt.change(w.org)
			rec, res := w.run(t, false)
			if tt.want == "" {
				require.NoError(t, res.Err)
				return
			}
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), "deploy/ restored what it declares, but what it rests on does not hold")
			assert.Contains(t, res.Err.Error(), tt.want)
			for _, stack := range fleetOf(w.c) {
				assert.Equal(t, IdentityName(w.c, keyOf(w.c, stack)), field(w.settingsOf(t, stack), "operationContext.servicePrincipal.teamName"),
					"%s's settings were restored", stack)
			}
			assert.Equal(t, "deploy-admin", field(w.org.Stacks[project+"/admin"].Settings, "operationContext.servicePrincipal.userId"))
			if strings.Contains(tt.name, "Everyone") {
				_, given := rec.Find("pulumiservice:index:TeamRoleAssignment", "team-role-"+OperatorsRoleName(w.c, false))
				assert.False(t, given, "the Everyone team gets no role")
			}
		})
	}
	t.Run("a finding beside a restore that fails is still shown", func(t *testing.T) {
		w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
		logged := captureErrors(t)
		w.org.Metadata["permissionMode"] = "permissive"
		w.api.Fail("PUT /api/stacks/my-org/nodeless-eks/staging/deployments/settings", http.StatusServiceUnavailable)
		_, res := w.run(t, false)
		require.Error(t, res.Err)
		assert.Contains(t, res.Err.Error(), "writing the deployment settings of nodeless-eks/staging")
		assert.Contains(t, strings.Join(*logged, "\n"), "is not in the restricted permission mode", "the finding is logged")
	})
	t.Run("a deny is not judged", func(t *testing.T) {
		w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
		policy(map[string]any{"decision": "deny", "tokenType": "personal", "rules": map[string]any{"sub": "*"}})(w.org)
		_, res := w.run(t, false)
		require.NoError(t, res.Err)
	})
	t.Run("an answer that cannot be read", func(t *testing.T) {
		w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
		w.api.Fail("/api/user/stacks", http.StatusServiceUnavailable)
		_, res := w.run(t, false)
		require.Error(t, res.Err)
		assert.Contains(t, res.Err.Error(), "reading /api/user/stacks?organization=my-org")
		assert.Equal(t, "deploy-nodeless-eks-prod", field(w.settingsOf(t, "prod"), "operationContext.servicePrincipal.teamName"),
			"a stack's ID is read on its own when the census fails")
	})
}

// TestDeploysOwnSettingsAreDeclared: deploy/'s own settings, changed to a
// fork, to pull-request previews or review stacks, to tag deployments or
// to a runner pool, show in the preview and are written back whole by the
// next update: its branch and directory, its service principal and the
// deployer role, Pulumi's hosted pool.
func TestDeploysOwnSettingsAreDeclared(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	warnings := captureWarnings(t)
	_, res := w.run(t, false)
	require.NoError(t, res.Err)
	own := w.org.Stacks[project+"/admin"]
	assert.Equal(t, map[string]any{"git": map[string]any{"branch": "refs/heads/main", "repoDir": "deploy"}}, own.Settings["sourceContext"])
	assert.Equal(t, deployerArn, field(own.Settings, "operationContext.oidc.aws.roleArn"))
	assert.Nil(t, own.Settings["agentPoolID"], "Pulumi's hosted pool")

	own.Settings = map[string]any{
		"sourceContext":    map[string]any{"git": map[string]any{"branch": "refs/heads/main", "repoDir": "deploy", "repoUrl": "https://github.com/mallory/fork.git"}},
		"vcs":              map[string]any{"provider": "github", "repository": "my-org/nodeless-eks", "previewPullRequests": true, "deployTags": true, "pullRequestTemplate": true},
		"operationContext": own.Settings["operationContext"],
		"agentPoolID":      "pool-shared",
	}
	writes := len(own.Writes)
	_, res = w.run(t, true)
	require.NoError(t, res.Err)
	assert.Len(t, own.Writes, writes, "a preview writes nothing")
	shown := strings.Join(*warnings, "\n")
	for _, diff := range []string{"sourceContext.git.repoUrl is \"https://github.com/mallory/fork.git\", not null", "vcs.previewPullRequests is true",
		"vcs.deployTags is true", "vcs.pullRequestTemplate is true", "agentPoolID is \"pool-shared\", not null"} {
		assert.Contains(t, shown, diff)
	}
	_, res = w.run(t, false)
	require.NoError(t, res.Err)
	assert.Len(t, own.Writes, writes+1)
	assert.Equal(t, leaves(OwnSettings(w.c)), leaves(own.Settings), "written back whole")
	assert.Nil(t, own.Settings["agentPoolID"])
	assert.Nil(t, field(own.Settings, "sourceContext.git.repoUrl"))
}

// TestTheTokenIsTheCLIs: without PULUMI_ACCESS_TOKEN and PULUMI_API, the
// API is the backend `pulumi login` made current and the token its own, as
// the Pulumi CLI reads its credentials; a self-managed backend's login
// leaves Pulumi Cloud's API; no token anywhere is refused, naming the
// ways to give one; a credentials file that does not parse is an error.
func TestTheTokenIsTheCLIs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PULUMI_HOME", home)
	t.Setenv("PULUMI_API", "")
	t.Setenv("PULUMI_ACCESS_TOKEN", "")
	write := func(creds string) {
		require.NoError(t, os.WriteFile(filepath.Join(home, "credentials.json"), []byte(creds), 0o600))
	}
	_, err := loadCloudAPI()
	require.ErrorContains(t, err, "no Pulumi Cloud token for https://api.pulumi.com")
	assert.ErrorContains(t, err, "PULUMI_ACCESS_TOKEN or `pulumi login`")

	// As the CLI v3.276.0 writes it: accounts, and accessTokens derived
	// from them for older CLIs (workspace.Credentials.MarshalJSON).
	write(`{"current":"https://api.pulumi.acme.internal","accounts":{"https://api.pulumi.com":{"accessToken":"pul-cloud"},` +
		`"https://api.pulumi.acme.internal":{"accessToken":"pul-self-hosted"}},` +
		`"accessTokens":{"https://api.pulumi.com":"pul-cloud","https://api.pulumi.acme.internal":"pul-self-hosted"}}`)
	api, err := loadCloudAPI()
	require.NoError(t, err)
	assert.Equal(t, cloudAPI{URL: "https://api.pulumi.acme.internal", Token: "pul-self-hosted"}, *api)

	write(`{"current":"s3://state-bucket","accounts":{"https://api.pulumi.com":{"accessToken":"pul-cloud"}},"accessTokens":{"https://api.pulumi.com":"pul-cloud"}}`)
	api, err = loadCloudAPI()
	require.NoError(t, err)
	assert.Equal(t, cloudAPI{URL: "https://api.pulumi.com", Token: "pul-cloud"}, *api)

	write(`{"current": "https://api.pulumi.com", "accessTokens": {`)
	_, err = loadCloudAPI()
	require.ErrorContains(t, err, "reading the Pulumi CLI's credentials")

	t.Setenv("PULUMI_API", "http://127.0.0.1:9/")
	t.Setenv("PULUMI_ACCESS_TOKEN", "pul-env")
	api, err = loadCloudAPI()
	require.NoError(t, err, "the environment names both: the file is not read")
	assert.Equal(t, cloudAPI{URL: "http://127.0.0.1:9", Token: "pul-env"}, *api)
}
