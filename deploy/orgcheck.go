package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"nodeless-eks/internal/pulumicloud"
)

// What deploy/ declares (the run identities, their roles, the settings)
// makes most grants impossible; what it cannot declare it reads, before
// anything is registered, and refuses unless it proves the grant reaches
// no stack of the fleet. Each path and field is Pulumi Cloud's REST API as
// its generated client has it (pulumi-cloud-sdk/go v1.20261118.1124,
// apiclient and apitype): GetOrganizationMetadata,
// ListRolesByOrgIDAndUXPurpose, ListUserStacks, ListStackPermissions,
// ListStackTeams, ListTeams, GetTeam, ListOrganizationMembers (frontend,
// backend and service-principal), ListOrgTokens, the OIDC issuers and
// GetAuthPolicy, ListOrgAgentPool, and deploy/'s own
// GetDeploymentSettings. What it does not read, and why, is in
// deploy/THREATS.md.

// orgState is what the check learned that the program needs.
type orgState struct {
	// StackIDs are the Pulumi Cloud IDs of the fleet's stacks that exist,
	// by name (the named stacks and the review template).
	StackIDs map[string]string
	// ReviewStacks are the review stacks that exist, by name, with their
	// last update (Unix seconds; 0 before the first).
	ReviewStacks map[string]int64
	// Roles are the organization's roles by ID, deploy/'s included.
	Roles map[string]cloudRole
}

type cloudRole struct {
	ID, Name, DefaultIdentifier string
}

// grantsNothing are the built-in roles that grant no stack beyond the
// organization's default stack permission, which the check holds at none
// (PermissionDescriptorRecord.defaultIdentifier). Reader, Builder and
// Maintainer read or write every stack: each is refused.
var grantsNothing = []string{"member", "billing-manager"}

// self is the stack that runs deploy/, whose own settings it reads.
type self struct{ Project, Stack string }

// checkOrganization reads every grant source it names and refuses what
// reaches the fleet's stacks from outside what deploy/ declares. It fails
// closed: an answer it cannot read, a missing field, a role it does not
// know, a stack it cannot see: refuse.
func checkOrganization(ctx context.Context, c *Config, api *pulumicloud.Client, me self) (*orgState, []string, error) {
	var errs []error
	var warnings []string
	refuse := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	get := func(path string, out any) bool {
		if err := api.Call(ctx, http.MethodGet, path, nil, out); err != nil {
			refuse("reading %s: %v; deploy/ refuses what it cannot read", path, err)
			return false
		}
		return true
	}
	// pages reads every page of a listing that answers continuationToken.
	pages := func(path string, q url.Values, page func(raw json.RawMessage) (string, error)) {
		seen := map[string]bool{}
		for token, n := "", 0; n == 0 || token != ""; n++ {
			if seen[token] {
				// A token answered twice would loop for ever.
				refuse("reading %s: the continuation token %q came back twice; its listing cannot be read whole", path, token)
				return
			}
			seen[token] = true
			if token != "" {
				q.Set("continuationToken", token)
			}
			var raw json.RawMessage
			if !get(path+"?"+q.Encode(), &raw) {
				return
			}
			var err error
			if token, err = page(raw); err != nil {
				refuse("reading %s: %v", path, err)
				return
			}
		}
	}
	org := url.PathEscape(c.Organization)

	var meta struct {
		StackCount                   *int
		DefaultStackPermission       *int
		DefaultEnvironmentPermission string
		MembersCanCreateStacks       *bool
		MembersCanTransferStacks     *bool
		PermissionMode               string
		Features                     map[string]any
	}
	if !get("/api/orgs/"+org+"/metadata", &meta) {
		return nil, nil, errors.Join(errs...)
	}
	feature := func(name string) bool {
		on, ok := meta.Features[name].(bool)
		if !ok {
			refuse("organization %s: its metadata does not say whether features.%s is on; deploy/ refuses what it cannot read", c.Organization, name)
		}
		return on
	}
	if !feature("customRolesEnabled") {
		refuse("organization %s: custom roles are off (features.customRolesEnabled), and every deployment of the fleet runs with a role "+
			"deploy/ declares; Pulumi Cloud has custom roles from the Pro edition on", c.Organization)
	}
	if feature("legacyDeploymentsOrgToken") {
		refuse("organization %s: deployments run with a legacy organization token (features.legacyDeploymentsOrgToken), which "+
			"reaches every stack; ask Pulumi to turn it off", c.Organization)
	}
	if meta.DefaultStackPermission == nil || *meta.DefaultStackPermission != 0 {
		refuse("organization %s: the default stack permission is not none, so every member reads production's state and secrets; "+
			"set it to none (deploy/README.md, step 2)", c.Organization)
	}
	if meta.DefaultEnvironmentPermission != "none" {
		refuse("organization %s: the default environment permission is %q; set it to none (deploy/README.md, step 2)",
			c.Organization, meta.DefaultEnvironmentPermission)
	}
	if meta.MembersCanCreateStacks == nil || *meta.MembersCanCreateStacks {
		refuse("organization %s: members can create stacks (membersCanCreateStacks), and a stack made in project %s would be a "+
			"review stack to the review identity; turn it off (deploy/README.md, step 2)", c.Organization, c.Project)
	}
	if meta.MembersCanTransferStacks == nil || *meta.MembersCanTransferStacks {
		refuse("organization %s: members can transfer stacks (membersCanTransferStacks), and a stack moved into project %s would be "+
			"a review stack to the review identity; turn it off (deploy/README.md, step 2)", c.Organization, c.Project)
	}
	// In the permissive mode, a stack whose settings lose their team runs
	// as whoever clicks Deploy; in the restricted mode it does not run
	// ("A deployment of a stack without one is refused", Pulumi's
	// permission modes page).
	if meta.PermissionMode != "restricted" {
		why := fmt.Sprintf("organization %s is in the %q permission mode, where a stack whose settings lose their service principal "+
			"runs as whoever starts it", c.Organization, cmp.Or(meta.PermissionMode, "permissive"))
		if c.hasAnyProduction() || c.Review != nil {
			refuse("%s: production and review stacks need the restricted mode (deploy/README.md, step 2); an edition without the "+
				"setting cannot hold them", why)
		} else {
			warnings = append(warnings, why+"; deploy/ restores the settings on its schedule, and the restricted mode refuses such runs")
		}
	}
	for _, name := range sortedKeys(c.Stacks) {
		if c.Stacks[name].DriftSchedule != "" && !feature("driftDetectionEnabled") {
			refuse("stacks.%s.driftSchedule: the organization's edition has no drift detection (features.driftDetectionEnabled)", name)
		}
	}

	state := &orgState{StackIDs: map[string]string{}, ReviewStacks: map[string]int64{}, Roles: map[string]cloudRole{}}
	var roles struct{ Roles []cloudRole }
	if get("/api/orgs/"+org+"/roles?uxPurpose=role", &roles) {
		for _, r := range roles.Roles {
			state.Roles[r.ID] = r
		}
	}
	// ours are deploy/'s roles, by their exact names, each with the one team
	// that may hold it: a run identity's own team (named as its role), or
	// the operators'. No member, token or OIDC policy may hold one.
	ours := map[string]string{OperatorsRoleName(c, true): c.ProductionTeam}
	if c.OperatorsTeam != "" {
		ours[OperatorsRoleName(c, false)] = c.OperatorsTeam
	}
	for _, r := range Roles(c) {
		ours[IdentityName(c, r.Key)] = IdentityName(c, r.Key)
	}
	holder := func(roleID string) (string, bool) {
		team, ok := ours[state.Roles[roleID].Name]
		return team, ok
	}
	// grantsNone is a role that grants nothing on the fleet.
	grantsNone := func(roleID string) bool {
		r, ok := state.Roles[roleID]
		return ok && slices.Contains(grantsNothing, r.DefaultIdentifier)
	}
	isAdmin := func(roleID string) bool { return state.Roles[roleID].DefaultIdentifier == "admin" }

	// Members, service principals included: who is an admin (trusted with
	// everything), and no one else holds a role that may reach the fleet.
	admins := map[string]bool{}
	for _, kind := range []string{"frontend", "backend", "service-principal"} {
		pages("/api/orgs/"+org+"/members", url.Values{"type": {kind}}, func(raw json.RawMessage) (string, error) {
			var members struct {
				Members []struct {
					User    struct{ GithubLogin string }
					FgaRole struct{ ID string }
				}
				ContinuationToken string
			}
			err := json.Unmarshal(raw, &members)
			for _, m := range members.Members {
				switch id := m.FgaRole.ID; {
				case isAdmin(id):
					admins[m.User.GithubLogin] = true
				case !grantsNone(id):
					refuse("member %s (%s): holds role %q (%s), which deploy/ does not know to grant nothing on the fleet (deploy/'s own "+
						"roles are its teams' only); give them Member",
						m.User.GithubLogin, kind, id, state.Roles[id].Name)
				}
			}
			return members.ContinuationToken, err
		})
	}

	// Every stack of the organization, to prove deploy/ sees them all
	// (stackCount "may be more than the requesting user has permission to
	// see"), and the project's: each named, the review template, or a
	// review stack; any other the review identity would reach.
	fleet := map[string]bool{}
	for _, name := range sortedKeys(c.Stacks) {
		fleet[name] = true
	}
	if c.Review != nil {
		fleet[c.Review.Template] = true
	}
	seen := 0
	pages("/api/user/stacks", url.Values{"organization": {c.Organization}}, func(raw json.RawMessage) (string, error) {
		var stacks struct {
			Stacks []struct {
				ID, ProjectName, StackName string
				LastUpdate                 int64
			}
			ContinuationToken string
		}
		err := json.Unmarshal(raw, &stacks)
		for _, s := range stacks.Stacks {
			seen++
			switch {
			case s.ProjectName != c.Project:
			case fleet[s.StackName]:
				state.StackIDs[s.StackName] = s.ID
			case c.Review != nil && strings.HasPrefix(s.StackName, c.Review.Prefix):
				state.ReviewStacks[s.StackName] = s.LastUpdate
			default:
				refuse("stack %s/%s is neither a stack of deploy/'s nor a review stack (%s*), and the review identity reaches every stack of "+
					"the project it does not name: add it to stacks, or move it out of project %s", c.Project, s.StackName, reviewPrefix(c), c.Project)
			}
		}
		return stacks.ContinuationToken, err
	})
	// The review identity's grant reads the pulumi:project tag; a stack of
	// another project that carries it would be reached too.
	pages("/api/user/stacks", url.Values{"organization": {c.Organization}, "tagName": {"pulumi:project"}, "tagValue": {c.Project}},
		func(raw json.RawMessage) (string, error) {
			var stacks struct {
				Stacks            []struct{ ProjectName, StackName string }
				ContinuationToken string
			}
			err := json.Unmarshal(raw, &stacks)
			for _, s := range stacks.Stacks {
				if s.ProjectName != c.Project {
					refuse("stack %s/%s carries the tag pulumi:project=%s, which the review identity's grant reads; remove the tag",
						s.ProjectName, s.StackName, c.Project)
				}
			}
			return stacks.ContinuationToken, err
		})
	if meta.StackCount == nil || seen < *meta.StackCount {
		refuse("organization %s holds %s stacks, and deploy/ sees %d: it must run as an organization admin, so that a stack it does not "+
			"see does not exist", c.Organization, countOf(meta.StackCount), seen)
	}

	// The fleet's stacks, and deploy/'s own, which runs as an admin.
	grantsOn := map[string]string{}
	for _, name := range sortedKeys(state.StackIDs) {
		grantsOn[name] = url.PathEscape(c.Project) + "/" + url.PathEscape(name)
	}
	grantsOn[me.Project+"/"+me.Stack] = url.PathEscape(me.Project) + "/" + url.PathEscape(me.Stack)
	for _, name := range sortedKeys(grantsOn) {
		base := "/api/stacks/" + org + "/" + grantsOn[name]
		var collaborators struct {
			Users []struct {
				User struct{ GithubLogin string }
			}
			StackCreatorUserName string
		}
		if get(base+"/collaborators", &collaborators) {
			for _, u := range collaborators.Users {
				refuse("stack %s: %s holds a permission of their own on it; remove it (the stack's Settings, Access): people reach the "+
					"fleet through deploy/'s roles only", name, u.User.GithubLogin)
			}
			if creator := collaborators.StackCreatorUserName; creator != "" && !admins[creator] {
				refuse("stack %s: %s created it and holds Stack Admin on it as its creator, which writes its settings; remove the "+
					"grant (the stack's Settings, Access)", name, creator)
			}
		}
		var teams struct{ Teams []struct{ Name string } }
		if get(base+"/teams", &teams) {
			for _, t := range teams.Teams {
				refuse("stack %s: team %s holds a permission on it; remove it: teams reach the fleet through deploy/'s roles only", name, t.Name)
			}
		}
	}

	var teamList struct{ Teams []struct{ Name string } }
	if get("/api/orgs/"+org+"/teams", &teamList) {
		for _, t := range teamList.Teams {
			var team struct {
				Members      []struct{ GithubLogin string }
				Stacks       []struct{ ProjectName, StackName string }
				Environments []struct{ ProjectName, EnvName string }
				RoleIDs      []string `json:"roleIds"`
			}
			if !get("/api/orgs/"+org+"/teams/"+url.PathEscape(t.Name), &team) {
				continue
			}
			ours := strings.HasPrefix(t.Name, deployRoleName+c.Project+"-")
			if ours {
				for _, m := range team.Members {
					refuse("team %s: %s is a member, and every run of the stack it deploys runs as that team; remove them", t.Name, m.GithubLogin)
				}
			}
			if ours || t.Name == c.ProductionTeam || t.Name == c.OperatorsTeam {
				// ListTeamTokens: a team token acts with the team's roles.
				pages("/api/orgs/"+org+"/teams/"+url.PathEscape(t.Name)+"/tokens", url.Values{}, func(raw json.RawMessage) (string, error) {
					var tokens struct {
						Tokens            []struct{ Name string }
						ContinuationToken string
					}
					err := json.Unmarshal(raw, &tokens)
					for _, tk := range tokens.Tokens {
						refuse("team %s: its access token %q holds the team's role on the fleet, and outlives anyone's membership; delete it",
							t.Name, tk.Name)
					}
					return tokens.ContinuationToken, err
				})
			}
			for _, s := range team.Stacks {
				if s.ProjectName == c.Project || s.ProjectName == me.Project {
					refuse("team %s: holds a permission on stack %s/%s; remove it: teams reach the fleet through deploy/'s roles only", t.Name, s.ProjectName, s.StackName)
				}
			}
			for _, e := range team.Environments {
				if e.ProjectName == c.Project {
					refuse("team %s: holds a permission on environment %s/%s; the fleet uses no ESC environment, remove it", t.Name, e.ProjectName, e.EnvName)
				}
			}
			for _, id := range team.RoleIDs {
				if want, ours := holder(id); !(grantsNone(id) || (ours && want == t.Name)) {
					refuse("team %s: holds role %q (%s), which deploy/ neither gives that team nor knows to grant nothing on the fleet; remove it",
						t.Name, id, state.Roles[id].Name)
				}
			}
		}
	}

	pages("/api/orgs/"+org+"/tokens", url.Values{"filter": {"all"}}, func(raw json.RawMessage) (string, error) {
		var tokens struct {
			Tokens []struct {
				Name  string
				Admin bool
				Role  *struct{ ID string }
			}
			ContinuationToken string
		}
		err := json.Unmarshal(raw, &tokens)
		for _, t := range tokens.Tokens {
			switch {
			case t.Admin && !slices.Contains(c.AdminTokens, t.Name):
				refuse("organization access token %q is admin, and not one of adminTokens; delete it or narrow it", t.Name)
			case !t.Admin && t.Role != nil && !grantsNone(t.Role.ID) && !isAdmin(t.Role.ID):
				refuse("organization access token %q holds role %q (%s), which deploy/ does not know to grant nothing on the fleet "+
					"(deploy/'s own roles are its teams' only)",
					t.Name, t.Role.ID, state.Roles[t.Role.ID].Name)
			case !t.Admin && t.Role != nil && isAdmin(t.Role.ID) && !slices.Contains(c.AdminTokens, t.Name):
				refuse("organization access token %q holds the Admin role, and is not one of adminTokens; delete it or narrow it", t.Name)
			}
		}
		return tokens.ContinuationToken, err
	})

	var issuers struct {
		OidcIssuers []struct{ ID, Name, URL string }
	}
	if get("/api/orgs/"+org+"/oidc/issuers", &issuers) {
		for _, i := range issuers.OidcIssuers {
			var policy struct {
				Policies []struct {
					Decision, TokenType, TeamName string
					RoleID                        string `json:"roleID"`
					Rules                         map[string]any
				}
			}
			if !get("/api/orgs/"+org+"/auth/policies/oidcissuers/"+url.PathEscape(i.ID), &policy) {
				continue
			}
			for _, p := range policy.Policies {
				if p.Decision != "allow" {
					continue
				}
				sub, _ := p.Rules["sub"].(string)
				if sub == "" || strings.Contains(sub, "*") || strings.Contains(sub, "pull_request") {
					refuse("OIDC issuer %s (%s): a policy gives a %s token to the subject %s, which a pull request's workflow could "+
						"present; admit one branch's subject only", i.Name, i.URL, p.TokenType, mustMarshal(p.Rules["sub"]))
				}
				// AuthPolicyDefinition: a team token acts with the team's
				// role, an organization token with its roleID.
				if strings.HasPrefix(p.TeamName, deployRoleName+c.Project+"-") || (p.TeamName != "" &&
					(p.TeamName == c.ProductionTeam || p.TeamName == c.OperatorsTeam)) {
					refuse("OIDC issuer %s (%s): a policy gives a token of team %s, which holds a role on the fleet", i.Name, i.URL, p.TeamName)
				}
				if p.RoleID != "" && !grantsNone(p.RoleID) {
					refuse("OIDC issuer %s (%s): a policy gives a token with role %q (%s), which may reach the fleet", i.Name, i.URL,
						p.RoleID, state.Roles[p.RoleID].Name)
				}
			}
		}
	}

	var pools struct {
		DefaultAgentPoolID string `json:"defaultAgentPoolID"`
	}
	if err := api.Call(ctx, http.MethodGet, "/api/orgs/"+org+"/agent-pools", nil, &pools); err != nil {
		// Without customer-managed runners there is no default pool to read.
		if feature("selfHostedDeploymentsEnabled") || pulumicloud.StatusOf(err) != http.StatusForbidden {
			refuse("reading the organization's runner pools: %v; deploy/ refuses what it cannot read", err)
		}
	} else if pools.DefaultAgentPoolID != "" {
		levels := map[bool]bool{}
		for _, name := range sortedKeys(c.Stacks) {
			if s := c.Stacks[name]; s.AgentPoolID == "" {
				levels[s.Production] = true
			}
		}
		if c.Review != nil && c.Review.AgentPoolID == "" {
			levels[false] = true
		}
		if len(levels) > 1 {
			refuse("the organization's default runner pool %s would run production and pull-request code alike: give every production "+
				"stack, or every other stack and reviewStacks, an agentPoolId", pools.DefaultAgentPoolID)
		}
	}

	// deploy/'s own stack runs as an admin: a preview of a pull request's
	// deploy/ would run its code as one.
	var own struct {
		Vcs, GitHub struct{ PreviewPullRequests, PullRequestTemplate bool }
	}
	switch err := api.Call(ctx, http.MethodGet, "/api/stacks/"+org+"/"+url.PathEscape(me.Project)+"/"+url.PathEscape(me.Stack)+
		"/deployments/settings", nil, &own); {
	case pulumicloud.StatusOf(err) == http.StatusNotFound:
		warnings = append(warnings, fmt.Sprintf("deploy/'s stack %s has no deployment settings, so its schedule cannot run; set them "+
			"(deploy/README.md, step 5)", me.Stack))
	case err != nil:
		refuse("reading deploy/'s own deployment settings: %v", err)
	case own.Vcs.PreviewPullRequests || own.Vcs.PullRequestTemplate || own.GitHub.PreviewPullRequests || own.GitHub.PullRequestTemplate:
		refuse("deploy/'s stack %s previews pull requests or makes review stacks, which would run a pull request's code as an "+
			"organization admin; turn both off in its settings", me.Stack)
	}

	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("Pulumi Cloud holds grants on the fleet that deploy/ does not declare:\n%w", err)
	}
	return state, warnings, nil
}

func countOf(n *int) string {
	if n == nil {
		return "an unknown number of"
	}
	return fmt.Sprint(*n)
}

func reviewPrefix(c *Config) string {
	if c.Review == nil {
		return "none"
	}
	return c.Review.Prefix
}

// hasAnyProduction reports whether the fleet has a production stack.
func (c *Config) hasAnyProduction() bool {
	for _, s := range c.Stacks {
		if s.Production {
			return true
		}
	}
	return false
}
