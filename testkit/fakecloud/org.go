package fakecloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// Organization is an organization as the REST API answers deploy/'s reads
// and takes its writes. Every path and field is the API's as its generated
// client has it (github.com/pulumi/pulumi-cloud-sdk/go v1.20261118.1124,
// apiclient and apitype; the operation names below are its). Serve it
// with API.Serve.
type Organization struct {
	// Name is the organization; Login the user the token is for
	// (GetCurrentUser).
	Name, Login string
	// Metadata is GetOrganizationMetadata's answer, as JSON keys: tests
	// change or delete one to see the check refuse.
	Metadata map[string]any
	// Roles are ListRolesByOrgIDAndUXPurpose's records.
	Roles []Role
	// Members are ListOrganizationMembers' members of each type.
	Members []Member
	// Teams are the teams by name (ListTeams, GetTeam).
	Teams map[string]*Team
	// Stacks are the stacks by "project/stack" (ListUserStacks, GetStack,
	// ListStackPermissions, ListStackTeams, the deployment settings).
	Stacks map[string]*Stack
	// Tokens are ListOrgTokens' organization access tokens.
	Tokens []Token
	// Issuers are the OIDC issuers, with their auth policies.
	Issuers []Issuer
	// DefaultAgentPool is ListOrgAgentPool's defaultAgentPoolID ("" omits
	// it: the Pulumi Hosted Pool); NoAgentPools answers 403 instead, a
	// refusal deploy/ must not take for "no pool".
	DefaultAgentPool string
	NoAgentPools     bool
	// PageSize cuts every paged listing into pages of this many (0: one
	// page), so that a reader that ignores continuationToken misses some.
	PageSize int
}

// Role is a PermissionDescriptorRecord: built-in roles carry a
// defaultIdentifier (member, admin, billing-manager, reader, builder,
// maintainer), custom ones none.
type Role struct{ ID, Name, DefaultIdentifier string }

// Member is an OrganizationMember: its login, the list it is in
// (OrganizationMemberKind: frontend, backend or service-principal) and
// its fgaRole's ID.
type Member struct{ Login, Kind, RoleID string }

// Team is a Team: its members' logins, its grants on stacks and
// environments ("project/name"), its roleIds, the names of its access
// tokens (ListTeamTokens), and whether it is the organization's Everyone
// team ("every admin and member of the organization is in it", apitype).
type Team struct {
	Members, Stacks, Environments, RoleIDs, Tokens []string
	Everyone                                       bool
}

// Stack is a stack: its ID (AppStack.id), last update (Unix seconds, 0
// for none), the users who hold a permission of their own on it, its
// creator (stackCreatorUserName), the teams that hold one, and its
// deployment settings as GetDeploymentSettings answers them (nil: none).
type Stack struct {
	ID string
	// Tags are its tags besides pulumi:project, which is its project's
	// name unless Tags sets it.
	Tags       map[string]string
	LastUpdate int64
	Users      []string
	Creator    string
	Teams      []string
	Settings   map[string]any
	// Writes are the settings bodies PUT took, "PUT <json>" in order.
	Writes []string
}

// tags are a stack's tags: pulumi:project, which the CLI sets from
// Pulumi.yaml, and Tags.
func (s *Stack) tags(project string) map[string]string {
	out := map[string]string{"pulumi:project": project}
	for k, v := range s.Tags {
		out[k] = v
	}
	return out
}

// Token is an organization access token: admin, or holding a role.
type Token struct {
	Name   string
	Admin  bool
	RoleID string
}

// Issuer is an OIDC issuer and its auth policy's definitions.
type Issuer struct {
	ID, Name, URL string
	Policies      []map[string]any
}

// Serve makes the fake answer as o, beside what Put and the schedules
// answer.
func (a *API) Serve(o *Organization) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.orgs = append(a.orgs, o)
}

// serveOrg answers a request of an organization it serves; ok is false
// for any other.
func (a *API) serveOrg(w http.ResponseWriter, r *http.Request) (ok bool) {
	for _, o := range a.orgs {
		if o.handle(w, r) {
			return true
		}
	}
	return false
}

func (o *Organization) handle(w http.ResponseWriter, r *http.Request) bool {
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
	}
	path, q := r.URL.Path, r.URL.Query()
	orgBase, stackBase := "/api/orgs/"+o.Name+"/", "/api/stacks/"+o.Name+"/"
	get := r.Method == http.MethodGet
	switch rest := strings.TrimPrefix(path, orgBase); {
	case get && path == "/api/user":
		reply(map[string]any{"githubLogin": o.Login, "name": o.Login, "avatarUrl": ""})
	case get && path == "/api/user/stacks" && q.Get("organization") == o.Name:
		var all []any
		for _, key := range slices.Sorted(maps.Keys(o.Stacks)) {
			project, name, _ := strings.Cut(key, "/")
			if p := q.Get("project"); p != "" && p != project {
				continue
			}
			if tag := q.Get("tagName"); tag != "" && o.Stacks[key].tags(project)[tag] != q.Get("tagValue") {
				continue
			}
			s := map[string]any{"id": o.Stacks[key].ID, "orgName": o.Name, "projectName": project, "stackName": name}
			if o.Stacks[key].LastUpdate != 0 {
				s["lastUpdate"] = o.Stacks[key].LastUpdate
			}
			all = append(all, s)
		}
		o.page(w, q, "stacks", all)
	case !strings.HasPrefix(path, orgBase) && !strings.HasPrefix(path, stackBase):
		return false
	case get && rest == "metadata":
		reply(o.Metadata)
	case get && rest == "roles" && q.Get("uxPurpose") == "role":
		var roles []any
		for _, role := range o.Roles {
			roles = append(roles, map[string]any{"id": role.ID, "name": role.Name, "defaultIdentifier": role.DefaultIdentifier,
				"orgId": o.Name, "version": 1, "isOrgDefault": false})
		}
		reply(map[string]any{"roles": roles})
	case get && rest == "members":
		var members []any
		for _, m := range o.Members {
			if m.Kind == q.Get("type") {
				members = append(members, map[string]any{"role": "member", "user": map[string]any{"githubLogin": m.Login, "name": m.Login},
					"fgaRole": map[string]any{"id": m.RoleID, "name": o.roleName(m.RoleID)}})
			}
		}
		o.page(w, q, "members", members)
	case get && rest == "teams":
		var teams []any
		for _, name := range slices.Sorted(maps.Keys(o.Teams)) {
			teams = append(teams, map[string]any{"name": name, "displayName": name, "kind": "pulumi"})
		}
		reply(map[string]any{"teams": teams})
	case get && strings.HasPrefix(rest, "teams/") && strings.HasSuffix(rest, "/tokens"):
		t, found := o.Teams[strings.TrimSuffix(strings.TrimPrefix(rest, "teams/"), "/tokens")]
		if !found {
			fail(http.StatusNotFound, "Team not found")
			break
		}
		var tokens []any
		for _, name := range t.Tokens {
			tokens = append(tokens, map[string]any{"id": name, "name": name, "type": "team"})
		}
		o.page(w, q, "tokens", tokens)
	case get && strings.HasPrefix(rest, "teams/"):
		t, found := o.Teams[strings.TrimPrefix(rest, "teams/")]
		if !found {
			fail(http.StatusNotFound, "Team not found")
			break
		}
		team := map[string]any{"name": strings.TrimPrefix(rest, "teams/"), "kind": "pulumi", "roleIds": t.RoleIDs, "everyone": t.Everyone}
		var members, stacks, envs []any
		for _, m := range t.Members {
			members = append(members, map[string]any{"githubLogin": m, "name": m, "role": "member"})
		}
		for _, s := range t.Stacks {
			p, n, _ := strings.Cut(s, "/")
			stacks = append(stacks, map[string]any{"projectName": p, "stackName": n, "permission": 102})
		}
		for _, e := range t.Environments {
			p, n, _ := strings.Cut(e, "/")
			envs = append(envs, map[string]any{"projectName": p, "envName": n, "permission": "open"})
		}
		team["members"], team["stacks"], team["environments"] = members, stacks, envs
		reply(team)
	case get && rest == "tokens":
		var tokens []any
		for _, t := range o.Tokens {
			token := map[string]any{"id": t.Name, "name": t.Name, "admin": t.Admin, "type": "organization"}
			if t.RoleID != "" {
				token["role"] = map[string]any{"id": t.RoleID, "name": o.roleName(t.RoleID)}
			}
			tokens = append(tokens, token)
		}
		o.page(w, q, "tokens", tokens)
	case get && rest == "oidc/issuers":
		var issuers []any
		for _, i := range o.Issuers {
			issuers = append(issuers, map[string]any{"id": i.ID, "name": i.Name, "url": i.URL, "issuer": i.URL})
		}
		reply(map[string]any{"oidcIssuers": issuers})
	case get && strings.HasPrefix(rest, "auth/policies/oidcissuers/"):
		for _, i := range o.Issuers {
			if i.ID == strings.TrimPrefix(rest, "auth/policies/oidcissuers/") {
				reply(map[string]any{"id": "policy-" + i.ID, "version": 1, "policies": i.Policies})
				return true
			}
		}
		fail(http.StatusNotFound, "OIDC issuer not found")
	case get && rest == "agent-pools":
		if o.NoAgentPools {
			fail(http.StatusForbidden, "Forbidden")
			break
		}
		pools := map[string]any{"agentPools": []any{}}
		if o.DefaultAgentPool != "" {
			pools["defaultAgentPoolID"] = o.DefaultAgentPool
		}
		reply(pools)
	case strings.HasPrefix(path, stackBase):
		o.handleStack(w, r, strings.TrimPrefix(path, stackBase), reply, fail)
	default:
		fail(http.StatusNotFound, "no such endpoint")
	}
	return true
}

// handleStack answers GetStack, ListStackPermissions, ListStackTeams and
// the deployment settings of "project/stack[/...]".
func (o *Organization) handleStack(w http.ResponseWriter, r *http.Request, rest string, reply func(any), fail func(int, string)) {
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		fail(http.StatusNotFound, "no such endpoint")
		return
	}
	key, sub := parts[0]+"/"+parts[1], ""
	if len(parts) == 3 {
		sub = parts[2]
	}
	s, found := o.Stacks[key]
	if !found {
		fail(http.StatusNotFound, "Stack not found")
		return
	}
	switch {
	case r.Method == http.MethodGet && sub == "":
		reply(map[string]any{"id": s.ID, "orgName": o.Name, "projectName": parts[0], "stackName": parts[1],
			"tags": s.tags(parts[0]), "version": 1})
	case r.Method == http.MethodGet && sub == "collaborators":
		var users []any
		for _, u := range s.Users {
			users = append(users, map[string]any{"user": map[string]any{"githubLogin": u, "name": u}, "permission": 103})
		}
		answer := map[string]any{"users": users}
		if s.Creator != "" {
			answer["stackCreatorUserName"] = s.Creator
		}
		reply(answer)
	case r.Method == http.MethodGet && sub == "teams":
		var teams []any
		for _, t := range s.Teams {
			teams = append(teams, map[string]any{"name": t, "displayName": t, "permission": 102, "isMember": false})
		}
		reply(map[string]any{"projectName": parts[0], "teams": teams})
	case sub == "deployments/settings":
		o.handleSettings(w, r, s, reply, fail)
	default:
		fail(http.StatusNotFound, "no such endpoint")
	}
}

// handleSettings answers GetDeploymentSettings (404 when the stack has
// none) and ReplaceDeploymentSettings (PUT: the body becomes the
// settings; deploy/ writes no other way). A body is refused with 400
// when it is not a DeploymentSettingsRequest (decoding it with the SDK's
// type fails), when it carries a field that type does not have, when it
// selects both a service principal and a role, or a service principal
// both by userId and teamName (both "Mutually exclusive", the SDK's
// OperationContextRequest and DeploymentServicePrincipalRequest), or a
// team the organization does not have. GET answers the stored settings in
// DeploymentSettings' shape: a selected team as servicePrincipal.team
// (AssignmentPrincipal), and the settings' version.
func (o *Organization) handleSettings(w http.ResponseWriter, r *http.Request, s *Stack, reply func(any), fail func(int, string)) {
	switch r.Method {
	case http.MethodGet:
		if s.Settings == nil {
			fail(http.StatusNotFound, "No deployment settings found for this stack")
			return
		}
		reply(asResponse(s.Settings, len(s.Writes)))
	case http.MethodPut:
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		settings, err := o.validSettings(body.Bytes())
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		s.Writes = append(s.Writes, r.Method+" "+body.String())
		s.Settings = settings
		reply(asResponse(s.Settings, len(s.Writes)))
	default:
		fail(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// validSettings decodes a settings body as the REST API's schema has it.
func (o *Organization) validSettings(raw []byte) (map[string]any, error) {
	var typed apitype.DeploymentSettingsRequest
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, fmt.Errorf("the body is not a DeploymentSettingsRequest: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, err
	}
	round, err := json.Marshal(typed)
	if err != nil {
		return nil, err
	}
	var known map[string]any
	_ = json.Unmarshal(round, &known)
	if unknown := unknownFields("", body, known); len(unknown) > 0 {
		return nil, fmt.Errorf("DeploymentSettingsRequest has no field %s", strings.Join(unknown, ", "))
	}
	oc, _ := body["operationContext"].(map[string]any)
	sp, _ := oc["servicePrincipal"].(map[string]any)
	switch {
	case oc["role"] != nil && sp != nil:
		return nil, fmt.Errorf("operationContext.servicePrincipal is mutually exclusive with role")
	case sp["userId"] != nil && sp["teamName"] != nil:
		return nil, fmt.Errorf("servicePrincipal.userId is mutually exclusive with teamName")
	case sp["teamName"] != nil && o.Teams[fmt.Sprint(sp["teamName"])] == nil:
		return nil, fmt.Errorf("team %v not found", sp["teamName"])
	}
	return body, nil
}

// unknownFields are the fields of body that the typed round trip lost and
// that carry a value: a false, empty or zero field the SDK's encoder
// leaves out (omitzero, omitempty) is taken as known.
func unknownFields(path string, body, known map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(body)) {
		v := body[k]
		at := strings.TrimPrefix(path+"."+k, ".")
		kv, ok := known[k]
		switch {
		case !ok && !zero(v):
			out = append(out, at)
		case ok:
			if bm, isMap := v.(map[string]any); isMap {
				km, _ := kv.(map[string]any)
				if at != "operationContext.environmentVariables" { // keyed by variable name
					out = append(out, unknownFields(at, bm, km)...)
				}
			}
		}
	}
	return out
}

func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// asResponse is stored settings in GetDeploymentSettings' shape.
func asResponse(settings map[string]any, version int) map[string]any {
	raw, _ := json.Marshal(settings)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	out["version"] = version
	if oc, ok := out["operationContext"].(map[string]any); ok {
		if sp, ok := oc["servicePrincipal"].(map[string]any); ok {
			if team, ok := sp["teamName"]; ok {
				oc["servicePrincipal"] = map[string]any{"team": map[string]any{"name": team, "displayName": team}}
			} else {
				oc["servicePrincipal"] = map[string]any{"user": map[string]any{"githubLogin": sp["userId"], "name": sp["userId"]}}
			}
		}
	}
	return out
}

func (o *Organization) roleName(id string) string {
	for _, r := range o.Roles {
		if r.ID == id {
			return r.Name
		}
	}
	return ""
}

// page answers one page of a listing under key, and the continuationToken
// of the next ("nil means that all ... have been returned").
func (o *Organization) page(w http.ResponseWriter, q url.Values, key string, all []any) {
	start, _ := strconv.Atoi(q.Get("continuationToken"))
	end := len(all)
	if o.PageSize > 0 && start+o.PageSize < end {
		end = start + o.PageSize
	}
	answer := map[string]any{key: all[min(start, len(all)):end]}
	if end < len(all) {
		answer["continuationToken"] = strconv.Itoa(end)
	}
	_ = json.NewEncoder(w).Encode(answer)
}
