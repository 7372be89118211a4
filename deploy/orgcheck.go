package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"nodeless-eks/internal/pulumicloud"
)

// orgMetadata is what Pulumi Cloud says of the organization
// (GET /api/orgs/{org}/metadata, GetOrganizationMetadata in the REST API's
// OpenAPI document, provider/pkg/cloud/spec.json of
// pulumi/pulumi-pulumiservice): its default permission on stacks (0 none,
// 101 read, 102 write, 103 admin, 104 creator) and on ESC environments
// (none, read, open, write, admin), and its product. The two defaults are
// pointers: the document requires them, and an answer without one (an
// empty body, null, {}) proves nothing, where a 0 read from it would say
// None.
type orgMetadata struct {
	DefaultStackPermission       *int    `json:"defaultStackPermission"`
	DefaultEnvironmentPermission *string `json:"defaultEnvironmentPermission"`
	// DefaultDeploymentRoleID is "used for deployments when no specific
	// role is configured in the stack's deployment settings" (the same
	// document's OrganizationMetadata): every deployment deploy/ sets up.
	// The document does not require it: absent, it is unset.
	DefaultDeploymentRoleID string `json:"defaultDeploymentRoleId"`
	// DefaultRoleID is "the ID of the default role for new users added to
	// the organization. If unset, defaults to the \"Member\" role."
	DefaultRoleID string `json:"defaultRoleId"`
	// Features are the organization's paid features, which its edition
	// decides; the document requires them.
	Features *orgFeatures `json:"features"`
}

// orgFeatures are the features of OrganizationFeatures that a switch of
// deploy/ uses. The metadata's product is not read: its values are the
// older editions' SKUs (team-pro, business-critical, ...), not the four
// current editions, so only the features say what the organization has.
type orgFeatures struct {
	DriftDetection   bool `json:"driftDetectionEnabled"`
	DriftRemediation bool `json:"driftRemediationEnabled"`
	Teams            bool `json:"teamsEnabled"`
	CustomRoles      bool `json:"customRolesEnabled"`
	SelfHosted       bool `json:"selfHostedDeploymentsEnabled"`
}

var stackPermissionNames = map[int]string{0: "None", 101: "Read", 102: "Write", 103: "Admin", 104: "Creator"}

// orgSettingHowTo says how an administrator changes a default: in the
// organization's access settings in Pulumi Cloud, or through the API the
// check read, which may be a self-hosted one (UpdateOrganizationRequest:
// setDefaultStackPermission, setDefaultEnvironmentPermission).
func orgSettingHowTo(api, org, body string) string {
	return fmt.Sprintf("an organization admin sets it in Pulumi Cloud (the organization's Settings, Access Management), or with "+
		"`curl -X PATCH -H \"Authorization: token $PULUMI_ACCESS_TOKEN\" -H 'Content-Type: application/json' -d '%s' %s/api/orgs/%s`",
		body, strings.TrimSuffix(api, "/"), url.PathEscape(org))
}

// checkOrganization holds the organization to what production's isolation
// needs of the settings this program cannot set: when the fleet holds
// production stacks and runs that are not production's, the default stack
// permission must be None (a pull-request, review or non-production run's
// stack token may otherwise read production's state and decrypt its
// secrets: Pulumi's "Deployment Permissions" page) and there may be no
// default deployment role; when an environment logs in as a role that
// someone holding the default should not have, the default environment
// permission must be none (a token could otherwise open it, and so assume
// that role). Only an answer of Pulumi Cloud that holds those defaults
// proves them: without one, the configuration is refused unless
// checkOrganizationDefaults is false. It returns warnings for what it
// could not check and nothing depended on.
func checkOrganization(ctx context.Context, c *Config, client *pulumicloud.Client, tokenSource string) (warnings []string, err error) {
	// Members outside the production team hold the default as well as the
	// other runs' tokens: a fleet of production alone needs it at None too.
	needStack := c.HasProduction()
	// Who holds a grant on a production stack, and on an imported one.
	needGrants := c.HasProduction() || c.ImportStacks
	// Who may open an environment logs in as its stack's role. A
	// production one only its own runs and the production team may open:
	// not another production stack's run, nor any member outside the team,
	// who hold the default too, whatever else the fleet holds. No run of a
	// pull request's code (a preview, a review stack) may open any.
	var prodEnvs, envs []string
	untrusted := c.ReviewStacks
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		untrusted = untrusted || s.Previews()
		if s.HasEnvironment() {
			envs = append(envs, c.Project+"/"+name)
			if s.Production {
				prodEnvs = append(prodEnvs, c.Project+"/"+name)
			}
		}
	}
	guarded := prodEnvs
	if untrusted {
		guarded = envs
	}
	needEnv := len(guarded) > 0
	if !c.CheckOrganizationDefaults {
		if needStack || needEnv || needGrants {
			warnings = append(warnings, fmt.Sprintf("checkOrganizationDefaults is false: nothing proves that organization %s's default stack "+
				"permission is None, that it has no default deployment role, that nobody outside the production team holds a grant on a "+
				"production stack (and, for %v, that its default environment permission is none); deploy/README.md's checklist says why",
				c.Organization, guarded))
		}
		return warnings, nil
	}
	unproven := func(why string) ([]string, error) {
		if !needStack && !needEnv && !needGrants {
			return append(warnings, fmt.Sprintf("could not read organization %s's defaults (%s); nothing here depends on them", c.Organization, why)), nil
		}
		var reach []string
		if needStack || needGrants {
			reach = append(reach, "read production's stacks")
		}
		if needEnv {
			reach = append(reach, "open "+strings.Join(guarded, ", "))
		}
		return nil, fmt.Errorf("organization %s: %s, so nothing proves that other runs (pull-request, review, non-production, another "+
			"production stack's) and members outside the production team cannot %s. "+
			"Run deploy/ with a Pulumi Cloud token of the organization (PULUMI_ACCESS_TOKEN, or `pulumi login`), "+
			"or check the defaults by hand (deploy/README.md, \"What Pulumi Cloud must hold\") and set checkOrganizationDefaults: false",
			c.Organization, why, strings.Join(reach, " or "))
	}
	if client.Token == "" {
		return unproven("no Pulumi Cloud token was found (PULUMI_ACCESS_TOKEN, or the one `pulumi login` stored)")
	}
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	path := "/api/orgs/" + url.PathEscape(c.Organization) + "/metadata"
	var m orgMetadata
	if err := client.Call(callCtx, http.MethodGet, path, nil, &m); err != nil {
		switch pulumicloud.StatusOf(err) {
		case http.StatusForbidden, http.StatusNotFound:
			return unproven(fmt.Sprintf("the token from %s may not read its settings, or the organization is not there (%v)", tokenSource, err))
		}
		return unproven(fmt.Sprintf("reading its settings failed (%v)", err))
	}
	// Call leaves m as it was on an empty or null answer.
	var missing []string
	if needStack && m.DefaultStackPermission == nil {
		missing = append(missing, "defaultStackPermission")
	}
	if needEnv && m.DefaultEnvironmentPermission == nil {
		missing = append(missing, "defaultEnvironmentPermission")
	}
	if len(missing) > 0 {
		return unproven(fmt.Sprintf("the answer of %s to GET %s holds no %s, which Pulumi Cloud's API document requires of it "+
			"(is that Pulumi Cloud's API: PULUMI_API, or the backend `pulumi login` chose?)", client.API, path, strings.Join(missing, " and ")))
	}
	var errs []string
	if needStack && *m.DefaultStackPermission != 0 {
		perm := *m.DefaultStackPermission
		errs = append(errs, fmt.Sprintf("its default stack permission is %s (%d), so the stack token of every pull-request, review "+
			"and non-production run (admin on its own stack, and the organization's default on every other) can read production's "+
			"state and decrypt its secrets; it must be None: %s", stackPermissionNames[perm], perm,
			orgSettingHowTo(client.API, c.Organization, `{"setDefaultStackPermission":0}`)))
	}
	if needStack && m.DefaultDeploymentRoleID != "" {
		errs = append(errs, fmt.Sprintf("it has a default deployment role (%s), which every deployment whose settings name no role runs "+
			"with (Pulumi Cloud's API document, OrganizationMetadata), every one deploy/ sets up: a pull-request run would reach what "+
			"that role reaches. Unset it: %s; or, if the role reaches no production stack, check it by hand and set "+
			"checkOrganizationDefaults: false", m.DefaultDeploymentRoleID, orgSettingHowTo(client.API, c.Organization, `{"setDefaultDeploymentRoleId":""}`)))
	}
	if needEnv && *m.DefaultEnvironmentPermission != "none" {
		errs = append(errs, fmt.Sprintf("its default environment permission is %q, so a run's token can open %s and assume that "+
			"stack's role (a pull-request or review run, any of them; another run, or any member outside the production team, a "+
			"production one); it must be none, or leave those stacks without an environment (environment: false): %s",
			*m.DefaultEnvironmentPermission, strings.Join(guarded, ", "),
			orgSettingHowTo(client.API, c.Organization, `{"setDefaultEnvironmentPermission":"none"}`)))
	}
	if m.Features == nil {
		warnings = append(warnings, fmt.Sprintf("organization %s: the answer to GET %s holds no features, so the switches that need an "+
			"edition (driftDetection, teams, agentPoolId) are held to edition %s only", c.Organization, path, c.Edition.Title()))
	} else {
		errs = append(errs, c.checkFeatures(*m.Features)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("organization %s: %s", c.Organization, strings.Join(errs, "; and "))
	}
	if needGrants {
		g := &grantCheck{ctx: callCtx, c: c, client: client, meta: m}
		problems, err := g.run()
		if err != nil {
			return unproven(err.Error())
		}
		if len(problems) > 0 {
			return nil, fmt.Errorf("organization %s: a production stack (or an imported one) is reachable outside what deploy/ grants:\n%s",
				c.Organization, strings.Join(problems, "\n"))
		}
	}
	warnings = append(warnings, deploymentConcurrency(callCtx, c, client)...)
	drift, err := checkSettingsDrift(callCtx, c, client)
	if err != nil {
		// Fails closed: a setting no update restores (a Pulumi Cloud role)
		// would go unseen.
		return warnings, fmt.Errorf("reading the stacks' deployment settings, to see whether a run rewrote them: %w", err)
	}
	return append(warnings, drift...), nil
}

// checkFeatures holds the switches that need an edition to what Pulumi
// Cloud says the organization has (OrganizationFeatures). TTL schedules
// have no feature of their own there, so reviewStackTtl is held to
// edition alone.
func (c *Config) checkFeatures(f orgFeatures) []string {
	var errs []string
	lacks := func(on bool, key, feature string, has bool) {
		if on && !has {
			errs = append(errs, fmt.Sprintf("%s: Pulumi Cloud says the organization has no %s (features.%s is false), whatever edition "+
				"says; turn it off, or change the organization's subscription", key, feature, strings.SplitN(feature, " ", 2)[0]))
		}
	}
	lacks(c.DriftDetection, "driftDetection", "driftDetectionEnabled (drift detection)", f.DriftDetection)
	for _, name := range sortedKeys(c.Stacks) {
		lacks(c.Stacks[name].AutoRemediate, "stacks."+name+".autoRemediate", "driftRemediationEnabled (drift remediation)", f.DriftRemediation)
		lacks(c.Stacks[name].AgentPoolID != "", "stacks."+name+".agentPoolId", "selfHostedDeploymentsEnabled (customer-managed runners)", f.SelfHosted)
	}
	lacks(c.ProductionTeam != "", "productionTeam", "teamsEnabled (teams)", f.Teams)
	lacks(c.NonProductionTeam != "", "nonProductionTeam", "teamsEnabled (teams)", f.Teams)
	return errs
}

// deploymentConcurrency reads how many deployments the organization runs
// at once, and warns when a push to the program would queue the fleet;
// when it cannot be read, the edition's number stands in.
func deploymentConcurrency(ctx context.Context, c *Config, client *pulumicloud.Client) []string {
	var m struct {
		Concurrency *int `json:"concurrency"`
	}
	concurrency, source := editionConcurrency[c.Edition], "edition "+c.Edition.Title()
	path := "/api/orgs/" + url.PathEscape(c.Organization) + "/deployments/metadata"
	if err := client.Call(ctx, http.MethodGet, path, nil, &m); err == nil && m.Concurrency != nil {
		concurrency, source = *m.Concurrency, "Pulumi Cloud's deployments metadata"
	}
	if w := concurrencyWarning(c, concurrency, source); w != "" {
		return []string{w}
	}
	return nil
}
