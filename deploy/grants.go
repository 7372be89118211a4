package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"nodeless-eks/internal/pulumicloud"
)

// Every source of a grant on a stack that Pulumi Cloud's API exposes, as
// its OpenAPI document (provider/pkg/cloud/spec.json of
// pulumi/pulumi-pulumiservice v1.3.0) and Pulumi's RBAC pages describe
// them: "Effective permissions are the union of the user's organization
// role and all roles assigned to the teams they belong to", and "any
// member who creates a stack is granted admin permissions on that stack".
//
//   - the organization's default stack permission (orgcheck.go);
//   - members' roles (GET /api/orgs/{org}/members: role, fgaRole), the
//     role new members get (metadata defaultRoleId), and teams' roles
//     (GET /api/orgs/{org}/teams/{team}: roleIds): admins reach every
//     stack; a custom role may reach any, by a permission tree deploy/
//     does not evaluate;
//   - teams' grants on a stack (GET /api/stacks/{org}/{project}/{stack}/teams);
//   - users' grants on a stack, the creator's admin grant among them
//     (GET /api/stacks/{org}/{project}/{stack}/collaborators:
//     stackCreatorUserName, users).

// member is an organization member as ListOrganizationMembersResponse
// lists it.
type member struct {
	Role    string `json:"role"`
	FGARole *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"fgaRole"`
	VirtualAdmin bool `json:"virtualAdmin"`
	User         struct {
		Login string `json:"githubLogin"`
	} `json:"user"`
}

// team is a team as GET /api/orgs/{org}/teams/{team} answers it.
type team struct {
	Name    string `json:"name"`
	Members []struct {
		Login string `json:"githubLogin"`
	} `json:"members"`
	RoleIDs []string `json:"roleIds"`
}

// roleRecord is a role as GET /api/orgs/{org}/roles/{id} answers it: a
// built-in role has a defaultIdentifier ("Empty for custom roles").
type roleRecord struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	DefaultIdentifier string `json:"defaultIdentifier"`
}

// stackGrant is a team's or a user's permission on a stack.
type stackGrant struct {
	Name       string
	Permission int
}

// grantCheck reads every grant source for the production stacks (and,
// with importStacks, for every stack it imports) and reports each grant
// that reaches one from outside what deploy/ grants. An error is a source
// it could not read: nothing is proven then.
type grantCheck struct {
	ctx    context.Context
	c      *Config
	client *pulumicloud.Client
	meta   orgMetadata

	admins, productionTeam map[string]bool
}

func (g *grantCheck) run() ([]string, error) {
	members, err := g.members()
	if err != nil {
		return nil, err
	}
	g.admins, g.productionTeam = map[string]bool{}, map[string]bool{}
	for _, m := range members {
		if m.Role == "admin" || m.VirtualAdmin || (m.FGARole != nil && strings.EqualFold(m.FGARole.Name, "admin")) {
			g.admins[m.User.Login] = true
		}
	}
	if g.c.ProductionTeam != "" {
		t, found, err := g.team(g.c.ProductionTeam)
		if err != nil {
			return nil, err
		}
		if !found {
			return []string{fmt.Sprintf("productionTeam %q: organization %s has no such team; create it (Pulumi Cloud, Teams) before "+
				"deploy/ gives it the production stacks", g.c.ProductionTeam, g.c.Organization)}, nil
		}
		for _, m := range t.Members {
			g.productionTeam[m.Login] = true
		}
	}
	var problems []string
	roleProblems, err := g.customRoles(members)
	if err != nil {
		return nil, err
	}
	problems = append(problems, roleProblems...)
	for _, name := range sortedKeys(g.c.Stacks) {
		s := g.c.Stacks[name]
		if !s.Production && !g.c.ImportStacks {
			continue
		}
		p, err := g.stack(name, s.Production)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
	}
	if g.c.ImportStacks && g.c.ReviewStacks {
		p, err := g.stack(g.c.ReviewTemplate, false)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
	}
	return problems, nil
}

// get reads path into out; found is false on 404.
func (g *grantCheck) get(path string, out any) (bool, error) {
	err := g.client.Call(g.ctx, http.MethodGet, path, nil, out)
	if pulumicloud.StatusOf(err) == http.StatusNotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s failed (%v)", path, err)
	}
	return true, nil
}

// members lists the organization's members, page by page.
func (g *grantCheck) members() ([]member, error) {
	var all []member
	seen := map[string]bool{}
	token := ""
	for {
		path := "/api/orgs/" + url.PathEscape(g.c.Organization) + "/members"
		if token != "" {
			path += "?continuationToken=" + url.QueryEscape(token)
		}
		var page struct {
			Members           *[]member `json:"members"`
			ContinuationToken string    `json:"continuationToken"`
		}
		found, err := g.get(path, &page)
		if err != nil {
			return nil, err
		}
		if !found || page.Members == nil {
			// The document requires members: an answer without them
			// proves nothing about who holds a grant.
			return nil, fmt.Errorf("the answer to GET %s lists no members", path)
		}
		all = append(all, *page.Members...)
		if page.ContinuationToken == "" || seen[page.ContinuationToken] {
			return all, nil
		}
		seen[page.ContinuationToken] = true
		token = page.ContinuationToken
	}
}

func (g *grantCheck) team(name string) (team, bool, error) {
	var t team
	found, err := g.get("/api/orgs/"+url.PathEscape(g.c.Organization)+"/teams/"+url.PathEscape(name), &t)
	return t, found, err
}

// customRoles refuses every custom role held outside the production team
// that no admin has listed in reviewedCustomRoles: the role new members
// get, a member's, or a team's. A role's permission tree (conditions,
// composed permission sets) may reach any stack, and deploy/ does not
// evaluate it. An organization without custom roles (features) holds only
// built-in ones, whose stack access is the default permission.
func (g *grantCheck) customRoles(members []member) ([]string, error) {
	if g.meta.Features == nil || !g.meta.Features.CustomRoles {
		return nil, nil
	}
	holders := map[string][]string{} // role ID -> who holds it
	if g.meta.DefaultRoleID != "" {
		holders[g.meta.DefaultRoleID] = append(holders[g.meta.DefaultRoleID], "every new member (the organization's default role)")
	}
	for _, m := range members {
		if m.FGARole != nil && m.FGARole.ID != "" && !g.admins[m.User.Login] && !g.productionTeam[m.User.Login] {
			holders[m.FGARole.ID] = append(holders[m.FGARole.ID], "member "+m.User.Login)
		}
	}
	var teams struct {
		Teams *[]struct {
			Name string `json:"name"`
		} `json:"teams"`
	}
	path := "/api/orgs/" + url.PathEscape(g.c.Organization) + "/teams"
	if found, err := g.get(path, &teams); err != nil {
		return nil, err
	} else if !found || teams.Teams == nil {
		return nil, fmt.Errorf("the answer to GET %s lists no teams", path)
	}
	for _, t := range *teams.Teams {
		if t.Name == g.c.ProductionTeam {
			continue
		}
		tm, found, err := g.team(t.Name)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("team %s, listed by GET %s, answers 404", t.Name, path)
		}
		for _, id := range tm.RoleIDs {
			holders[id] = append(holders[id], "team "+t.Name)
		}
	}
	var problems []string
	for _, id := range sortedKeys(holders) {
		var r roleRecord
		rolePath := "/api/orgs/" + url.PathEscape(g.c.Organization) + "/roles/" + url.PathEscape(id)
		found, err := g.get(rolePath, &r)
		if err != nil {
			return nil, err
		}
		if !found || r.ID == "" {
			return nil, fmt.Errorf("role %s, which %s holds, answers no role to GET %s", id, strings.Join(holders[id], ", "), rolePath)
		}
		if r.DefaultIdentifier != "" || slices.Contains(g.c.ReviewedCustomRoles, r.Name) {
			continue // built in, or reviewed
		}
		problems = append(problems, fmt.Sprintf("custom role %q (%s) is held by %s outside productionTeam, and a custom role may grant any "+
			"stack, production's included, by a permission tree deploy/ does not evaluate: review it (Pulumi Cloud, Settings, Roles) and, "+
			"if it reaches no production stack, list it in reviewedCustomRoles; otherwise take it from them",
			r.Name, r.ID, strings.Join(holders[id], ", ")))
	}
	return problems, nil
}

// stack refuses, for one stack, every team grant and user grant deploy/
// does not make: on a production stack, any team but the production team
// and any user but an organization admin or a production team member (the
// creator's admin grant included); on a stack deploy/ imports, any team
// but the one it grants, and any user grant but an admin's. A stack that
// does not exist yet (404) has no grant.
func (g *grantCheck) stack(name string, production bool) ([]string, error) {
	base := "/api/stacks/" + url.PathEscape(g.c.Organization) + "/" + url.PathEscape(g.c.Project) + "/" + url.PathEscape(name)
	var teams struct {
		Teams *[]struct {
			Name       string `json:"name"`
			Permission int    `json:"permission"`
		} `json:"teams"`
	}
	// Whether the stack exists is asked of the stack itself: a 404 from
	// /teams alone would skip its collaborators (the creator's grant).
	var stack struct {
		OrgName string `json:"orgName"`
	}
	if found, err := g.get(base, &stack); err != nil || !found {
		return nil, err
	}
	found, err := g.get(base+"/teams", &teams)
	if err != nil {
		return nil, err
	}
	if !found || teams.Teams == nil {
		return nil, fmt.Errorf("the answer to GET %s/teams lists no teams", base)
	}
	var collaborators struct {
		Creator string `json:"stackCreatorUserName"`
		Users   *[]struct {
			User struct {
				Login string `json:"githubLogin"`
			} `json:"user"`
			Permission int `json:"permission"`
		} `json:"users"`
	}
	if found, err := g.get(base+"/collaborators", &collaborators); err != nil {
		return nil, err
	} else if !found || collaborators.Users == nil {
		return nil, fmt.Errorf("the answer to GET %s/collaborators lists no users", base)
	}
	kind := "production stack"
	if !production {
		kind = "imported stack"
	}
	expectedTeam := g.c.NonProductionTeam
	if production {
		expectedTeam = g.c.ProductionTeam
	}
	var problems []string
	for _, t := range *teams.Teams {
		if t.Permission == 0 || t.Name == expectedTeam {
			continue
		}
		problems = append(problems, fmt.Sprintf("stacks.%s: team %s has %s on %s %s; take it away (the stack's Settings, Access, or "+
			"PATCH %s/api/console/stacks/%s/%s/%s/teams/%s with {\"permissions\": null})", name, t.Name, permissionName(t.Permission),
			kind, name, strings.TrimSuffix(g.client.API, "/"), g.c.Organization, g.c.Project, name, t.Name))
	}
	allowed := func(login string) bool { return g.admins[login] || (production && g.productionTeam[login]) }
	if c := collaborators.Creator; c != "" && !allowed(c) {
		problems = append(problems, fmt.Sprintf("stacks.%s: %s created %s %s and keeps its creator's admin grant; remove the grant (the "+
			"stack's Settings, Access), or have an organization admin import it", name, c, kind, name))
	}
	for _, u := range *collaborators.Users {
		if u.Permission == 0 || (allowed(u.User.Login) && production) {
			continue
		}
		if !production && g.admins[u.User.Login] {
			continue
		}
		problems = append(problems, fmt.Sprintf("stacks.%s: user %s has %s on %s %s; take it away (the stack's Settings, Access, or "+
			"DELETE %s%s/collaborators/%s)", name, u.User.Login, permissionName(u.Permission), kind, name,
			strings.TrimSuffix(g.client.API, "/"), base, u.User.Login))
	}
	return problems, nil
}

// permissionName is a stack permission as Pulumi Cloud names it.
func permissionName(p int) string {
	if n, ok := stackPermissionNames[p]; ok {
		return n
	}
	return fmt.Sprintf("permission %d", p)
}
