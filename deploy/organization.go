package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// What deploy/ rests on and cannot declare it reads here, before it
// declares; a failed precondition is a finding, which fails the run after
// the restore of what deploy/ declares, never before. Grants only an
// admin can make (members, roles, collaborators, tokens, other teams and
// projects) are not read: THREATS.md trusts admins. Answers decode into
// pulumi-cloud-sdk/go v1.20261118.1124's apitype.

// census is what deploy/ learned of the organization's stacks.
type census struct {
	StackIDs map[string]string // the fleet's stacks that exist, by name
	// ReviewStacks are the review stacks, with their last update (Unix
	// seconds, 0 before the first); nil when the listing was not read.
	ReviewStacks map[string]int64
	Excluded     map[string]bool // teams that get no role: Everyone's, or unread
}

// get reads path into out; each of need, a field ("a.b" in an object),
// must be in the answer: a field a decision rests on fails closed when
// absent, and fields deploy/ does not know are tolerated.
func get(ctx context.Context, api *cloudAPI, path string, out any, need ...string) error {
	var fields map[string]json.RawMessage
	err := api.call(ctx, http.MethodGet, path, nil, &fields)
	if err == nil && fields == nil {
		err = errors.New("the answer is empty; deploy/ refuses what it cannot read")
	}
	for _, f := range need {
		if !has(fields, f) && err == nil {
			err = fmt.Errorf("the answer has no %s, which deploy/ decides on; it refuses what it cannot read", f)
		}
	}
	if err == nil {
		raw, _ := json.Marshal(fields)
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// has reports whether an answer holds the field "a.b...".
func has(fields map[string]json.RawMessage, path string) bool {
	first, rest, nested := strings.Cut(path, ".")
	raw, ok := fields[first]
	if !ok || !nested {
		return ok
	}
	var inner map[string]json.RawMessage
	return json.Unmarshal(raw, &inner) == nil && has(inner, rest)
}

// readOrganization reads what the declared state rests on: the
// organization's settings, the project's stacks, the runner pools, the
// OIDC token exchange and the teams config names.
func readOrganization(ctx context.Context, c *Config, api *cloudAPI) (*census, []error) {
	var findings []error
	find := func(format string, a ...any) { findings = append(findings, fmt.Errorf(format, a...)) }
	org := url.PathEscape(c.Organization)
	state := &census{StackIDs: map[string]string{}, Excluded: map[string]bool{}}

	var meta apitype.OrganizationMetadata
	if err := get(ctx, api, "/api/orgs/"+org+"/metadata", &meta, "defaultStackPermission", "defaultEnvironmentPermission",
		"membersCanCreateStacks", "membersCanTransferStacks", "stackCount", "features.selfHostedDeploymentsEnabled"); err != nil {
		find("%w", err)
	} else {
		// In the restricted mode a deployment of a stack whose settings
		// select no identity is refused, schedules included (Pulumi's
		// permission modes page); absent means permissive (apitype).
		if meta.PermissionMode == nil || *meta.PermissionMode != apitype.OrganizationPermissionModeRestricted {
			find("organization %s is not in the restricted permission mode, so a stack whose settings lose their identity runs as "+
				"whoever starts it: set it (deploy/README.md, step 2)", c.Organization)
		}
		if meta.DefaultStackPermission != apitype.StackPermissionNone || meta.DefaultEnvironmentPermission != apitype.EnvironmentPermissionNone {
			find("organization %s: the default stack and environment permissions must be none (they are %d and %q), or every member "+
				"reads production's state and secrets (deploy/README.md, step 2)", c.Organization, meta.DefaultStackPermission,
				meta.DefaultEnvironmentPermission)
		}
		// A stack made or moved into the project is one the review identity reaches.
		if meta.MembersCanCreateStacks || meta.MembersCanTransferStacks {
			find("organization %s: members can create or transfer stacks, and such a stack in project %s is reached by the review "+
				"identity; turn both off (deploy/README.md, step 2)", c.Organization, c.Project)
		}
	}

	// The census: an admin sees every stack (stackCount "may be more than
	// the requesting user has permission to see"); in the project, only the
	// fleet's and review stacks.
	reviews, seen, tokens, read := map[string]int64{}, 0, map[string]bool{"": true}, true
	for token := ""; ; {
		q := url.Values{"organization": {c.Organization}}
		if token != "" {
			q.Set("continuationToken", token)
		}
		var page apitype.AppListStacksResponse
		if err := get(ctx, api, "/api/user/stacks?"+q.Encode(), &page, "stacks"); err != nil {
			find("%w", err)
			read = false
			break
		}
		for _, s := range page.Stacks {
			seen++
			switch {
			case s.ProjectName != c.Project:
			case c.isFleet(s.StackName):
				state.StackIDs[s.StackName] = s.ID
			case c.Review != nil && strings.HasPrefix(s.StackName, c.Review.Prefix):
				reviews[s.StackName] = ptrOr(s.LastUpdate)
			default:
				find("stack %s/%s is neither one of stacks nor a review stack (%s*), and the review identity reaches every stack of the "+
					"project it does not name: add it to stacks, or move it out of project %s", c.Project, s.StackName, reviewPrefix(c), c.Project)
			}
		}
		if token = ptrOr(page.ContinuationToken); token == "" {
			break
		}
		if tokens[token] || len(tokens) > 10000 { // a token answered twice, or without end, would loop for ever
			find("reading the organization's stacks: the continuation token %q came back twice, or after 10,000 pages", token)
			read = false
			break
		}
		tokens[token] = true
	}
	if read {
		state.ReviewStacks = reviews
		if meta.StackCount > seen {
			find("organization %s holds %d stacks, and deploy/ sees %d: run it as an organization admin", c.Organization, meta.StackCount, seen)
		}
	}

	// The hosted pool isolates each run; a customer-managed pool is a host
	// its jobs share, and any deployment request may name one
	// (CreateDeploymentRequest's agentPoolID). A stack that names no pool
	// runs on the organization's default pool when it has one (Pulumi's
	// runner pools page), so production and deploy/ would share a host.
	// An organization without self-hosted agents ("whether self-hosted
	// deployment agents are enabled", OrganizationFeatures) has no such pool.
	if meta.Features.SelfHostedDeploymentsEnabled {
		var pools apitype.ListAgentPoolsResponse
		switch err := get(ctx, api, "/api/orgs/"+org+"/agent-pools", &pools); {
		case err != nil:
			find("%w", err)
		case ptrOr(pools.DefaultAgentPoolID) != "":
			find("the organization's default runner pool %s would run deploy/ and the production stacks on a host that other runs "+
				"share; make Pulumi's hosted pool the default (Settings, Deployments, Runner pools)", *pools.DefaultAgentPoolID)
		}
	}

	// OIDC token exchange, as an allow-list: every policy that is not a
	// deny is judged (AuthPolicyDefinition, apitype).
	var issuers apitype.ListOidcIssuersResponse
	if err := get(ctx, api, "/api/orgs/"+org+"/oidc/issuers", &issuers, "oidcIssuers"); err != nil {
		find("%w", err)
	}
	for _, i := range issuers.OidcIssuers {
		var policy apitype.AuthPolicy
		if err := get(ctx, api, "/api/orgs/"+org+"/auth/policies/oidcissuers/"+url.PathEscape(i.ID), &policy, "policies"); err != nil {
			find("%w", err)
			continue
		}
		for _, p := range policy.Definition {
			if why := judgeExchange(p); why != "" {
				find("OIDC issuer %s (%s): a policy gives %s; remove or narrow it", i.Name, i.URL, why)
			}
		}
	}

	// The Everyone team holds every member: its role would be everyone's.
	for _, kv := range [][2]string{{"productionTeam", c.ProductionTeam}, {"operatorsTeam", c.OperatorsTeam}} {
		key, name := kv[0], kv[1]
		if name == "" {
			continue
		}
		var team apitype.Team
		switch err := get(ctx, api, "/api/orgs/"+org+"/teams/"+url.PathEscape(name), &team, "name"); {
		case err != nil:
			state.Excluded[name] = true
			find("%s %q: %w; it gets no role until it can be read", key, name, err)
		case team.Everyone:
			state.Excluded[name] = true
			find("%s %q is the organization's Everyone team, and its role would be every member's; name a team of its own", key, name)
		}
	}
	return state, findings
}

// branchSubject is the only subject an OIDC policy may admit: one branch
// of one GitHub repository, with no wildcard.
var branchSubject = regexp.MustCompile(`^repo:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+:ref:refs/heads/[^*?]+$`)

// judgeExchange says what is wrong with a policy, or "": only team and
// organization tokens without admin, to one branch's subject. tokenType is
// "organization, team, personal, or runner", and authorizedPermissions
// holds "admin" for an admin organization token (the REST API's
// UpdateAuthPolicy); apitype spells the first 'org'.
func judgeExchange(p *apitype.AuthPolicyDefinition) string {
	if p == nil || p.Decision == "deny" {
		return ""
	}
	sub, _ := p.Rules["sub"].(string)
	switch {
	case p.TokenType != "organization" && p.TokenType != "org" && p.TokenType != "team":
		return fmt.Sprintf("a %q token, which acts as a person or a runner", p.TokenType)
	case p.TokenType != "team" && (p.AuthorizedPermissions == nil || slices.Contains(p.AuthorizedPermissions, "admin")):
		return fmt.Sprintf("an organization token with the permissions %q (none stated, or admin)", p.AuthorizedPermissions)
	case !branchSubject.MatchString(sub):
		return fmt.Sprintf("a %s token to the subject %s, which is not one branch's (repo:<owner>/<repo>:ref:refs/heads/<branch>)",
			p.TokenType, mustMarshal(p.Rules["sub"]))
	}
	return ""
}

// ptrOr is *p, or the zero value when p is nil.
func ptrOr[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

func reviewPrefix(c *Config) string {
	if c.Review == nil {
		return "none"
	}
	return c.Review.Prefix
}
