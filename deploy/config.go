package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// Account is an AWS account that holds stacks of the fleet. The account is
// the production boundary: the program's own roles need region-wide EC2
// rights, so only another account keeps a non-production run away from
// production's volumes, instances and network.
type Account struct {
	// ID is the 12-digit account ID.
	ID string `json:"id"`
	// RoleArn is the role in the account that the credentials running
	// deploy/ assume to create the deploy roles there: AccountRoleName,
	// created once per account from that account's own credentials, with
	// the documents in account-role/ (deploy/README.md, "One role per
	// account"), trusting only the principal that runs deploy/. Empty: the
	// account is the one those credentials are for (checked before anything
	// is registered).
	RoleArn string `json:"roleArn,omitempty"`
	// OidcProviderArn reuses the account's api.pulumi.com/oidc provider.
	OidcProviderArn string `json:"oidcProviderArn,omitempty"`
	// DeployPolicyArns replace the deployer policies in this account.
	DeployPolicyArns []string `json:"deployPolicyArns,omitempty"`
	// SharedWithNonProduction acknowledges that the account holds a
	// production stack together with non-production or review stacks,
	// which can then reach production's data (deploy/README.md lists how).
	SharedWithNonProduction bool `json:"sharedWithNonProduction,omitempty"`
	// SharedResourceAccounts are other accounts whose shared resources
	// the account's clusters use, such as a shared VPC's network account:
	// the boundary denies what any other account shares.
	SharedResourceAccounts []string `json:"sharedResourceAccounts,omitempty"`
}

// StackSettings is how one stack of the root project is deployed.
type StackSettings struct {
	// Account names the entry of accounts the stack deploys into; it may
	// be left out when there is one account.
	Account string `json:"account,omitempty"`
	// Region is the stack's aws:region. Default: deploy/'s aws:region.
	Region string `json:"region,omitempty"`
	// Production gives the stack an account of its own (or the
	// acknowledgement above) and keeps pull requests off its role.
	Production bool `json:"production,omitempty"`
	// PreviewPullRequests previews pull requests on the stack, running
	// their code with the stack's role. Default: on for non-production
	// stacks; a production stack may not.
	PreviewPullRequests *bool `json:"previewPullRequests,omitempty"`
	// ClusterName is the stack's clusterName, which scopes its role's
	// permissions. Default "<project>-<stack>", what an unset clusterName
	// gives the root program.
	ClusterName string `json:"clusterName,omitempty"`
	// Environment creates the ESC environment <project>/<stack> that logs
	// in as the stack's role. Default: on for non-production stacks, off
	// for production ones (whoever may open it is that role).
	Environment *bool `json:"environment,omitempty"`
	// DriftSchedule is the drift detection's cron (with driftDetection).
	DriftSchedule string `json:"driftSchedule,omitempty"`
	// AutoRemediate runs `pulumi up` when drift is found.
	AutoRemediate bool `json:"autoRemediate,omitempty"`
	// AgentPoolID runs the stack's deployments on a customer-managed
	// runner pool (Enterprise), whose network may reach a private API
	// endpoint. Default: Pulumi-hosted runners, which have no fixed egress
	// address, so the stack's public endpoint must be open to 0.0.0.0/0.
	AgentPoolID string `json:"agentPoolId,omitempty"`
}

// stackFields names the settings a stack may have, for messages.
const stackFields = "{account, region, production, previewPullRequests, clusterName, environment, driftSchedule, autoRemediate, agentPoolId}"

// Previews reports whether the stack previews pull requests.
func (s StackSettings) Previews() bool {
	if s.PreviewPullRequests != nil {
		return *s.PreviewPullRequests
	}
	return !s.Production
}

// HasEnvironment reports whether the stack gets an ESC environment.
func (s StackSettings) HasEnvironment() bool {
	if s.Environment != nil {
		return *s.Environment
	}
	return !s.Production
}

// Edition is a Pulumi Cloud edition. Pulumi's current editions, from the
// lowest: Free, Essentials, Pro, Enterprise (pulumi/docs
// data/pulumi_pricing.yaml, pricing version 6).
type Edition int

// Editions, in order.
const (
	Free Edition = iota
	Essentials
	Pro
	Enterprise
)

var editionNames = []string{"free", "essentials", "pro", "enterprise"}

func (e Edition) String() string { return editionNames[e] }

// Title is the edition's name as Pulumi writes it.
func (e Edition) Title() string { return strings.ToUpper(editionNames[e][:1]) + editionNames[e][1:] }

// parseEdition reads an edition's name.
func parseEdition(s string) (Edition, bool) {
	i := slices.Index(editionNames, strings.ToLower(s))
	if i < 0 {
		return Free, false
	}
	return Edition(i), true
}

// feature is a Pulumi Cloud feature a configuration switch uses, and the
// lowest edition that has it (data/pulumi_pricing.yaml, available_from).
type feature struct {
	name    string
	edition Edition
}

var (
	driftFeature   = feature{"drift detection", Pro}                 // drift-detection: available_from pro
	ttlFeature     = feature{"time-to-live stacks", Pro}             // ttl-stacks: available_from pro
	teamsFeature   = feature{"teams and their permissions", Pro}     // teams: available_from pro
	runnersFeature = feature{"customer-managed runners", Enterprise} // customer-managed-runners: available_from enterprise
)

// Config is the deploy project's configuration.
type Config struct {
	// Organization is the Pulumi Cloud organization of the root stacks.
	Organization string
	// Project is the root project's name. Default "nodeless-eks".
	Project string
	// Repository is the GitHub repository, "owner/name".
	Repository string
	// Branch deploys on push. Default "main".
	Branch string
	// RepoDir is where the root Pulumi.yaml lies in the repository. Default ".".
	RepoDir string
	// Region is deploy/'s aws:region: where its providers call AWS, and
	// the region of every stack that names none.
	Region string
	// Edition is the organization's Pulumi Cloud edition.
	Edition Edition
	// Accounts are the AWS accounts of the fleet, by a short name.
	Accounts map[string]Account
	// Stacks are the root stacks to deploy, by name.
	Stacks map[string]StackSettings
	// ReviewStacks makes ReviewTemplate a review-stack template.
	ReviewStacks bool
	// ReviewTemplate is the template stack (Pulumi.<name>.yaml). Default "pr".
	ReviewTemplate string
	// ReviewStackPrefix starts every review stack's name; the review role
	// trusts stacks so named. Default "pr-".
	ReviewStackPrefix string
	// ReviewAccount and ReviewRegion are where review stacks deploy.
	ReviewAccount, ReviewRegion string
	// ReviewStackTTL gives each review stack a time to live, destroying it
	// ReviewStackTTLHours after its last update.
	ReviewStackTTL      bool
	ReviewStackTTLHours int
	// ReviewClusterNamePrefix starts the cluster name of every review
	// stack; the review role is scoped to it.
	ReviewClusterNamePrefix string
	// DriftDetection schedules drift detection on every named stack.
	DriftDetection bool
	// ProductionTeam and NonProductionTeam are Pulumi Cloud teams given
	// the production and the other stacks (and their environments).
	ProductionTeam, NonProductionTeam string
	// CheckOrganizationDefaults reads the organization's default
	// permissions before anything is registered.
	CheckOrganizationDefaults bool
	// SessionHours is the deploy roles' maximum session. Default 6.
	SessionHours int
	// ImportStacks imports the root stacks and the review template, which
	// exist already, instead of creating them. Default false.
	ImportStacks bool
	// ReviewedCustomRoles are Pulumi Cloud custom roles an organization
	// admin has reviewed and found to reach no production stack; any other
	// custom role held outside ProductionTeam is refused, since deploy/
	// does not evaluate a role's permission tree.
	ReviewedCustomRoles []string
	// RootProjectDir is the root project's directory, relative to deploy/:
	// the stack files there are checked against the fleet before anything
	// is registered. Default "..".
	RootProjectDir string
}

// HasProduction reports whether any stack is a production stack.
func (c *Config) HasProduction() bool {
	return slices.ContainsFunc(sortedKeys(c.Stacks), func(n string) bool { return c.Stacks[n].Production })
}

// HasOthers reports whether any run is not a production run: a
// non-production stack's, or a review stack's.
func (c *Config) HasOthers() bool {
	return c.ReviewStacks || slices.ContainsFunc(sortedKeys(c.Stacks), func(n string) bool { return !c.Stacks[n].Production })
}

var (
	// Pulumi Cloud organization names are lowercase, and the audience a
	// trust policy matches is case-sensitive.
	orgRe      = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
	repoRe     = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	stackRe    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	cronRe     = regexp.MustCompile(`^(\S+\s+){4}\S+$`)
	accountRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)
	accountID  = regexp.MustCompile(`^\d{12}$`)
	arnRe      = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}|aws):(role|policy|oidc-provider)/(.+)$`)
	regionRe   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)
	teamRe     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	prefixRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{2,40}$`)
	clusterRe  = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`) // what EKS accepts for a cluster name
	roleNameRe = regexp.MustCompile(`^[\w+=,.@/-]+$`)
)

// reader reads the project's keys, collecting every problem.
type reader struct {
	cfg  *config.Config
	errs []error
}

func (r *reader) bad(format string, a ...any) { r.errs = append(r.errs, fmt.Errorf(format, a...)) }

func (r *reader) str(key, def string) string {
	if v := r.cfg.Get(key); v != "" {
		return v
	}
	return def
}

func (r *reader) boolean(key string, def bool) bool {
	v := r.cfg.Get(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.bad("%s: %q: want true or false", key, v)
	}
	return b
}

func (r *reader) integer(key string, def, min, max int, why string) int {
	v := r.cfg.Get(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		r.bad("%s %q: want %d-%d%s", key, v, min, max, why)
	}
	return n
}

// object decodes a JSON object strictly: an unknown field is a typo, not a
// default.
func (r *reader) object(key string, into any, want string) {
	raw := r.cfg.Get(key)
	if raw == "" {
		return
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		r.bad("%s: want %s: %v", key, want, err)
	}
}

// loadConfig reads and checks the configuration; every problem is
// reported at once, before anything is registered.
func loadConfig(ctx *pulumi.Context) (*Config, error) {
	r := &reader{cfg: config.New(ctx, "")}
	c := &Config{
		Organization:              r.str("organization", ""),
		Project:                   r.str("project", "nodeless-eks"),
		Repository:                r.str("repository", ""),
		Branch:                    r.str("branch", "main"),
		RepoDir:                   r.str("repoDir", "."),
		Region:                    config.Get(ctx, "aws:region"),
		ReviewStacks:              r.boolean("reviewStacks", false),
		ReviewTemplate:            r.str("reviewTemplateStack", "pr"),
		ReviewStackPrefix:         r.str("reviewStackPrefix", "pr-"),
		ReviewAccount:             r.str("reviewAccount", ""),
		ReviewStackTTL:            r.boolean("reviewStackTtl", false),
		ReviewStackTTLHours:       r.integer("reviewStackTtlHours", 8, 1, 720, " hours"),
		DriftDetection:            r.boolean("driftDetection", false),
		ProductionTeam:            r.str("productionTeam", ""),
		NonProductionTeam:         r.str("nonProductionTeam", ""),
		CheckOrganizationDefaults: r.boolean("checkOrganizationDefaults", true),
		SessionHours:              r.integer("sessionHours", 6, 1, 12, ", IAM's limit for a role session"),
		ImportStacks:              r.boolean("importStacks", false),
		RootProjectDir:            r.str("rootProjectDir", ".."),
	}
	r.object("reviewedCustomRoles", &c.ReviewedCustomRoles, "a list of the names of custom roles an organization admin has reviewed")
	c.ReviewRegion = r.str("reviewRegion", c.Region)
	c.ReviewClusterNamePrefix = r.str("reviewClusterNamePrefix", c.Project+"-"+c.ReviewStackPrefix)
	edition := r.str("edition", "free")
	var editionKnown bool
	c.Edition, editionKnown = parseEdition(edition)
	if !editionKnown {
		r.bad("edition %q: want the organization's Pulumi Cloud edition: %s", edition, strings.Join(editionNames, ", "))
	}
	r.object("accounts", &c.Accounts, `an object of AWS accounts by a short name, each {id, roleArn, oidcProviderArn, deployPolicyArns, sharedWithNonProduction, sharedResourceAccounts}`)
	r.object("stacks", &c.Stacks, "an object of stacks by name, each "+stackFields)

	c.checkProject(r)
	c.checkAccounts(r)
	c.checkStacks(r)
	c.checkReview(r)
	if editionKnown {
		c.checkEdition(r)
	}
	c.checkIsolation(r)
	if len(r.errs) == 0 {
		r.errs = append(r.errs, checkLimits(c)...)
	}
	if err := errors.Join(r.errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return c, nil
}

func (c *Config) checkProject(r *reader) {
	switch {
	case c.Organization == "":
		r.bad("organization: required, the Pulumi Cloud organization of the root stacks")
	case c.Organization != strings.ToLower(c.Organization):
		r.bad("organization %q: Pulumi Cloud organization names are lowercase, and the OIDC audience the deploy roles trust is "+
			"matched case-sensitively; write %q", c.Organization, strings.ToLower(c.Organization))
	case !orgRe.MatchString(c.Organization):
		r.bad("organization %q: want the Pulumi Cloud organization's name: lowercase letters, digits, '-', '_' or '.'", c.Organization)
	}
	if !stackRe.MatchString(c.Project) {
		r.bad("project %q: want the root project's name: letters, digits, '-', '_' or '.' (it goes into the roles' trust, where * would match any project)", c.Project)
	}
	if !repoRe.MatchString(c.Repository) {
		r.bad("repository %q: required, the GitHub repository as owner/name", c.Repository)
	}
	if !regionRe.MatchString(c.Region) {
		r.bad("aws:region %q: want the region deploy/ calls AWS in, and the default region of the stacks, such as \"eu-west-1\"", c.Region)
	}
	if strings.HasPrefix(c.RepoDir, "/") || strings.Contains(c.RepoDir, "..") {
		r.bad("repoDir %q: want a directory inside the repository, such as \".\"", c.RepoDir)
	}
	for key, team := range map[string]string{"productionTeam": c.ProductionTeam, "nonProductionTeam": c.NonProductionTeam} {
		if team != "" && !teamRe.MatchString(team) {
			r.bad("%s %q: want the name of a Pulumi Cloud team (not its display name)", key, team)
		}
	}
}

// arnAccount is the account an IAM ARN names, "" if it is no IAM ARN of
// the given kind.
func arnAccount(arn, kind string) string {
	m := arnRe.FindStringSubmatch(arn)
	if m == nil || m[3] != kind {
		return ""
	}
	return m[2]
}

func (c *Config) checkAccounts(r *reader) {
	if len(c.Accounts) == 0 {
		r.bad(`accounts: name at least one AWS account, such as {"main": {"id": "111122223333"}}`)
	}
	ids := map[string]string{}
	var ambient []string
	for _, name := range sortedKeys(c.Accounts) {
		a := c.Accounts[name]
		if !accountRe.MatchString(name) {
			r.bad("accounts %q: want a short name of lowercase letters, digits and '-' (it names the account's provider)", name)
		}
		if !accountID.MatchString(a.ID) {
			r.bad("accounts.%s.id %q: want the 12-digit AWS account ID", name, a.ID)
		} else if other, dup := ids[a.ID]; dup {
			r.bad("accounts.%s.id %s: accounts.%s has the same ID; one entry per account", name, a.ID, other)
		}
		ids[a.ID] = name
		switch {
		case a.RoleArn == "":
			ambient = append(ambient, name)
		case arnAccount(a.RoleArn, "role") != a.ID:
			r.bad("accounts.%s.roleArn %q: want the ARN of a role in account %s, which deploy/ assumes to create the deploy roles there", name, a.RoleArn, a.ID)
		case !roleNameRe.MatchString(a.RoleArn[strings.Index(a.RoleArn, ":role/")+6:]):
			r.bad("accounts.%s.roleArn %q: not a role name IAM accepts", name, a.RoleArn)
		}
		if a.OidcProviderArn != "" && (arnAccount(a.OidcProviderArn, "oidc-provider") != a.ID || !strings.HasSuffix(a.OidcProviderArn, ":oidc-provider/"+oidcIssuerKey)) {
			r.bad("accounts.%s.oidcProviderArn %q: want the ARN of account %s's api.pulumi.com/oidc provider, arn:aws:iam::%s:oidc-provider/api.pulumi.com/oidc", name, a.OidcProviderArn, a.ID, a.ID)
		}
		for i, id := range a.SharedResourceAccounts {
			if !accountID.MatchString(id) || id == a.ID {
				r.bad("accounts.%s.sharedResourceAccounts[%d] %q: want the 12-digit ID of another account whose shared resources (a shared "+
					"VPC's subnets) the clusters use", name, i, id)
			}
		}
		for i, arn := range a.DeployPolicyArns {
			if acct := arnAccount(arn, "policy"); acct != a.ID && acct != "aws" {
				r.bad("accounts.%s.deployPolicyArns[%d] %q: want a managed policy of account %s (or AWS's)", name, i, arn, a.ID)
			}
		}
	}
	// The credentials deploy/ runs with are for one account; every other
	// account is reached by assuming its roleArn.
	if len(ambient) > 1 {
		r.bad("accounts %s: at most one account may leave roleArn empty (the account the credentials running deploy/ are for); "+
			"give the others the role deploy/ assumes there, arn:aws:iam::<id>:role/%s (deploy/README.md, \"One role per account\")",
			strings.Join(ambient, ", "), AccountRoleName)
	}
}

// accountOf is the account a stack deploys into: the one it names, or the
// only one.
func (c *Config) accountOf(name string) string {
	if name != "" || len(c.Accounts) != 1 {
		return name
	}
	return sortedKeys(c.Accounts)[0]
}

func (c *Config) checkStacks(r *reader) {
	if len(c.Stacks) == 0 {
		r.bad("stacks: name at least one stack of the root project to deploy")
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		switch {
		case !stackRe.MatchString(name):
			r.bad("stacks %q: want a stack name of letters, digits, '-', '_' or '.'", name)
		case name == reviewRoleKey:
			r.bad("stacks %q: deploy-%s is the review stacks' role; rename the stack", name, reviewRoleKey)
		case c.ReviewStacks && (name == c.ReviewTemplate || strings.HasPrefix(name, c.ReviewStackPrefix)):
			r.bad("stacks %q: reserved for review stacks (reviewTemplateStack %q, reviewStackPrefix %q)", name, c.ReviewTemplate, c.ReviewStackPrefix)
		case deployRoleName+name == AccountRoleName:
			r.bad("stacks %q: its deploy role would be %s, the role deploy/ assumes in each account; rename the stack", name, AccountRoleName)
		}
		s.Account = c.accountOf(s.Account)
		if _, ok := c.Accounts[s.Account]; !ok {
			r.bad("stacks.%s.account %q: want one of accounts (%s)", name, s.Account, strings.Join(sortedKeys(c.Accounts), ", "))
		}
		if s.Region == "" {
			s.Region = c.Region
		} else if !regionRe.MatchString(s.Region) {
			r.bad("stacks.%s.region %q: want the stack's aws:region, such as \"eu-west-1\"", name, s.Region)
		}
		if s.Production && s.PreviewPullRequests != nil && *s.PreviewPullRequests {
			r.bad("stacks.%s.previewPullRequests: a production stack's role would then trust pull-request runs, which run the "+
				"pull request's code with production credentials; preview changes on a non-production stack instead", name)
		}
		if s.DriftSchedule != "" && !c.DriftDetection {
			r.bad("stacks.%s.driftSchedule: drift detection is off (driftDetection: false), so the schedule would be ignored", name)
		} else if s.AutoRemediate && !c.DriftDetection {
			r.bad("stacks.%s.autoRemediate: drift detection is off (driftDetection: false), so nothing would remediate", name)
		}
		if s.DriftSchedule == "" {
			s.DriftSchedule = "0 4 * * *"
		} else if !cronRe.MatchString(s.DriftSchedule) {
			r.bad("stacks.%s.driftSchedule %q: want a cron expression of five fields, such as \"0 4 * * *\"", name, s.DriftSchedule)
		}
		if s.ClusterName == "" {
			s.ClusterName = names.DefaultClusterName(c.Project, name)
		} else if !clusterRe.MatchString(s.ClusterName) || len(s.ClusterName) > names.MaxClusterNameLength {
			r.bad("stacks.%s.clusterName %q: want the stack's clusterName, 1-%d letters, digits, '-' or '_'", name, s.ClusterName, names.MaxClusterNameLength)
		}
		if strings.HasPrefix(deployRoleName, s.ClusterName) || strings.HasPrefix(s.ClusterName, deployRoleName) {
			r.bad("stacks.%s.clusterName %q: the deploy roles are named %q...; a cluster name that starts alike would let a run change them", name, s.ClusterName, deployRoleName)
		}
		c.Stacks[name] = s
	}
	// A role's IAM reach is its cluster's name followed by '-' (roles,
	// policies, queues, rules) or '_' (Karpenter's instance profiles): in
	// one account, one stack's name followed by either may not begin
	// another stack's. IAM names are per account, so other accounts are
	// out of reach whatever their names.
	for _, a := range sortedKeys(c.Stacks) {
		for _, b := range sortedKeys(c.Stacks) {
			sa, sb := c.Stacks[a], c.Stacks[b]
			if a == b || sa.Account != sb.Account {
				continue
			}
			if ca, cb := sa.ClusterName, sb.ClusterName; ca == cb || strings.HasPrefix(cb, ca+"-") || strings.HasPrefix(cb, ca+"_") {
				r.bad("stacks.%s.clusterName %q: stack %s's cluster %q in the same account starts with it, so %s's deploy role could change "+
					"%s's roles, queue and instance profiles; give one of them another clusterName", a, ca, b, cb, a, b)
			}
		}
	}
}

func (c *Config) checkReview(r *reader) {
	if !c.ReviewStacks {
		if c.ReviewStackTTL {
			r.bad("reviewStackTtl: there are no review stacks (reviewStacks: false)")
		}
		return
	}
	if !stackRe.MatchString(c.ReviewStackPrefix) {
		r.bad("reviewStackPrefix %q: want the start of a stack name: letters, digits, '-', '_' or '.' (it goes into the review role's trust)", c.ReviewStackPrefix)
	}
	if !stackRe.MatchString(c.ReviewTemplate) {
		r.bad("reviewTemplateStack %q: want a stack name", c.ReviewTemplate)
	}
	c.ReviewAccount = c.accountOf(c.ReviewAccount)
	if _, ok := c.Accounts[c.ReviewAccount]; !ok {
		r.bad("reviewAccount %q: want the account review stacks deploy into, one of accounts (%s)", c.ReviewAccount, strings.Join(sortedKeys(c.Accounts), ", "))
	}
	if !regionRe.MatchString(c.ReviewRegion) {
		r.bad("reviewRegion %q: want the region of the review stacks (their template's aws:region), such as \"eu-west-1\"", c.ReviewRegion)
	}
	if !prefixRe.MatchString(strings.TrimSuffix(c.ReviewClusterNamePrefix, "-")) {
		r.bad("reviewClusterNamePrefix %q: want 3-41 letters, digits, '-' or '_'; the review role may touch only names that start with it", c.ReviewClusterNamePrefix)
	} else if strings.HasPrefix(deployRoleName, c.ReviewClusterNamePrefix) {
		r.bad("reviewClusterNamePrefix %q: the deploy roles are named %q...; review runs could change them", c.ReviewClusterNamePrefix, deployRoleName)
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		if s.Account == c.ReviewAccount && reachesNamesOf(c.ReviewClusterNamePrefix, s.ClusterName) {
			r.bad("stacks.%s.clusterName %q: its resources' names (%q..., %q...) and reviewClusterNamePrefix %q overlap in account %s, so review runs "+
				"could change them; choose another reviewClusterNamePrefix", name, s.ClusterName, s.ClusterName+"-", s.ClusterName+"_", c.ReviewClusterNamePrefix, s.Account)
		}
	}
}

// checkEdition refuses a switch the organization's edition lacks, naming
// the switch and the edition that has it.
func (c *Config) checkEdition(r *reader) {
	need := func(on bool, key string, f feature) {
		if on && c.Edition < f.edition {
			r.bad("%s: %s needs Pulumi Cloud's %s edition or above, and edition is %s; turn it off, or set edition if the "+
				"organization has a higher one", key, f.name, f.edition.Title(), c.Edition.Title())
		}
	}
	need(c.DriftDetection, "driftDetection", driftFeature)
	need(c.ReviewStackTTL, "reviewStackTtl", ttlFeature)
	need(c.ProductionTeam != "", "productionTeam", teamsFeature)
	need(c.NonProductionTeam != "", "nonProductionTeam", teamsFeature)
	for _, name := range sortedKeys(c.Stacks) {
		need(c.Stacks[name].AgentPoolID != "", "stacks."+name+".agentPoolId", runnersFeature)
	}
}

// checkIsolation refuses an account that holds a production stack and a
// run that is not production's (a non-production stack, or review
// stacks), unless the account's entry acknowledges it; review stacks,
// which run a pull request's code, never share production's account; and
// an acknowledgement that no longer holds.
func (c *Config) checkIsolation(r *reader) {
	for _, acct := range sortedKeys(c.Accounts) {
		var prod, others []string
		for _, name := range sortedKeys(c.Stacks) {
			if s := c.Stacks[name]; s.Account == acct && s.Production {
				prod = append(prod, name)
			} else if s.Account == acct {
				others = append(others, name)
			}
		}
		review := c.ReviewStacks && c.ReviewAccount == acct
		shared := len(prod) > 0 && (len(others) > 0 || review)
		var previewing []string
		for _, name := range others {
			if c.Stacks[name].Previews() {
				previewing = append(previewing, name)
			}
		}
		switch {
		case len(prod) > 0 && len(previewing) > 0:
			// A preview runs the pull request's code with the stack's
			// deploy role: no acknowledgement admits it beside production.
			r.bad("accounts.%s: holds production stack(s) %s and stack(s) %s, which preview pull requests: a preview runs the pull "+
				"request's code with a deploy role that reaches every volume, instance and security group of the account; "+
				"sharedWithNonProduction does not admit that. Set stacks.<name>.previewPullRequests: false on %s, or move "+
				"production to an account of its own", acct, strings.Join(prod, ", "), strings.Join(previewing, ", "), strings.Join(previewing, ", "))
		case len(prod) > 0 && review:
			// No acknowledgement admits them: a pull request's code would
			// run with roles that reach production's volumes and network.
			r.bad("reviewAccount %q: account %s holds production stack(s) %s, and review stacks run a pull request's code with "+
				"roles that reach every volume, instance and security group of their account; sharedWithNonProduction does not "+
				"admit them. Give the review stacks an account that holds no production stack", acct, acct, strings.Join(prod, ", "))
		case shared && !c.Accounts[acct].SharedWithNonProduction:
			r.bad("accounts.%s: holds production stack(s) %s and %s; their runs could copy production's EBS volumes, launch "+
				"instances into its subnets and open its security groups (the program's own roles need those rights account-wide). "+
				"Move production to an account of its own, or set accounts.%s.sharedWithNonProduction: true to accept what "+
				"deploy/README.md lists under \"A shared production account\"",
				acct, strings.Join(prod, ", "), strings.Join(others, ", "), acct)
		case !shared && c.Accounts[acct].SharedWithNonProduction:
			r.bad("accounts.%s.sharedWithNonProduction: the account does not hold a production stack together with others; remove the acknowledgement", acct)
		}
	}
}

// runsPullRequestCode reports whether an account hosts a run of a pull
// request's code: review stacks, or a stack that previews pull requests.
func (c *Config) runsPullRequestCode(acct string) bool {
	if c.ReviewStacks && c.ReviewAccount == acct {
		return true
	}
	return slices.ContainsFunc(sortedKeys(c.Stacks), func(n string) bool {
		return c.Stacks[n].Account == acct && c.Stacks[n].Previews()
	})
}

// reachesNamesOf reports whether a role that may touch every name starting
// with prefix reaches a resource of cluster: the cluster itself, or a name
// starting with cluster followed by '-' (roles, policies, queues, rules) or
// '_' (Karpenter's instance profiles).
func reachesNamesOf(prefix, cluster string) bool {
	if strings.HasPrefix(cluster, prefix) {
		return true
	}
	for _, own := range []string{cluster + "-", cluster + "_"} {
		if strings.HasPrefix(own, prefix) || strings.HasPrefix(prefix, own) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
