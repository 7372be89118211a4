package main

import (
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakecloud"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated files and goldens")

const (
	project = "nodeless-eks-deploy"
	// toolingAccount holds the deployer, the role that runs deploy/; it
	// hosts no stack.
	toolingAccount = "210987654321"
	deployerArn    = "arn:aws:iam::" + toolingAccount + ":role/nodeless-eks-deployer"
	// prodAccount, devAccount and reviewAccount are Pulumi.example.yaml's.
	prodAccount   = "111122223333"
	devAccount    = "123456789012"
	reviewAccount = "777788889999"
	// admin is the organization admin whose token runs deploy/.
	admin      = "platform-admin"
	cloudToken = "pul-admin-token"
)

// Built-in roles, by the IDs the fake gives them.
const (
	memberRole  = "role-member"
	adminRole   = "role-admin"
	readerRole  = "role-reader"
	billingRole = "role-billing"
)

// cleanOrg is an organization deploy/'s check accepts for c: the defaults
// and features the checklist's step 2 sets, its admin and two members in
// the production and operators teams, deploy/'s own stack with settings
// that preview nothing, a GitHub Actions issuer that admits the main
// branch only, and the stacks of existing (named, or review stacks), as
// an earlier run left them.
func cleanOrg(c *Config, existing ...string) *fakecloud.Organization {
	o := &fakecloud.Organization{
		Name: c.Organization, Login: admin,
		Metadata: map[string]any{"defaultStackPermission": 0, "defaultEnvironmentPermission": "none", "membersCanCreateStacks": false,
			"membersCanTransferStacks": false,
			"permissionMode":           "restricted", "userRole": "admin",
			"features": map[string]any{"customRolesEnabled": true, "legacyDeploymentsOrgToken": false, "driftDetectionEnabled": true,
				"selfHostedDeploymentsEnabled": true}},
		Roles: []fakecloud.Role{{ID: memberRole, Name: "Member", DefaultIdentifier: "member"}, {ID: adminRole, Name: "Admin", DefaultIdentifier: "admin"},
			{ID: readerRole, Name: "Reader", DefaultIdentifier: "reader"}, {ID: billingRole, Name: "Billing Manager", DefaultIdentifier: "billing-manager"}},
		Members: []fakecloud.Member{{Login: admin, Kind: "frontend", RoleID: adminRole}, {Login: "alice", Kind: "frontend", RoleID: memberRole},
			{Login: "bob", Kind: "frontend", RoleID: memberRole}, {Login: "deploy-schedule", Kind: "service-principal", RoleID: adminRole}},
		Teams: map[string]*fakecloud.Team{"platform": {Members: []string{"alice"}}, "developers": {Members: []string{"bob"}}},
		Stacks: map[string]*fakecloud.Stack{project + "/admin": {ID: "stk-deploy", Creator: admin,
			Settings: map[string]any{"vcs": map[string]any{"provider": "github", "repository": c.Repository}}}},
		Issuers: []fakecloud.Issuer{{ID: "gha", Name: "github-actions", URL: "https://token.actions.githubusercontent.com",
			Policies: []map[string]any{{"decision": "allow", "tokenType": "organization", "authorizedPermissions": []any{},
				"rules": map[string]any{"sub": "repo:" + c.Repository + ":ref:refs/heads/main"}}}}},
	}
	for _, name := range existing {
		o.Stacks[c.Project+"/"+name] = &fakecloud.Stack{ID: "stk-" + name, Creator: admin, LastUpdate: 1796000000}
	}
	o.Metadata["stackCount"] = len(o.Stacks)
	return o
}

// fleetAWS is what deploy/'s lookups find in the fleet's accounts, as the
// checklist's step 3 leaves them: the account role trusting the deployer
// alone, and Pulumi Cloud's OIDC provider admitting the organization.
func fleetAWS(c *Config) *fakeaws.Account {
	acct := &fakeaws.Account{CallerAccount: toolingAccount, Others: map[string]*fakeaws.Elsewhere{}}
	for _, name := range sortedKeys(c.Accounts) {
		id := c.Accounts[name].ID
		acct.Others[id] = &fakeaws.Elsewhere{
			Roles:      map[string]string{AccountRoleName: mustJSON(AccountRoleTrust(c.Deployer))},
			PulumiOIDC: &fakeaws.OIDCProvider{Arn: "arn:aws:iam::" + id + ":oidc-provider/" + oidcIssuerKey, ClientIDs: []string{c.Organization}},
		}
	}
	return acct
}

// world is what a run of deploy/ meets: its stack file and changes, the
// organization and the AWS accounts.
type world struct {
	file string
	set  map[string]string
	org  *fakecloud.Organization
	aws  *fakeaws.Account
	api  *fakecloud.API
	c    *Config
}

// newWorld is the example's world as the checklist leaves it before
// deploy/'s first `pulumi up`, with existing stacks in the organization.
func newWorld(t *testing.T, file string, set map[string]string, existing ...string) *world {
	t.Helper()
	c := configOf(t, file, set)
	w := &world{file: file, set: set, c: c, org: cleanOrg(c, existing...), aws: fleetAWS(c)}
	w.api = fakecloud.New(cloudToken)
	t.Cleanup(w.api.Close)
	w.api.Serve(w.org)
	return w
}

// run runs deploy/ in w, as `pulumi up` or, with preview, `pulumi preview`
// does: the Pulumi Cloud resources it registers appear in the fake
// organization as pulumiservice would create them.
func (w *world) run(t *testing.T, preview bool) (*mock.Recorder, mock.Result) {
	t.Helper()
	t.Setenv("PULUMI_API", w.api.URL)
	t.Setenv("PULUMI_ACCESS_TOKEN", cloudToken)
	t.Setenv("PULUMI_HOME", t.TempDir())
	rec := w.aws.Recorder(project, "admin")
	state := rec.State
	rec.State = func(reg *mock.Registration) (string, resource.PropertyMap, error) {
		id, out, err := state(reg)
		if err == nil && !preview {
			w.created(reg, out)
		}
		if reg.Type == "pulumiservice:index:OrganizationRole" {
			out["roleId"] = resource.NewProperty("role-" + reg.Inputs["name"].StringValue())
		}
		return id, out, err
	}
	return rec, rec.Run(t, stackfile.With(t, "Pulumi.yaml", w.file, w.set), preview, program)
}

// created makes a registered Pulumi Cloud resource exist in the fake
// organization (the stack with an ID, the team, the role and its
// assignment), as pulumiservice v1.3.0 creates and updates them. A new
// team gets its creator, the token's user, as a member: "Pulumi Cloud
// auto-adds the team creator on team creation" (pulumiservice v1.3.0
// examples/py-rbac; CHANGELOG, getCurrentUser). A team that exists is
// refreshed first (deploy/Pulumi.yaml: refresh: always), which reads its
// live members into its inputs (provider/pkg/resources/team.go Read), and
// updated to the declared members, removing each member not declared
// (team.go Update, DeleteMemberFromTeam: PATCH memberAction remove).
func (w *world) created(reg *mock.Registration, state resource.PropertyMap) {
	str := func(k string) string { return reg.Inputs[resource.PropertyKey(k)].StringValue() }
	switch reg.Type {
	case "pulumiservice:index:Stack":
		key := str("projectName") + "/" + str("stackName")
		if w.org.Stacks[key] == nil {
			w.org.Stacks[key] = &fakecloud.Stack{ID: "stk-" + str("stackName"), Creator: admin}
		}
	case "pulumiservice:index:Team":
		declared := []string{}
		for _, m := range reg.Inputs["members"].ArrayValue() {
			declared = append(declared, m.StringValue())
		}
		if t := w.org.Teams[str("name")]; t != nil {
			t.Members = declared
		} else {
			w.org.Teams[str("name")] = &fakecloud.Team{Members: append(declared, w.org.Login)}
		}
	case "pulumiservice:index:OrganizationRole":
		w.org.Roles = append(w.org.Roles, fakecloud.Role{ID: "role-" + str("name"), Name: str("name")})
	case "pulumiservice:index:TeamRoleAssignment":
		if t := w.org.Teams[str("teamName")]; t != nil {
			t.RoleIDs = append(t.RoleIDs, reg.Inputs["roleId"].StringValue())
		}
	}
}

// configOf is deploy/'s configuration of a stack file with changes.
func configOf(t *testing.T, file string, set map[string]string) *Config {
	t.Helper()
	c, err := loadConfigOf(t, file, set)
	require.NoError(t, err)
	return c
}

func loadConfigOf(t *testing.T, file string, set map[string]string) (*Config, error) {
	t.Helper()
	var c *Config
	rec := mock.New(project, "admin")
	res := rec.Run(t, stackfile.With(t, "Pulumi.yaml", file, set), true, func(ctx *pulumi.Context) error {
		var err error
		c, err = loadConfig(ctx)
		return err
	})
	return c, res.Err
}

// policyOf is a deploy role's deployer policy, its registered parts as one
// document, each part within a managed policy's size.
func policyOf(t *testing.T, rec *mock.Recorder, key string) iampolicy.Document {
	t.Helper()
	var all iampolicy.Document
	for i := 1; ; i++ {
		reg, ok := rec.Find("aws:iam/policy:Policy", fmt.Sprintf("%s%s-%d", deployRoleName, key, i))
		if !ok {
			break
		}
		doc, err := iampolicy.Parse(reg.Inputs["policy"].StringValue())
		require.NoError(t, err)
		require.LessOrEqual(t, doc.Size(), iampolicy.MaxManagedPolicySize, "%s part %d fits a managed policy", key, i)
		all.Version, all.Statement = doc.Version, append(all.Statement, doc.Statement...)
	}
	require.NotEmpty(t, all.Statement, "the deployer policy of %s", key)
	return all
}

// boundaryOf is the registered permissions boundary of a deploy role's runs.
func boundaryOf(t *testing.T, rec *mock.Recorder, key string) iampolicy.Document {
	t.Helper()
	doc, err := iampolicy.Parse(rec.Get(t, "aws:iam/policy:Policy", "boundary-"+key).Inputs["policy"].StringValue())
	require.NoError(t, err)
	return doc
}

// trustOf is a deploy role's registered trust policy.
func trustOf(t *testing.T, rec *mock.Recorder, key string) iampolicy.Document {
	t.Helper()
	doc, err := iampolicy.Parse(rec.Get(t, "aws:iam/role:Role", deployRoleName+key).Inputs["assumeRolePolicy"].StringValue())
	require.NoError(t, err)
	return doc
}

// settingsOf are the deployment settings the fake organization holds for
// a stack of the root project.
func (w *world) settingsOf(t *testing.T, stack string) map[string]any {
	t.Helper()
	s := w.org.Stacks[w.c.Project+"/"+stack]
	require.NotNil(t, s, "stack %s exists", stack)
	require.NotNil(t, s.Settings, "stack %s has settings", stack)
	return s.Settings
}

type fakeStack = fakecloud.Stack

// captureErrors collects the errors the program logs, for the test's
// length.
func captureErrors(t *testing.T) *[]string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	old := logError
	logError = func(_ *pulumi.Context, msg string) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msg)
		return nil
	}
	t.Cleanup(func() { logError = old })
	return &got
}

// captureWarnings collects what the program warns, for the test's length.
func captureWarnings(t *testing.T) *[]string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	old := logWarning
	logWarning = func(_ *pulumi.Context, msg string) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msg)
		return nil
	}
	t.Cleanup(func() { logWarning = old })
	return &got
}

// putRaw PUTs body to url with the admin's token, and says the status.
func putRaw(t *testing.T, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+cloudToken)
	req.Header.Set("Accept", "application/vnd.pulumi+8")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

func mustJSON(d iampolicy.Document) string {
	s, err := d.JSON()
	if err != nil {
		panic(err)
	}
	return s
}
