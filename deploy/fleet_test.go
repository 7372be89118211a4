package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated sections of README.md")

// fleetFile is the fleet example: 40 stacks over three accounts and three
// regions.
const fleetFile = "Pulumi.fleet-example.yaml"

// TestFleet runs the fleet example under mocks: every role, policy and
// trust the program registers stays within IAM's limits, each account gets
// one OIDC provider, each role trusts its own stack's runs alone, and the
// README's fleet tables are what this configuration gives.
func TestFleet(t *testing.T) {
	rec, res := runFile(t, fleetFile, nil)
	require.NoError(t, res.Err)
	c := fleetConfig(t, nil)
	require.Len(t, c.Stacks, 40)
	regions, accounts := map[string]bool{}, map[string]bool{}
	for _, s := range c.Stacks {
		regions[s.Region], accounts[s.Account] = true, true
	}
	require.Len(t, regions, 3)
	require.Len(t, accounts, 3)

	t.Run("within IAM's limits, measured on what is registered", func(t *testing.T) {
		roles, policies := map[string]int{}, map[string]int{}
		attached := map[string]int{}
		for _, reg := range rec.OfType("aws:iam/role:Role") {
			roles[accountOfReg(t, rec, reg)]++
			assert.LessOrEqual(t, len(names.Autoname(reg.Name)), limitRoleName.Value, "%s's name with pulumi-aws's suffix", reg.Name)
			assert.LessOrEqual(t, trustOf(t, rec, reg.Name).Size(), limitTrustPolicy.Value, "%s's trust", reg.Name)
		}
		for _, reg := range rec.OfType("aws:iam/policy:Policy") {
			policies[accountOfReg(t, rec, reg)]++
			doc, err := iampolicy.Parse(reg.Inputs["policy"].StringValue())
			require.NoError(t, err)
			assert.LessOrEqual(t, doc.Size(), limitManagedPolicy.Value, "%s", reg.Name)
			name := names.Autoname(reg.Name)
			if n, ok := reg.Inputs["name"]; ok {
				name = n.StringValue()
			}
			assert.LessOrEqual(t, len(name), limitPolicyName.Value, "%s", reg.Name)
		}
		for _, reg := range rec.OfType("aws:iam/rolePolicyAttachment:RolePolicyAttachment") {
			attached[strings.Join(strings.Split(reg.Name, "-")[:len(strings.Split(reg.Name, "-"))-1], "-")]++
		}
		for role, n := range attached {
			assert.LessOrEqual(t, n, limitPoliciesOnRole.Value, "%s", role)
		}
		assert.Equal(t, map[string]int{"111122223333": 15, "444455556666": 15, account: 11}, roles,
			"one role per stack, in its account, and the review role")
		for acct, n := range roles {
			assert.LessOrEqual(t, n, limitRoles.Value, "roles in %s", acct)
			assert.LessOrEqual(t, policies[acct], limitPolicies.Value, "policies in %s", acct)
		}
		oidc := map[string]int{}
		for _, reg := range rec.OfType("aws:iam/openIdConnectProvider:OpenIdConnectProvider") {
			oidc[accountOfReg(t, rec, reg)]++
		}
		assert.Equal(t, map[string]int{"111122223333": 1, "444455556666": 1, account: 1}, oidc, "one provider per account and URL")

		// What the configuration check computes is what was registered.
		used, errs := fleetUsage(c)
		require.Empty(t, errs)
		// Per account, it adds what each stack's cluster creates there.
		assert.Equal(t, 15*(1+clusterIAM.Roles), used[limitRoles].Value, "each deploy role, and its cluster's roles")
		mostPolicies := 0
		for _, n := range policies {
			mostPolicies = max(mostPolicies, n)
		}
		assert.Equal(t, mostPolicies+15*clusterIAM.Policies, used[limitPolicies].Value)
		assert.Equal(t, 1+15*clusterIAM.OIDCProviders, used[limitOIDCProviders].Value, "Pulumi Cloud's, and one per cluster")
	})

	t.Run("each role trusts its own stack's runs alone, in its own account", func(t *testing.T) {
		for _, r := range Roles(c) {
			reg := rec.Get(t, "aws:iam/role:Role", deployRoleName+r.Key)
			assert.Equal(t, c.Accounts[r.Account].ID, accountOfReg(t, rec, reg))
			for _, st := range trustOf(t, rec, reg.Name).Statement {
				assert.Equal(t, "arn:aws:iam::"+c.Accounts[r.Account].ID+":oidc-provider/api.pulumi.com/oidc", st.Principal.(map[string]any)["Federated"])
				for _, sub := range iampolicy.Strings(st.Condition["StringLike"].(map[string]any)["api.pulumi.com/oidc:sub"]) {
					switch {
					case r.Stack != "" && strings.HasPrefix(sub, "pulumi:deploy:"):
						assert.Contains(t, sub, ":stack:"+r.Stack+":operation:", "%s", reg.Name)
					case r.Stack != "":
						assert.True(t, strings.HasSuffix(sub, ":rootEnvironment.name:nodeless-eks/"+r.Stack), "%s: %s", reg.Name, sub)
					default:
						assert.Equal(t, "pulumi:deploy:org:acme:project:nodeless-eks:stack:pr-*:operation:*:scope:write", sub)
					}
				}
			}
		}
	})

	t.Run("the README shows this fleet and how close it is to each limit", func(t *testing.T) {
		checkGenerated(t, "README.md", "fleet", fleetTable(c))
	})
}

// TestFleetLimits grows one account of the fleet until one stack more
// would break a per-account IAM quota: at the most stacks the quotas
// allow the configuration is accepted, one stack more is refused, naming
// the quota that breaks first. What one stack adds to each quota is what
// its deploy role and its cluster create (clusterIAM, held to the root
// program's count by TestClusterIAMIsTheRootProgramsCount); the account's
// OIDC provider for Pulumi Cloud is there once.
func TestFleetLimits(t *testing.T) {
	one := fleetConfig(t, map[string]string{"stacks": `{"s0000":{"account":"dev"}}`, "productionTeam": "", "reviewStacks": "false", "reviewStackTtl": "false"})
	used, errs := fleetUsage(one)
	require.Empty(t, errs)
	parts := used[limitPoliciesOnRole].Value // the deployer policy's parts
	require.Positive(t, parts)
	stacks := func(n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(`"s%04d":{"account":"dev"}`, i))
		}
		return "{" + strings.Join(out, ",") + "}"
	}
	// Each per-account quota: what a stack adds, and what is there anyway.
	type quota struct {
		l               limit
		perStack, fixed int
	}
	quotas := []quota{
		{limitRoles, 1 + clusterIAM.Roles, 0},
		{limitPolicies, 1 + parts + clusterIAM.Policies, 0},
		{limitOIDCProviders, clusterIAM.OIDCProviders, 1},
	}
	most, binding := -1, limit{}
	for _, q := range quotas {
		if n := (q.l.Value - q.fixed) / q.perStack; most < 0 || n < most {
			most, binding = n, q.l
		}
	}
	require.Positive(t, most)
	t.Logf("one account holds at most %d stacks; %s breaks first", most, binding.Name)
	base := map[string]string{"productionTeam": "", "reviewStacks": "false", "reviewStackTtl": "false"}
	with := func(n int) map[string]string {
		set := map[string]string{"stacks": stacks(n)}
		for k, v := range base {
			set[k] = v
		}
		return set
	}
	_, err := loadConfigOf(t, fleetFile, with(most))
	require.NoError(t, err, "%d stacks reach the quotas and stay within them", most)
	_, err = loadConfigOf(t, fleetFile, with(most+1))
	require.Error(t, err, "one stack more")
	assert.Contains(t, err.Error(), fmt.Sprintf("stacks: account dev would reach %d, over the limit of %d (%s)",
		func() int {
			for _, q := range quotas {
				if q.l == binding {
					return (most+1)*q.perStack + q.fixed
				}
			}
			return 0
		}(), binding.Value, binding.Name))
	assert.Equal(t, limitOIDCProviders, binding, "with one IRSA provider per cluster, an account's 100 OIDC providers come first")
}

// TestClusterIAMIsTheRootProgramsCount holds what the quota check counts
// per stack to what the root program creates, as its tests write it.
func TestClusterIAMIsTheRootProgramsCount(t *testing.T) {
	raw, err := os.ReadFile("../testdata/iam-per-stack.golden.json")
	require.NoError(t, err, "written by the root project's TestIAMObjectsPerStackForTheDeployFleet")
	var count struct {
		Roles         int `json:"roles"`
		Policies      int `json:"policies"`
		OIDCProviders int `json:"oidcProviders"`
	}
	require.NoError(t, json.Unmarshal(raw, &count))
	assert.Equal(t, count.Roles, clusterIAM.Roles)
	assert.Equal(t, count.Policies, clusterIAM.Policies)
	assert.Equal(t, count.OIDCProviders, clusterIAM.OIDCProviders)
}

// loadConfigOf loads a stack file of deploy/ with changes, as the
// program's configuration check sees it, registering nothing.
func loadConfigOf(t *testing.T, file string, set map[string]string) (*Config, error) {
	t.Helper()
	rec := mock.New(project, "admin")
	var c *Config
	res := rec.Run(t, stackfile.With(t, "Pulumi.yaml", file, set), true, func(ctx *pulumi.Context) error {
		var err error
		c, err = loadConfig(ctx)
		return err
	})
	return c, res.Err
}

// configOf is a stack file's configuration, which must load.
func configOf(t *testing.T, file string, set map[string]string) *Config {
	t.Helper()
	c, err := loadConfigOf(t, file, set)
	require.NoError(t, err)
	return c
}

// fleetConfig is the fleet example's configuration, which must load.
func fleetConfig(t *testing.T, set map[string]string) *Config {
	t.Helper()
	return configOf(t, fleetFile, set)
}

// limits lists every limit the fleet is checked against, for the README's
// table.
var limits = []limit{limitRoleName, limitPolicyName, limitTrustPolicy, limitManagedPolicy, limitPoliciesOnRole, limitRoles, limitPolicies, limitOIDCProviders}

// fleetTable is the README's fleet section: a row per stack, then the
// usage of each limit.
func fleetTable(c *Config) string {
	var b strings.Builder
	b.WriteString("| stack | account | region | production | its role is assumed by | ESC environment | team |\n|---|---|---|---|---|---|---|\n")
	for _, r := range Roles(c) {
		acct := c.Accounts[r.Account]
		by := "its update, refresh, destroy and drift runs"
		if r.Previews {
			by = "its runs, pull-request previews included"
		}
		if r.Stack == "" {
			by = "every review stack (" + r.ReviewStackPrefix + "*)"
		}
		env, team, prod, stack := "—", "—", "", r.Stack
		if r.Environment {
			env = "`" + c.Project + "/" + r.Stack + "`"
		}
		switch {
		case r.Stack == "":
			stack = "review stacks"
		case c.Stacks[r.Stack].Production:
			prod, team = "yes", c.ProductionTeam
		default:
			team = c.NonProductionTeam
		}
		if team == "" {
			team = "—"
		}
		fmt.Fprintf(&b, "| %s | %s (%s) | %s | %s | %s | %s | %s |\n", stack, r.Account, acct.ID, r.Region, prod, by, env, team)
	}
	used, _ := fleetUsage(c)
	b.WriteString("\n| IAM limit | value | the largest in this fleet |\n|---|---|---|\n")
	for _, l := range limits {
		u := used[l]
		fmt.Fprintf(&b, "| %s | %d | %d (%s) |\n", l.Name, l.Value, u.Value, u.Where)
	}
	b.WriteString("\n| edition | deployments at once | a push to the program reaches all " + fmt.Sprint(len(c.Stacks)) + " stacks in |\n|---|---|---|\n")
	for _, e := range []Edition{Free, Essentials, Pro, Enterprise} {
		at := "unlimited"
		if n, ok := editionConcurrency[e]; ok {
			at = fmt.Sprint(n)
		}
		waves, minutes := pushDrain(len(c.Stacks), editionConcurrency[e])
		fmt.Fprintf(&b, "| %s | %s | %d wave(s), about %d minutes |\n", e.Title(), at, waves, minutes)
	}
	return b.String()
}

// checkGenerated holds the section of doc between the markers
// "<!-- name:begin -->" and "<!-- name:end -->" to want; -update rewrites
// it.
func checkGenerated(t *testing.T, doc, name, want string) {
	t.Helper()
	raw, err := os.ReadFile(doc)
	require.NoError(t, err)
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	i, j := strings.Index(string(raw), begin), strings.Index(string(raw), end)
	require.Truef(t, i >= 0 && j > i, "%s has no section %s...%s", doc, strings.TrimSpace(begin), end)
	got := string(raw)[i+len(begin) : j]
	if *update {
		out := string(raw)[:i+len(begin)] + want + string(raw)[j:]
		require.NoError(t, os.WriteFile(doc, []byte(out), 0o644))
		return
	}
	assert.Equalf(t, want, got, "%s's %s section is generated: go test -run %s -update", doc, name, t.Name())
}

// TestDeploymentConcurrency warns, at preview, when the organization runs
// fewer deployments at once than a push to the program starts: Pulumi
// Cloud's own number where it answers, the edition's where it does not.
func TestDeploymentConcurrency(t *testing.T) {
	api := withCloud(t, isolated)
	warnings := captureWarnings(t)
	api.Put("/api/orgs/acme/deployments/metadata", map[string]any{"paused": false, "concurrency": 5, "deploymentCounts": map[string]any{}})
	_, res := runPrepared(t, fleetFile, nil, fixture{})
	require.NoError(t, res.Err)
	assert.Contains(t, *warnings, "the organization runs 5 deployment(s) at once (Pulumi Cloud's deployments metadata), so a push that touches "+
		"the program queues the 40 stacks in 8 waves: about 80 minutes until the last stack is updated, more when a stack's cluster is new. "+
		"Split the fleet's pushes (path filters per stack file), or a higher edition runs more at once")

	api.Put("/api/orgs/acme/deployments/metadata", nil)
	*warnings = nil
	_, res = runPrepared(t, fleetFile, nil, fixture{})
	require.NoError(t, res.Err)
	assert.False(t, slices.ContainsFunc(*warnings, func(w string) bool { return strings.Contains(w, "deployment(s) at once") }),
		"Enterprise runs them all at once: %v", *warnings)

	waves, minutes := pushDrain(40, editionConcurrency[Free])
	assert.Equal(t, 40, waves)
	assert.Equal(t, 400, minutes)
}
