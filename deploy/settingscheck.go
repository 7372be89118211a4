package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"nodeless-eks/internal/pulumicloud"
)

// A run's ephemeral token is admin on its own stack, and Stack Admin
// includes stack_deployment_settings:write (Pulumi's RBAC permission
// sets), so a pull request's code may rewrite its own stack's deployment
// settings: turn the dependency cache on, bring back Pulumi's GitHub
// token, pick a Pulumi Cloud role. deploy/Pulumi.yaml refreshes before
// every preview and update (options.refresh: always), and the provider's
// Read takes the settings from Pulumi Cloud (pulumiservice v1.3.0
// provider/pkg/resources/deployment_settings.go), so the next `pulumi up`
// of deploy/ writes them back; checkSettingsDrift says what changed, so
// that the preview shows it as more than a diff.

// remoteSettings is what checkSettingsDrift reads of GET
// /api/stacks/{org}/{project}/{stack}/deployments/settings
// (DeploymentSettings in the API's document).
type remoteSettings struct {
	AgentPoolID  string `json:"agentPoolID"`
	CacheOptions *struct {
		Enable bool `json:"enable"`
	} `json:"cacheOptions"`
	OperationContext *struct {
		EnvironmentVariables map[string]json.RawMessage `json:"environmentVariables"`
		PreRunCommands       []string                   `json:"preRunCommands"`
		Role                 *struct {
			ID string `json:"id"`
		} `json:"role"`
		OIDC *struct {
			AWS *struct {
				RoleArn string `json:"roleArn"`
			} `json:"aws"`
		} `json:"oidc"`
	} `json:"operationContext"`
	VCS *struct {
		PreviewPullRequests bool `json:"previewPullRequests"`
		PullRequestTemplate bool `json:"pullRequestTemplate"`
	} `json:"vcs"`
	GitHub *struct {
		PreviewPullRequests bool `json:"previewPullRequests"`
		PullRequestTemplate bool `json:"pullRequestTemplate"`
	} `json:"gitHub"`
}

// checkSettingsDrift reads the deployment settings of every stack deploy/
// configures and reports, per stack, each setting that no version of
// deploy/ writes: a Pulumi Cloud role, a PULUMI_ACCESS_TOKEN, a
// GITHUB_TOKEN other than GitHubTokenWithheld, the cache on where deploy/
// keeps it off, pull-request previews on a stack whose role does not trust
// them, a pre-run without the GitHub token check, a runner pool deploy/
// does not name, a deploy role of another stack. A stack without settings
// (404: new, or not yet configured) has none to check.
func checkSettingsDrift(ctx context.Context, c *Config, client *pulumicloud.Client) ([]string, error) {
	stacks := sortedKeys(c.Stacks)
	if c.ReviewStacks {
		stacks = append(stacks, c.ReviewTemplate)
	}
	var warnings []string
	for _, name := range stacks {
		template := c.ReviewStacks && name == c.ReviewTemplate
		path := "/api/stacks/" + url.PathEscape(c.Organization) + "/" + url.PathEscape(c.Project) + "/" + url.PathEscape(name) + "/deployments/settings"
		var s remoteSettings
		err := client.Call(ctx, http.MethodGet, path, nil, &s)
		if pulumicloud.StatusOf(err) == http.StatusNotFound {
			continue
		}
		if err != nil {
			return warnings, err
		}
		// pulumiservice v1.3.0's DeploymentSettings does not model
		// operationContext.role (provider/pkg/resources/deployment_settings.go:
		// its property map has no role), so its Read and Diff see no change
		// and no update writes it back: a role a run set is refused here.
		if oc := s.OperationContext; oc != nil && oc.Role != nil && oc.Role.ID != "" {
			return warnings, fmt.Errorf("stacks.%s: its deployment settings name a Pulumi Cloud role (%s), which deploy/ never sets and "+
				"cannot remove (pulumiservice v1.3.0 does not manage the field): every run of the stack would have that role's "+
				"permissions. Remove it in the stack's Settings, Deploy, Advanced (or PUT the settings without it), and find who "+
				"set it in the organization's audit log", name, oc.Role.ID)
		}
		if changed := settingsChanges(c, name, template, s); len(changed) > 0 {
			warnings = append(warnings, fmt.Sprintf("stacks.%s: its deployment settings were changed outside deploy/ (%s); this update "+
				"writes them back (deploy/ refreshes before every update). A run of the stack's own code can do this with its token: "+
				"the organization's audit log says who", name, strings.Join(changed, "; ")))
		}
	}
	return warnings, nil
}

// settingsChanges lists what in a stack's settings deploy/ did not write.
func settingsChanges(c *Config, name string, template bool, s remoteSettings) []string {
	var changed []string
	r := RoleOf(c, name)
	oc := s.OperationContext
	if oc == nil {
		return []string{"no operation context: no deploy role, no pre-run checks"}
	}
	if oc.Role != nil && oc.Role.ID != "" {
		changed = append(changed, fmt.Sprintf("a Pulumi Cloud role (%s), whose permissions every run would have", oc.Role.ID))
	}
	if _, ok := oc.EnvironmentVariables["PULUMI_ACCESS_TOKEN"]; ok {
		changed = append(changed, "a PULUMI_ACCESS_TOKEN, which replaces the run's own stack token")
	}
	var token string
	if raw, ok := oc.EnvironmentVariables["GITHUB_TOKEN"]; !ok || json.Unmarshal(raw, &token) != nil || token != GitHubTokenWithheld {
		changed = append(changed, "GITHUB_TOKEN is not "+GitHubTokenWithheld+", so a run would hold Pulumi's GitHub App token, or another")
	}
	if !slices.Contains(oc.PreRunCommands, GitHubTokenCheckCommand()) {
		changed = append(changed, "the pre-run commands lack the GitHub token check")
	}
	if want := CachesDependencies(c, name, template); s.CacheOptions != nil && s.CacheOptions.Enable && !want {
		changed = append(changed, "dependency caching is on, so its runs read and write the project's shared cache")
	}
	previews := (s.VCS != nil && s.VCS.PreviewPullRequests) || (s.GitHub != nil && s.GitHub.PreviewPullRequests)
	if previews && !template && !r.Previews {
		changed = append(changed, "pull-request previews are on, which its role does not trust")
	}
	pool := ""
	if !template {
		pool = c.Stacks[name].AgentPoolID
	}
	if s.AgentPoolID != pool {
		changed = append(changed, fmt.Sprintf("its runner pool is %q, not %q", s.AgentPoolID, pool))
	}
	ownRole := regexp.MustCompile(`:role/` + regexp.QuoteMeta(deployRoleName+r.Key) + `-[0-9a-z]{7}$`)
	if oc.OIDC == nil || oc.OIDC.AWS == nil || !ownRole.MatchString(oc.OIDC.AWS.RoleArn) {
		changed = append(changed, fmt.Sprintf("its AWS role is not %s%s", deployRoleName, r.Key))
	}
	return changed
}
