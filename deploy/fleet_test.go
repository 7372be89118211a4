package main

import (
	"flag"
	"fmt"
	"os"
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
		assert.Equal(t, 15, used[limitRoles].Value)
		mostPolicies := 0
		for _, n := range policies {
			mostPolicies = max(mostPolicies, n)
		}
		assert.Equal(t, mostPolicies, used[limitPolicies].Value)
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

// TestFleetLimits grows one account of the fleet to the default quota of
// IAM customer managed policies (a boundary and the deployer policy's parts
// per stack), and of roles (a stack per role, with the account's own
// policies instead of the deployer policies): at the quota the
// configuration is accepted, one stack more is refused, naming the limit.
func TestFleetLimits(t *testing.T) {
	one := fleetConfig(t, map[string]string{"stacks": `{"s0000":{"account":"dev"}}`, "productionTeam": "", "reviewStacks": "false", "reviewStackTtl": "false"})
	used, errs := fleetUsage(one)
	require.Empty(t, errs)
	perStack := 1 + used[limitPoliciesOnRole].Value // the boundary and the deployer policy's parts
	require.Greater(t, perStack, 1)

	stacks := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`"s%04d":{"account":"dev"}`, i))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for _, tt := range []struct {
		name  string
		set   map[string]string
		limit limit
		most  int
	}{
		{"customer managed policies per account", map[string]string{}, limitPolicies, limitPolicies.Value / perStack},
		{"roles per account", map[string]string{"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/OrganizationAccountAccessRole"},
			"staging": {"id": "444455556666", "roleArn": "arn:aws:iam::444455556666:role/OrganizationAccountAccessRole"},
			"dev": {"id": "123456789012", "deployPolicyArns": ["arn:aws:iam::123456789012:policy/platform-deployer"]}}`}, limitRoles, limitRoles.Value},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range []int{tt.most, tt.most + 1} {
				set := map[string]string{"stacks": stacks(n), "productionTeam": "", "reviewStacks": "false", "reviewStackTtl": "false"}
				for k, v := range tt.set {
					set[k] = v
				}
				_, err := loadConfigOf(t, fleetFile, set)
				if n == tt.most {
					assert.NoError(t, err, "%d stacks reach the limit and stay within it", n)
					continue
				}
				require.Error(t, err, "one stack more")
				assert.Contains(t, err.Error(), fmt.Sprintf("stacks: account dev would reach %d, over the limit of %d (%s)",
					n*perStackOf(tt.limit, perStack), tt.limit.Value, tt.limit.Name))
			}
		})
	}
}

// perStackOf is how much one stack adds to a per-account limit.
func perStackOf(l limit, policiesPerStack int) int {
	if l == limitPolicies {
		return policiesPerStack
	}
	return 1
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
		case r.Production:
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
