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

func findDeploymentSettings(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organization", "project", "stack")
	if err != nil {
		return absent, err
	}
	ok, err := cloudGet(ctx, l, stackPath(in[0], in[1], in[2])+"/deployments/settings", stackPath(in[0], in[1], in[2]), nil)
	if err != nil || !ok {
		return absent, err
	}
	return exists(strings.Join(in, "/"))
}

func findEnvironment(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organization", "project", "name")
	if err != nil {
		return absent, err
	}
	ok, err := cloudGet(ctx, l, "/api/esc/environments/"+esc(in...)+"/metadata", orgPath(in[0]), nil)
	if err != nil || !ok {
		return absent, err
	}
	return exists(strings.Join(in, "/"))
}

// team is what GET /api/orgs/{org}/teams/{team} answers of a team's grants
// (pulumiapi.Team in pulumi-pulumiservice v1.3.0 provider/pkg/pulumiapi/teams.go).
type team struct {
	Stacks []struct {
		ProjectName, StackName string
	}
	Environments []struct {
		ProjectName, EnvName string
	}
}

func getTeam(ctx context.Context, l Lookups, org, name string) (*team, bool, error) {
	var tm team
	ok, err := cloudGet(ctx, l, "/api/orgs/"+esc(org, "teams", name), orgPath(org), &tm)
	return &tm, ok, err
}

func findTeamStackPermission(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organization", "project", "stack", "team")
	if err != nil {
		return absent, err
	}
	tm, ok, err := getTeam(ctx, l, in[0], in[3])
	if err != nil {
		return absent, err
	}
	if !ok {
		return absent, cannotTell("team %s does not exist in %s", in[3], in[0])
	}
	for _, s := range tm.Stacks {
		if s.ProjectName == in[1] && s.StackName == in[2] {
			return exists(strings.Join(in, "/"))
		}
	}
	return absent, nil
}

func findTeamEnvironmentPermission(ctx context.Context, l Lookups, t Target) (Found, error) {
	in, err := need(t, "organization", "team", "project", "environment")
	if err != nil {
		return absent, err
	}
	tm, ok, err := getTeam(ctx, l, in[0], in[1])
	if err != nil {
		return absent, err
	}
	if !ok {
		return absent, cannotTell("team %s does not exist in %s", in[1], in[0])
	}
	for _, e := range tm.Environments {
		if e.ProjectName == in[2] && e.EnvName == in[3] {
			return exists(in[0] + "/" + in[1] + "/" + in[2] + "+" + in[3])
		}
	}
	return absent, nil
}

func findDriftSchedule(ctx context.Context, l Lookups, t Target) (Found, error) {
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
	var ids []string
	for _, s := range list.Schedules {
		if s.Definition.Request.Operation == "detect-drift" {
			ids = append(ids, strings.Join(in, "/")+"/drift/"+s.ID)
		}
	}
	return pick(t, "drift schedules", ids)
}
