package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
	"github.com/pulumi/pulumi-pulumiservice/sdk/go/pulumiservice"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// newCloud declares the fleet in Pulumi Cloud: its stacks, a run identity
// per stack and for the review stacks, the teams' roles, every stack's
// deployment settings (deploy/'s own included), drift and TTL schedules,
// and deploy/'s own schedule, on which it restores all of it.
func newCloud(ctx *pulumi.Context, c *Config, api *cloudAPI, org *census, roleArns map[string]pulumi.StringOutput, partition string) error {
	named := sortedKeys(c.Stacks)
	fleet := slices.Clone(named)
	if c.Review != nil {
		fleet = append(fleet, c.Review.Template)
	}
	ids := map[string]pulumi.StringOutput{}
	for _, name := range fleet {
		opts := []pulumi.ResourceOption{pulumi.RetainOnDelete(true)} // it holds a cluster's state
		if s, ok := c.Stacks[name]; (ok && s.Import) || (!ok && c.Review.Import) {
			opts = append(opts, pulumi.Import(pulumi.ID(c.Organization+"/"+c.Project+"/"+name)))
		}
		stack, err := pulumiservice.NewStack(ctx, "stack-"+name, &pulumiservice.StackArgs{
			OrganizationName: pulumi.String(c.Organization), ProjectName: pulumi.String(c.Project), StackName: pulumi.String(name),
		}, opts...)
		if err != nil {
			return fmt.Errorf("creating the stack %s: %w", name, err)
		}
		if id, ok := org.StackIDs[name]; ok {
			ids[name] = pulumi.String(id).ToStringOutput()
			continue
		}
		// A new stack's ID is known once it exists (no output of
		// pulumiservice v1.3.0's Stack carries it).
		ids[name] = stack.ID().ApplyT(func(pulumi.ID) (string, error) {
			id, err := stackID(api, c, name)
			if ctx.DryRun() && statusOf(err) == http.StatusNotFound {
				return "", nil // created by the update this preview shows
			}
			return id, err
		}).(pulumi.StringOutput)
	}

	// role declares a role and gives it to a team: deploy/'s own (a run
	// identity) or a team of people named in config.
	role := func(key, name, team, what string, permissions pulumi.MapOutput, opts ...pulumi.ResourceOption) (pulumi.StringOutput, error) {
		r, err := pulumiservice.NewOrganizationRole(ctx, "role-"+key, &pulumiservice.OrganizationRoleArgs{
			OrganizationName: pulumi.String(c.Organization), Name: pulumi.String(name), Description: pulumi.String(what),
			Permissions: permissions,
		})
		if err != nil {
			return pulumi.StringOutput{}, fmt.Errorf("creating the Pulumi Cloud role %s: %w", name, err)
		}
		if _, err := pulumiservice.NewTeamRoleAssignment(ctx, "team-role-"+key, &pulumiservice.TeamRoleAssignmentArgs{
			OrganizationName: pulumi.String(c.Organization), TeamName: pulumi.String(team), RoleId: r.RoleId,
		}, opts...); err != nil {
			return pulumi.StringOutput{}, fmt.Errorf("giving team %s its role: %w", team, err)
		}
		return r.RoleId, nil
	}
	// A run identity is a team without members that holds one role, which
	// the stack's settings select, once both exist. Pulumi Cloud adds a new
	// team's creator as a member (pulumiservice v1.3.0 CHANGELOG, "whom
	// Pulumi Cloud auto-adds"); the next update's refresh (Pulumi.yaml:
	// refresh: always) reads them, and the update to members [] removes
	// them (provider/pkg/resources/team.go, Read and Update).
	identities := map[string]pulumi.StringOutput{}
	identity := func(key, what string, permissions pulumi.MapOutput) error {
		name := IdentityName(c, key)
		team, err := pulumiservice.NewTeam(ctx, "team-"+key, &pulumiservice.TeamArgs{
			OrganizationName: pulumi.String(c.Organization), TeamType: pulumi.String("pulumi"), Name: pulumi.String(name),
			DisplayName: pulumi.String(name), Description: pulumi.String("deploy/'s run identity, no members: " + what),
			Members: pulumi.StringArray{},
		})
		if err != nil {
			return fmt.Errorf("creating the team %s: %w", name, err)
		}
		roleID, err := role(key, name, name, what, permissions, pulumi.DependsOn([]pulumi.Resource{team}))
		if err != nil {
			return err
		}
		identities[key] = pulumi.All(team.Name, roleID).ApplyT(func([]any) string { return name }).(pulumi.StringOutput)
		return nil
	}
	for _, name := range named {
		if err := identity(name, "what each deployment of stack "+name+" runs as: that stack alone, no settings",
			ids[name].ApplyT(func(id string) map[string]any { return onStacks([]string{id}, RunScopes) }).(pulumi.MapOutput)); err != nil {
			return err
		}
	}
	// The review identity reaches the project's stacks but the named ones
	// and the template, which is never deployed.
	namedIDs := pulumi.ToStringArrayOutput(outputs(ids, fleet))
	if c.Review != nil {
		if err := identity(reviewRoleKey, "what each deployment of a review stack runs as: review stacks alone, no settings",
			namedIDs.ApplyT(func(ids []string) map[string]any { return onReviewStacks(c.Project, ids, ReviewScopes) }).(pulumi.MapOutput)); err != nil {
			return err
		}
	}
	for _, production := range []bool{true, false} {
		team := map[bool]string{true: c.ProductionTeam, false: c.OperatorsTeam}[production]
		if team == "" || org.Excluded[team] {
			continue
		}
		var theirs []string
		for _, name := range named {
			if c.Stacks[name].Production == production {
				theirs = append(theirs, name)
			}
		}
		permissions := pulumi.All(pulumi.ToStringArrayOutput(outputs(ids, theirs)), namedIDs).ApplyT(func(v []any) map[string]any {
			grants := onStacks(v[0].([]string), OperatorScopes)
			if !production && c.Review != nil {
				grants["entries"] = append(grants["entries"].([]any), onReviewStacks(c.Project, v[1].([]string), ReviewWatchScopes))
			}
			return grants
		}).(pulumi.MapOutput)
		name := OperatorsRoleName(c, production)
		if _, err := role(name, name, team, "What team "+team+" may do on its stacks: start and read deployments, which run as the "+
			"stacks' identities; no settings", permissions); err != nil {
			return err
		}
	}

	// Each stack's settings, restored as outputs, so that every read and
	// write is awaited and its failure fails the run.
	restored := map[string]pulumi.StringOutput{}
	var template pulumi.MapOutput
	for _, name := range fleet {
		r := RoleOf(c, name)
		doc := pulumi.All(roleArns[r.Key], identities[r.Key]).ApplyT(func(v []any) map[string]any {
			return SettingsDocument(c, name, partition, v[0].(string), v[1].(string))
		}).(pulumi.MapOutput)
		if c.Review != nil && name == c.Review.Template {
			template = doc
		}
		restored[name] = pulumi.All(ids[name], doc).ApplyT(func(v []any) (string, error) {
			return restoreSettings(ctx, api, c, c.Project, name, func(map[string]any) map[string]any { return v[1].(map[string]any) })
		}).(pulumi.StringOutput)
		if s := c.Stacks[name]; s.DriftSchedule != "" {
			settled := restored[name].ApplyT(func(string) string { return name }).(pulumi.StringOutput) // once settings are declared
			if _, err := pulumiservice.NewDriftSchedule(ctx, "drift-"+name, &pulumiservice.DriftScheduleArgs{
				Organization: pulumi.String(c.Organization), Project: pulumi.String(c.Project), Stack: settled,
				ScheduleCron: pulumi.String(s.DriftSchedule),
			}); err != nil {
				return fmt.Errorf("creating the drift schedule of %s: %w", name, err)
			}
		}
	}
	restored[ctx.Project()+"/"+ctx.Stack()] = pulumi.String("").ToStringOutput().ApplyT(func(string) (string, error) {
		return restoreSettings(ctx, api, c, ctx.Project(), ctx.Stack(), func(map[string]any) map[string]any { return OwnSettings(c) })
	}).(pulumi.StringOutput)
	if c.Review != nil {
		for _, name := range sortedKeys(org.ReviewStacks) {
			var err error
			if restored[name], err = newReviewStack(ctx, c, api, name, org.ReviewStacks[name], template); err != nil {
				return err
			}
		}
	}
	// deploy/ runs itself on a schedule, which restores what it declares.
	if _, err := pulumiservice.NewDeploymentSchedule(ctx, "restore", &pulumiservice.DeploymentScheduleArgs{
		Organization: pulumi.String(c.Organization), Project: pulumi.String(ctx.Project()), Stack: pulumi.String(ctx.Stack()),
		ScheduleCron: pulumi.String(c.Schedule), PulumiOperation: pulumiservice.PulumiOperationUpdate,
	}); err != nil {
		return fmt.Errorf("creating deploy/'s own schedule: %w", err)
	}
	ctx.Export("settings", pulumi.ToStringMapOutput(restored))
	return nil
}

// newReviewStack gives a review stack that exists a time to live,
// ttlHours after its last update, and holds its settings to the
// template's: it keeps its own source and triggers (its branch is the pull
// request's) and runs as and with the template's operationContext,
// executor, pool and cache.
func newReviewStack(ctx *pulumi.Context, c *Config, api *cloudAPI, name string, lastUpdate int64, template pulumi.MapOutput) (pulumi.StringOutput, error) {
	restored := template.ApplyT(func(template map[string]any) (string, error) {
		return restoreSettings(ctx, api, c, c.Project, name, func(live map[string]any) map[string]any {
			if live == nil {
				return nil // no settings: it runs nothing, and settings without its source would be wrong
			}
			want := asRequest(live)
			for _, k := range []string{"operationContext", "executorContext", "agentPoolID", "cacheOptions"} {
				if v, ok := template[k]; ok {
					want[k] = v
				} else {
					delete(want, k)
				}
			}
			return want
		})
	}).(pulumi.StringOutput)
	if lastUpdate == 0 {
		return restored, nil // nothing deployed, nothing to destroy
	}
	expires := time.Unix(lastUpdate, 0).Add(time.Duration(c.Review.TTLHours) * time.Hour).UTC()
	if floor := time.Now().UTC().Truncate(time.Hour).Add(time.Hour); expires.Before(floor) {
		expires = floor // overdue: the next hour, which stays put between hourly runs
	}
	if _, err := pulumiservice.NewTtlSchedule(ctx, "ttl-"+name, &pulumiservice.TtlScheduleArgs{
		Organization: pulumi.String(c.Organization), Project: pulumi.String(c.Project), Stack: pulumi.String(name),
		Timestamp: pulumi.String(expires.Format(time.RFC3339)), DeleteAfterDestroy: pulumi.Bool(true),
	}); err != nil {
		return restored, fmt.Errorf("giving review stack %s its time to live: %w", name, err)
	}
	return restored, nil
}

// restoreSettings compares a stack's settings with what want makes of
// them, whole: a preview says each difference, an update writes want back
// whole (PUT, ReplaceDeploymentSettings), and nothing is written when
// nothing differs. The settings are the REST API's because pulumiservice
// v1.3.0's DeploymentSettings models no service principal and writes
// whole, so it would drop it.
func restoreSettings(ctx *pulumi.Context, api *cloudAPI, c *Config, project, stack string,
	want func(live map[string]any) map[string]any) (string, error) {
	where := "/api/stacks/" + url.PathEscape(c.Organization) + "/" + url.PathEscape(project) + "/" + url.PathEscape(stack) + "/deployments/settings"
	var live map[string]any
	var raw json.RawMessage
	switch err := api.call(context.Background(), http.MethodGet, where, nil, &raw); {
	case statusOf(err) == http.StatusNotFound: // none yet
	case err != nil:
		return "", fmt.Errorf("reading the deployment settings of %s/%s: %w", project, stack, err)
	case json.Unmarshal(raw, new(apitype.DeploymentSettings)) != nil || json.Unmarshal(raw, &live) != nil:
		return "", fmt.Errorf("reading the deployment settings of %s/%s: not a DeploymentSettings: %s", project, stack, short(string(raw)))
	}
	doc := want(live)
	if doc == nil {
		return "none, left alone", nil
	}
	diffs := settingsDiff(asRequest(live), doc)
	switch {
	case len(diffs) == 0:
		return "as declared", nil
	case ctx.DryRun():
		return "differ: " + strings.Join(diffs, "; "), logWarning(ctx, fmt.Sprintf("the deployment settings of %s/%s differ from what "+
			"deploy/ declares, and `pulumi up` writes them back: %s", project, stack, strings.Join(diffs, "; ")))
	}
	if err := api.call(context.Background(), http.MethodPut, where, doc, nil); err != nil {
		return "", fmt.Errorf("writing the deployment settings of %s/%s: %w", project, stack, err)
	}
	return "restored: " + strings.Join(diffs, "; "), nil
}

// asRequest is a stack's settings as GET answers them (DeploymentSettings)
// in the shape PUT takes (DeploymentSettingsRequest), without what Pulumi
// Cloud fills in itself: the version and source, the GitHub app's
// installation, the clone URL, and the legacy gitHub block when it repeats
// vcs (pulumiservice v1.3.0 reads back installationId and repoUrl,
// provider/pkg/resources/deployment_settings.go); a repoUrl or gitHub
// block that says anything else stays, and differs. The service principal
// is read as it is selected (AssignmentPrincipal's team.name or
// user.githubLogin, apitype).
func asRequest(live map[string]any) map[string]any {
	if live == nil {
		return nil
	}
	out := roundTrip(live).(map[string]any)
	delete(out, "version")
	delete(out, "source")
	if vcs, ok := out["vcs"].(map[string]any); ok {
		delete(vcs, "installationId")
		if gh, ok := out["gitHub"].(map[string]any); ok {
			delete(gh, "installationId")
			same := true
			for k, v := range gh {
				same = same && reflect.DeepEqual(v, vcs[k])
			}
			if same {
				delete(out, "gitHub")
			}
		}
		if git, ok := field(out, "sourceContext.git").(map[string]any); ok && strings.TrimSuffix(fmt.Sprint(git["repoUrl"]), ".git") ==
			"https://github.com/"+fmt.Sprint(vcs["repository"]) {
			delete(git, "repoUrl")
		}
	}
	if oc, ok := out["operationContext"].(map[string]any); ok {
		if sp, ok := oc["servicePrincipal"].(map[string]any); ok {
			if team, ok := sp["team"].(map[string]any); ok {
				oc["servicePrincipal"] = map[string]any{"teamName": team["name"]}
			} else if user, ok := sp["user"].(map[string]any); ok {
				oc["servicePrincipal"] = map[string]any{"userId": user["githubLogin"]}
			}
		}
	}
	return out
}

// field reads a nested field of a JSON object.
func field(v any, keys string) any {
	for _, k := range strings.Split(keys, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// settingsDiff names each field where live differs from want. False,
// empty and absent are one value: GET leaves such fields out (omitzero and
// omitempty on DeploymentSettings, apitype).
func settingsDiff(live, want map[string]any) []string {
	if live == nil {
		return []string{"the stack has none"}
	}
	l, w := leaves(live), leaves(want)
	all := maps.Clone(l)
	maps.Copy(all, w)
	var diffs []string
	for _, k := range sortedKeys(all) {
		if l[k] != w[k] {
			diffs = append(diffs, fmt.Sprintf("%s is %s, not %s", k, short(cmp.Or(l[k], "null")), short(cmp.Or(w[k], "null"))))
		}
	}
	return diffs
}

// leaves are a document's fields, "a.b" to their JSON, but for the false,
// empty and null ones.
func leaves(doc map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(path+"."+k, "."), x)
			}
		} else if b := mustMarshal(v); !slices.Contains([]string{"null", "false", `""`, "[]"}, b) {
			out[path] = b
		}
	}
	walk("", roundTrip(doc))
	return out
}

// roundTrip is v as JSON decoding gives it: a deep copy.
func roundTrip(v any) any {
	var out any
	_ = json.Unmarshal([]byte(mustMarshal(v)), &out)
	return out
}

// short cuts a value to what a line of a preview can show.
func short(s string) string {
	if len(s) > 100 {
		return s[:97] + "..."
	}
	return s
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stackID asks Pulumi Cloud for a stack's ID (AppStack.id).
func stackID(api *cloudAPI, c *Config, stack string) (string, error) {
	var s struct{ ID string }
	where := "/api/stacks/" + url.PathEscape(c.Organization) + "/" + url.PathEscape(c.Project) + "/" + url.PathEscape(stack)
	err := api.call(context.Background(), http.MethodGet, where, nil, &s)
	if err == nil && s.ID == "" {
		err = errors.New("the answer has no id")
	}
	if err != nil {
		return "", fmt.Errorf("reading the Pulumi Cloud ID of stack %s (%w): its role cannot name it", stack, err)
	}
	return s.ID, nil
}

// outputs are the outputs of keys, in their order.
func outputs(m map[string]pulumi.StringOutput, keys []string) (out []pulumi.StringOutput) {
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// SettingsDocument is a stack's deployment settings, whole, as PUT takes
// them (DeploymentSettingsRequest), or, for the review template, what
// every review stack copies: the source, the push and pull-request
// triggers, the deploy role its runs assume through Deployments' OIDC,
// the identity they run as, the pre-run commands, GitHub's token
// withheld, the dependency cache, the runner pool.
func SettingsDocument(c *Config, stack, partition, roleArn, team string) map[string]any {
	template := c.Review != nil && stack == c.Review.Template
	r := RoleOf(c, stack)
	doc := map[string]any{
		"sourceContext": map[string]any{"git": map[string]any{"branch": "refs/heads/" + c.Branch, "repoDir": c.RepoDir}},
		// The template is never deployed; its copies are, and no named
		// stack runs a pull request's code.
		"vcs": map[string]any{"provider": "github", "repository": c.Repository, "deployCommits": !template, "previewPullRequests": false,
			"pullRequestTemplate": template, "paths": PathFilters(c.RepoDir, stack)},
		"operationContext": map[string]any{
			"oidc": map[string]any{"aws": map[string]any{"roleArn": roleArn, "sessionName": "pulumi-deployments",
				"duration": fmt.Sprintf("%dh0m0s", c.SessionHours)}},
			"environmentVariables": EnvironmentVariables(),
			"preRunCommands":       PreRunCommands(c, BoundaryArn(c, partition, c.Accounts[r.Account].ID, r.Key), r),
			"servicePrincipal":     map[string]any{"teamName": team},
		},
		"cacheOptions": map[string]any{"enable": CachesDependencies(c, stack)},
	}
	if pool := c.Stacks[stack].AgentPoolID; pool != "" {
		doc["agentPoolID"] = pool
	}
	if template {
		if c.Review.AgentPoolID != "" {
			doc["agentPoolID"] = c.Review.AgentPoolID
		}
		doc["vcs"].(map[string]any)["reviewStackLabels"] = *c.Review.Labels
	}
	return doc
}

// OwnSettings are deploy/'s own settings, written whole on every update
// like the fleet's (knowingly against Pulumi's advice to keep a stack's
// settings out of its own program: no program is more trusted): its
// branch and directory; no push, pull-request or tag deployments (it runs
// by hand and on its schedule); the deployer role through Pulumi Cloud's
// OIDC; the Admin service principal; Pulumi's hosted pool (no
// agentPoolID); no dependency cache; GitHub's token withheld.
func OwnSettings(c *Config) map[string]any {
	return map[string]any{
		"sourceContext": map[string]any{"git": map[string]any{"branch": "refs/heads/" + c.Branch, "repoDir": path.Join(c.RepoDir, "deploy")}},
		"vcs": map[string]any{"provider": "github", "repository": c.Repository, "deployCommits": false, "deployTags": false,
			"previewPullRequests": false, "pullRequestTemplate": false},
		"operationContext": map[string]any{
			"oidc":                 map[string]any{"aws": map[string]any{"roleArn": c.Deployer, "sessionName": "nodeless-eks-deploy"}},
			"environmentVariables": EnvironmentVariables(),
			"preRunCommands":       []any{GitHubTokenCheckCommand()},
			"servicePrincipal":     map[string]any{"userId": c.ServicePrincipal},
		},
		"cacheOptions": map[string]any{"enable": false},
	}
}
