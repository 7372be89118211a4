package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Account is an AWS account of the fleet, which deploy/ reaches through
// its AccountRoleName role. The account is the production boundary: the
// program's roles need region-wide EC2 rights, so only another account
// keeps a non-production run from production's volumes and instances.
type Account struct {
	ID string `json:"id"` // 12 digits
}

// Stack is how one named stack of the root project is deployed
// (Pulumi.yaml's stacks says each field); no named stack previews pull
// requests.
type Stack struct {
	Account    string `json:"account,omitempty"` // an entry of accounts; optional with one
	Region     string `json:"region,omitempty"`  // default deploy/'s aws:region
	Production bool   `json:"production,omitempty"`
	// ClusterName scopes the stack's role; default "<project>-<stack>",
	// what an unset clusterName gives the root program.
	ClusterName   string `json:"clusterName,omitempty"`
	Import        bool   `json:"import,omitempty"`        // adopt the stack, which exists
	AgentPoolID   string `json:"agentPoolId,omitempty"`   // a customer-managed pool; not production's
	DriftSchedule string `json:"driftSchedule,omitempty"` // cron; "" detects no drift
}

// Review is where review stacks, one per pull request, deploy: the only
// stacks that run a pull request's code.
type Review struct {
	Account  string `json:"account"`
	Region   string `json:"region,omitempty"`
	Template string `json:"template,omitempty"` // whose settings and stack file review stacks copy; "pr"
	Prefix   string `json:"prefix,omitempty"`   // of every review stack's name; "pr-"
	// ClusterPrefix starts every review cluster's name, all the review
	// role reaches; default "<project>-<Prefix>".
	ClusterPrefix string `json:"clusterPrefix,omitempty"`
	// Labels gate review stacks: "only pull requests carrying a matching
	// label (exact, case-sensitive) create a review stack" (pulumiservice
	// v1.3.0 spec.json, vcs.reviewStackLabels), and only those with
	// triage access on GitHub label. Default ["review-stack"]; [] is every
	// pull request.
	Labels      *[]string `json:"labels,omitempty"`
	TTLHours    int       `json:"ttlHours,omitempty"` // after its last update; default 8
	AgentPoolID string    `json:"agentPoolId,omitempty"`
	Import      bool      `json:"import,omitempty"`
}

// Config is the deploy project's configuration (Pulumi.yaml says each key).
type Config struct {
	Organization, Project, Repository, Branch, RepoDir string
	// Region is deploy/'s aws:region, and every stack's that names none.
	Region string
	// Deployer is the role that runs deploy/, the one principal every
	// account role trusts.
	Deployer string
	Accounts map[string]Account
	Stacks   map[string]Stack
	Review   *Review
	// ProductionTeam and OperatorsTeam may start and read deployments of
	// the production stacks and of the others.
	ProductionTeam, OperatorsTeam string
	// ServicePrincipal is the login (GET's user.githubLogin) of the Admin
	// service principal deploy/'s own runs run as.
	ServicePrincipal string
	SessionHours     int    // the deploy roles' longest session
	Schedule         string // cron of deploy/'s own restore
}

var (
	// Pulumi Cloud organization names are lowercase, and the audience a
	// trust policy matches is case-sensitive.
	orgRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
	repoRe    = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	stackRe   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	cronRe    = regexp.MustCompile(`^(\S+\s+){4}\S+$`)
	accountRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)
	accountID = regexp.MustCompile(`^\d{12}$`)
	regionRe  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)
	teamRe    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	clusterRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`) // what EKS accepts for a cluster name
	roleArnRe = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov):iam::\d{12}:role/.+$`)
)

// loadConfig reads and checks the configuration; every problem is
// reported at once, before anything is registered.
func loadConfig(ctx *pulumi.Context) (*Config, error) {
	cfg := config.New(ctx, "")
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	str := func(key, def string) string {
		if v := cfg.Get(key); v != "" {
			return v
		}
		return def
	}
	object := func(key string, into any, want string) {
		if raw := cfg.Get(key); raw != "" {
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.DisallowUnknownFields() // a typo is no default
			if err := dec.Decode(into); err != nil {
				bad("%s: want %s: %v", key, want, err)
			}
		}
	}
	c := &Config{
		Organization: str("organization", ""), Project: str("project", "nodeless-eks"), Repository: str("repository", ""),
		Branch: str("branch", "main"), RepoDir: str("repoDir", "."), Region: config.Get(ctx, "aws:region"),
		Deployer: str("deployer", ""), ProductionTeam: str("productionTeam", ""), OperatorsTeam: str("operatorsTeam", ""),
		ServicePrincipal: str("servicePrincipal", ""),
		Schedule:         str("schedule", "0 * * * *"), SessionHours: 6,
	}
	if raw := cfg.Get("sessionHours"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 12 {
			bad("sessionHours %q: want 1-12, IAM's limit for a role session", raw)
		}
		c.SessionHours = n
	}
	object("accounts", &c.Accounts, "an object of AWS accounts by a short name, each {id}")
	object("stacks", &c.Stacks, "an object of stacks by name, each {account, region, production, clusterName, import, agentPoolId, driftSchedule}")
	object("reviewStacks", &c.Review, "{account, region, template, prefix, clusterPrefix, labels, ttlHours, agentPoolId, import}")
	c.reviewDefaults()
	for _, check := range []func() []error{c.checkProject, c.checkAccounts, c.checkStacks, c.checkReview, c.checkIsolation} {
		errs = append(errs, check()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return c, nil
}

func (c *Config) checkProject() (errs []error) {
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case c.Organization != strings.ToLower(c.Organization):
		bad("organization %q: Pulumi Cloud organization names are lowercase, and the OIDC audience the deploy roles trust is "+
			"matched case-sensitively; write %q", c.Organization, strings.ToLower(c.Organization))
	case !orgRe.MatchString(c.Organization):
		bad("organization %q: required, the Pulumi Cloud organization's name: lowercase letters, digits, '-', '_' or '.'", c.Organization)
	}
	if !stackRe.MatchString(c.Project) {
		bad("project %q: want the root project's name: letters, digits, '-', '_' or '.' (it goes into the roles' trust, where * would match any project)", c.Project)
	}
	if !repoRe.MatchString(c.Repository) {
		bad("repository %q: required, the GitHub repository as owner/name", c.Repository)
	}
	if !regionRe.MatchString(c.Region) {
		bad("aws:region %q: want the region deploy/ calls AWS in, and the default region of the stacks, such as \"eu-west-1\"", c.Region)
	}
	if strings.HasPrefix(c.RepoDir, "/") || strings.Contains(c.RepoDir, "..") {
		bad("repoDir %q: want a directory inside the repository, such as \".\"", c.RepoDir)
	}
	if !roleArnRe.MatchString(c.Deployer) {
		bad("deployer %q: required, the ARN of the role that runs deploy/ (the one principal each account's %s trusts, which "+
			"deploy/'s own runs assume through Pulumi Cloud's OIDC)", c.Deployer, AccountRoleName)
	}
	if !teamRe.MatchString(c.ServicePrincipal) {
		bad("servicePrincipal %q: required, the login of the service principal with the Admin role that deploy/'s runs run as", c.ServicePrincipal)
	}
	for key, team := range map[string]string{"productionTeam": c.ProductionTeam, "operatorsTeam": c.OperatorsTeam} {
		if team != "" && !teamRe.MatchString(team) {
			bad("%s %q: want the name of a Pulumi Cloud team (not its display name)", key, team)
		}
	}
	if !cronRe.MatchString(c.Schedule) {
		bad("schedule %q: want a cron expression of five fields, such as \"0 * * * *\"", c.Schedule)
	}
	return errs
}

func (c *Config) checkAccounts() (errs []error) {
	if len(c.Accounts) == 0 {
		errs = append(errs, errors.New(`accounts: name at least one AWS account, such as {"dev": {"id": "123456789012"}}`))
	}
	ids := map[string]string{}
	for _, name := range sortedKeys(c.Accounts) {
		a := c.Accounts[name]
		switch {
		case !accountRe.MatchString(name):
			errs = append(errs, fmt.Errorf("accounts %q: want a short name of lowercase letters, digits and '-' (it names the account's provider)", name))
		case !accountID.MatchString(a.ID):
			errs = append(errs, fmt.Errorf("accounts.%s.id %q: want the 12-digit AWS account ID", name, a.ID))
		case ids[a.ID] != "":
			errs = append(errs, fmt.Errorf("accounts.%s.id %s: accounts.%s has the same ID; one entry per account", name, a.ID, ids[a.ID]))
		}
		ids[a.ID] = name
	}
	return errs
}

// accountOf is the account a stack deploys into: the one it names, or the
// only one.
func (c *Config) accountOf(name string) string {
	if name != "" || len(c.Accounts) != 1 {
		return name
	}
	return sortedKeys(c.Accounts)[0]
}

func (c *Config) checkStacks() (errs []error) {
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(c.Stacks) == 0 {
		bad("stacks: name at least one stack of the root project to deploy")
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		switch {
		case !stackRe.MatchString(name):
			bad("stacks %q: want a stack name of letters, digits, '-', '_' or '.'", name)
		case name == reviewRoleKey || deployRoleName+name == AccountRoleName:
			bad("stacks %q: %s%s is a role deploy/ keeps for itself; rename the stack", name, deployRoleName, name)
		case c.Review != nil && (name == c.Review.Template || strings.HasPrefix(name, c.Review.Prefix)):
			bad("stacks %q: reserved for review stacks (reviewStacks.template %q, prefix %q)", name, c.Review.Template, c.Review.Prefix)
		}
		s.Account = c.accountOf(s.Account)
		if _, ok := c.Accounts[s.Account]; !ok {
			bad("stacks.%s.account %q: want one of accounts (%s)", name, s.Account, strings.Join(sortedKeys(c.Accounts), ", "))
		}
		if s.Region == "" {
			s.Region = c.Region
		} else if !regionRe.MatchString(s.Region) {
			bad("stacks.%s.region %q: want the stack's aws:region, such as \"eu-west-1\"", name, s.Region)
		}
		if s.DriftSchedule != "" && !cronRe.MatchString(s.DriftSchedule) {
			bad("stacks.%s.driftSchedule %q: want a cron expression of five fields, such as \"0 4 * * *\"", name, s.DriftSchedule)
		}
		if s.ClusterName == "" {
			s.ClusterName = names.DefaultClusterName(c.Project, name)
		} else if !clusterRe.MatchString(s.ClusterName) || len(s.ClusterName) > names.MaxClusterNameLength {
			bad("stacks.%s.clusterName %q: want the stack's clusterName, 1-%d letters, digits, '-' or '_'", name, s.ClusterName, names.MaxClusterNameLength)
		}
		if strings.HasPrefix(s.ClusterName, deployRoleName) {
			bad("stacks.%s.clusterName %q: the deploy roles are named %q...; a cluster name that starts alike would let a run change them", name, s.ClusterName, deployRoleName)
		}
		c.Stacks[name] = s
	}
	// A role's IAM reach is its cluster's name followed by '-' (roles,
	// policies, queues, rules) or '_' (Karpenter's instance profiles): in
	// one account, one stack's name followed by either may not begin
	// another stack's.
	for _, a := range sortedKeys(c.Stacks) {
		for _, b := range sortedKeys(c.Stacks) {
			sa, sb := c.Stacks[a], c.Stacks[b]
			if a == b || sa.Account != sb.Account {
				continue
			}
			if ca, cb := sa.ClusterName, sb.ClusterName; ca == cb || strings.HasPrefix(cb, ca+"-") || strings.HasPrefix(cb, ca+"_") {
				bad("stacks.%s.clusterName %q: stack %s's cluster %q in the same account is it or starts with it, so %s's deploy role "+
					"could change %s's roles, queue and instance profiles; give one of them another clusterName", a, ca, b, cb, a, b)
			}
		}
	}
	return errs
}

// reviewDefaults fills in what reviewStacks leaves out; an empty object
// is no review stacks.
func (c *Config) reviewDefaults() {
	r := c.Review
	if r == nil || reflect.DeepEqual(*r, Review{}) {
		c.Review = nil
		return
	}
	r.Account = c.accountOf(r.Account)
	r.Region = cmp.Or(r.Region, c.Region)
	r.Template = cmp.Or(r.Template, "pr")
	r.Prefix = cmp.Or(r.Prefix, "pr-")
	r.ClusterPrefix = cmp.Or(r.ClusterPrefix, c.Project+"-"+r.Prefix)
	if r.TTLHours == 0 {
		r.TTLHours = 8
	}
	if r.Labels == nil {
		r.Labels = &[]string{"review-stack"}
	}
}

func (c *Config) checkReview() (errs []error) {
	r := c.Review
	if r == nil {
		return nil
	}
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, ok := c.Accounts[r.Account]; !ok {
		bad("reviewStacks.account %q: want the account review stacks deploy into, one of accounts (%s)", r.Account, strings.Join(sortedKeys(c.Accounts), ", "))
	}
	switch {
	case !regionRe.MatchString(r.Region):
		bad("reviewStacks.region %q: want the review stacks' aws:region, such as \"eu-west-1\"", r.Region)
	case !stackRe.MatchString(r.Template) || !stackRe.MatchString(r.Prefix):
		bad("reviewStacks.template %q and prefix %q: want stack names", r.Template, r.Prefix)
	case strings.HasPrefix(r.Template, r.Prefix):
		bad("reviewStacks.template %q: starts with the review prefix %q, so it would be a review stack, which copies it", r.Template, r.Prefix)
	case !clusterRe.MatchString(r.ClusterPrefix) || len(r.ClusterPrefix) < 3 || strings.HasPrefix(r.ClusterPrefix, deployRoleName):
		bad("reviewStacks.clusterPrefix %q: want 3 or more letters, digits, '-' or '_', not starting with %q; the review role "+
			"reaches only names that start with it", r.ClusterPrefix, deployRoleName)
	// A review cluster is the prefix and the pull request's number
	// (StackConfigCommand); room for six digits.
	case len(r.ClusterPrefix) > names.MaxClusterNameLength-6:
		bad("reviewStacks.clusterPrefix %q: %d characters, and a review stack's cluster is it and the pull request's number, "+
			"which the root program refuses past %d characters; want at most %d (set clusterPrefix, or a shorter project)",
			r.ClusterPrefix, len(r.ClusterPrefix), names.MaxClusterNameLength, names.MaxClusterNameLength-6)
	case r.TTLHours < 1 || r.TTLHours > 720:
		bad("reviewStacks.ttlHours %d: want 1-720", r.TTLHours)
	}
	return errs
}

// checkIsolation keeps production alone in its accounts and on Pulumi's
// hosted pool: an account with a production stack holds no other stack
// and no review stacks, and production names no runner pool (no Pulumi
// Cloud control limits which stacks or deployment requests may use a
// customer-managed pool; the hosted pool isolates each run).
func (c *Config) checkIsolation() (errs []error) {
	prodAccount := map[string]string{}
	for _, name := range sortedKeys(c.Stacks) {
		if s := c.Stacks[name]; s.Production {
			prodAccount[s.Account] = name
			if s.AgentPoolID != "" {
				errs = append(errs, fmt.Errorf("stacks.%s.agentPoolId %q: production runs on Pulumi's hosted pool, which isolates each run; a "+
					"customer-managed pool is a host its jobs share, and whoever may start a deployment may name any pool: remove it", name, s.AgentPoolID))
			}
		}
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		if p, ok := prodAccount[s.Account]; ok && !s.Production {
			errs = append(errs, fmt.Errorf("stacks.%s.account %q: holds production stack %s, and the program's roles reach every volume, "+
				"instance and security group of their account; give production an account of its own", name, s.Account, p))
		}
	}
	if r := c.Review; r != nil {
		// A review run may create roles of its clusters, capped by the
		// boundary, which grants region-wide what the VPC CNI, EBS CSI and
		// LB controller policies grant (volumes, snapshots, instances): in
		// an account with a named stack, a pull request's code could read
		// or destroy its volumes.
		for _, name := range sortedKeys(c.Stacks) {
			if c.Stacks[name].Account == r.Account {
				errs = append(errs, fmt.Errorf("reviewStacks.account %q: holds stack %s, and a review run, which runs a pull request's "+
					"code, may create roles that reach every volume, snapshot and instance of their account; give review stacks an "+
					"account of their own", r.Account, name))
			}
		}
	}
	if c.OperatorsTeam != "" && c.OperatorsTeam == c.ProductionTeam {
		errs = append(errs, fmt.Errorf("operatorsTeam %q: the production team too; a team holds one role (GetTeam's roleIds: \"only "+
			"one role per team is supported\"), give each its own team", c.OperatorsTeam))
	}
	return errs
}

// isFleet reports whether a stack of the project is one deploy/ names:
// a named stack or the review template.
func (c *Config) isFleet(name string) bool {
	_, named := c.Stacks[name]
	return named || (c.Review != nil && name == c.Review.Template)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
