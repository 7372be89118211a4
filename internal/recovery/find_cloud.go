package recovery

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"nodeless-eks/internal/pulumicloud"
)

// cloudGet GETs path into out; found is false on a 404 that proves the
// object absent. Pulumi Cloud answers 404 also for what the token may not
// see, and 403 where it has some access (pulumi/pulumi#2645), so a 404
// counts only once parent, the organization or stack that holds the
// object, answers 200 to the same token; else it cannot tell.
func cloudGet(ctx context.Context, l Lookups, path, parent string, out any) (found bool, err error) {
	c, err := l.Cloud()
	if err != nil {
		return false, err
	}
	err = c.Call(ctx, http.MethodGet, path, nil, out)
	if err == nil {
		return true, nil
	}
	if pulumicloud.StatusOf(err) != http.StatusNotFound {
		return false, err
	}
	if err := c.Call(ctx, http.MethodGet, parent, nil, nil); err != nil {
		return false, cannotTell("Pulumi Cloud answers 404 for %s, which it also answers for what the token may not see, "+
			"and %s, which holds it, did not answer either (%v)", path, parent, err)
	}
	return false, nil
}

// orgPath is the organization's path (GetOrganizationMetadata, which
// deploy/ reads too); stackPath a stack's.
func orgPath(org string) string { return "/api/orgs/" + esc(org) + "/metadata" }

func stackPath(org, project, stack string) string { return "/api/stacks/" + esc(org, project, stack) }

// esc escapes path segments.
func esc(parts ...string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = url.PathEscape(p)
	}
	return strings.Join(out, "/")
}

func findCloudStack(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organizationName", "projectName", "stackName")
	if err != nil {
		return absent, err
	}
	ok, err := cloudGet(ctx, l, stackPath(in[0], in[1], in[2]), orgPath(in[0]), nil)
	if err != nil || !ok {
		return absent, err
	}
	return exists(strings.Join(in, "/"))
}

func findTeam(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organizationName", "name")
	if err != nil {
		return absent, err
	}
	_, ok, err := getTeam(ctx, l, in[0], in[1])
	if err != nil || !ok {
		return absent, err
	}
	return exists(strings.Join(in, "/"))
}

// team is what GetTeam answers of a team's roles.
type team struct {
	RoleIDs []string `json:"roleIds"`
}

func getTeam(ctx context.Context, l Lookups, org, name string) (*team, bool, error) {
	var tm team
	ok, err := cloudGet(ctx, l, "/api/orgs/"+esc(org, "teams", name), orgPath(org), &tm)
	return &tm, ok, err
}

// findOrganizationRole finds a role by its name among the organization's
// (ListRolesByOrgIDAndUXPurpose); pulumiservice's ID is "<org>/<role ID>".
func findOrganizationRole(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organizationName", "name")
	if err != nil {
		return absent, err
	}
	var list struct{ Roles []struct{ ID, Name string } }
	ok, err := cloudGet(ctx, l, "/api/orgs/"+esc(in[0])+"/roles?uxPurpose=role", orgPath(in[0]), &list)
	if err != nil || !ok {
		return absent, err
	}
	var ids []string
	for _, r := range list.Roles {
		if r.Name == in[1] {
			ids = append(ids, in[0]+"/"+r.ID)
		}
	}
	return pick(t, "roles named "+in[1], ids)
}

func findTeamRoleAssignment(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organizationName", "teamName", "roleId")
	if err != nil {
		return absent, err
	}
	tm, ok, err := getTeam(ctx, l, in[0], in[1])
	if err != nil {
		return absent, err
	}
	if !ok {
		return absent, nil // no team, no assignment
	}
	for _, id := range tm.RoleIDs {
		if id == in[2] {
			return exists(strings.Join(in, "/"))
		}
	}
	return absent, nil
}

// scheduleFinder finds a stack's schedules of one operation
// (ListScheduledDeployments); pulumiservice's IDs are
// "<org>/<project>/<stack>/<kind>/<ID>", kind "" for a deployment schedule.
func scheduleFinder(operation, kind string) func(context.Context, Lookups, Target) (Found, error) {
	return func(ctx context.Context, l Lookups, t Target) (Found, error) {
		in, err := need(t, "organization", "project", "stack")
		if err != nil {
			return absent, err
		}
		var list struct {
			Schedules []struct {
				ID         string `json:"id"`
				Definition struct {
					Request struct {
						Operation string `json:"operation"`
					} `json:"request"`
				} `json:"definition"`
			} `json:"schedules"`
		}
		ok, err := cloudGet(ctx, l, stackPath(in[0], in[1], in[2])+"/deployments/schedules", stackPath(in[0], in[1], in[2]), &list)
		if err != nil || !ok {
			return absent, err
		}
		prefix := strings.Join(in, "/")
		if kind != "" {
			prefix += "/" + kind
		}
		var ids []string
		for _, s := range list.Schedules {
			if s.Definition.Request.Operation == operation {
				ids = append(ids, prefix+"/"+s.ID)
			}
		}
		return pick(t, operation+" schedules", ids)
	}
}
