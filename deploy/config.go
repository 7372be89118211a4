package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"nodeless-eks/internal/iampolicy"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/internal/names"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// StackSettings is how one stack of the root project is deployed.
type StackSettings struct {
	// DriftSchedule is the cron of drift detection. Default "0 4 * * *".
	DriftSchedule string `json:"driftSchedule,omitempty"`
	// AutoRemediate runs `pulumi up` when drift is found. Default false.
	AutoRemediate bool `json:"autoRemediate,omitempty"`
	// Production gives the stack a deploy role of its own, trusted by its
	// runs only, and turns pull-request previews off by default.
	Production bool `json:"production,omitempty"`
	// PreviewPullRequests previews pull requests on the stack, running
	// their code with the stack's role. Default: on for non-production
	// stacks, off for production ones (preview them through a staging
	// stack).
	PreviewPullRequests *bool `json:"previewPullRequests,omitempty"`
	// ClusterName is the stack's clusterName, which scopes its role's
	// permissions. Default "<project>-<stack>", what an unset clusterName
	// gives the root program.
	ClusterName string `json:"clusterName,omitempty"`
}

// Previews reports whether the stack previews pull requests.
func (s StackSettings) Previews() bool {
	if s.PreviewPullRequests != nil {
		return *s.PreviewPullRequests
	}
	return !s.Production
}

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
	// Region is where the root stacks deploy; it scopes the deploy policy.
	Region string
	// Stacks are the root stacks to deploy, by name.
	Stacks map[string]StackSettings
	// ReviewStacks makes ReviewTemplate a review-stack template.
	ReviewStacks bool
	// ReviewTemplate is the template stack (Pulumi.<name>.yaml). Default "pr".
	ReviewTemplate string
	// ReviewStackPrefix starts every review stack's name; the deploy role
	// trusts stacks so named. Default "pr-".
	ReviewStackPrefix string
	// ReviewStackTTLHours destroys a review stack this long after its last
	// update. Default 8.
	ReviewStackTTLHours int
	// ReviewClusterNamePrefix starts the cluster name of every review
	// stack; the review role is scoped to it. Default
	// "<project>-<reviewStackPrefix>", what an unset clusterName gives a
	// review stack.
	ReviewClusterNamePrefix string
	// OidcProviderArn reuses an existing Pulumi Cloud OIDC provider.
	OidcProviderArn string
	// DeployPolicyArns are attached to the deploy role instead of the
	// policy this project writes.
	DeployPolicyArns []string
	// SessionHours is the deploy role's maximum session. Default 6.
	SessionHours int
	// ImportStacks imports the root stacks and the review template, which
	// exist already, instead of creating them. Default false.
	ImportStacks bool
}

var (
	// Pulumi Cloud organization names are lowercase, and the audience a
	// trust policy matches is case-sensitive.
	orgRe        = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
	repoRe       = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	stackRe      = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	cronRe       = regexp.MustCompile(`^(\S+\s+){4}\S+$`)
	arnPolicyRe  = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::(\d{12}|aws):policy/[\w+=,.@/-]+$`)
	arnOidcRe    = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::\d{12}:oidc-provider/api\.pulumi\.com/oidc$`)
	regionRe     = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d$`)
	namePrefixRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{2,40}$`)
	// clusterNameRe is what EKS accepts for a cluster name.
	clusterNameRe = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`)
)

// loadConfig reads and checks the configuration; every problem is
// reported at once, before anything is registered.
func loadConfig(ctx *pulumi.Context) (*Config, error) {
	cfg := config.New(ctx, "")
	c := &Config{
		Organization:      cfg.Get("organization"),
		Project:           or(cfg.Get("project"), "nodeless-eks"),
		Repository:        cfg.Get("repository"),
		Branch:            or(cfg.Get("branch"), "main"),
		RepoDir:           or(cfg.Get("repoDir"), "."),
		Region:            config.Get(ctx, "aws:region"),
		ReviewTemplate:    or(cfg.Get("reviewTemplateStack"), "pr"),
		ReviewStackPrefix: or(cfg.Get("reviewStackPrefix"), "pr-"),
		OidcProviderArn:   cfg.Get("oidcProviderArn"),
	}
	c.ReviewClusterNamePrefix = or(cfg.Get("reviewClusterNamePrefix"), c.Project+"-"+c.ReviewStackPrefix)
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if raw := cfg.Get("stacks"); raw != "" {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Stacks); err != nil {
			bad("stacks: want an object of stacks by name, each {driftSchedule, autoRemediate, production, previewPullRequests, clusterName}: %v", err)
		}
	}
	if raw := cfg.Get("deployPolicyArns"); raw != "" {
		if err := cfg.TryObject("deployPolicyArns", &c.DeployPolicyArns); err != nil {
			bad("deployPolicyArns: want a list of policy ARNs: %v", err)
		}
	}
	var err error
	if c.ReviewStacks, err = boolOr(cfg.Get("reviewStacks"), false); err != nil {
		bad("reviewStacks: %v", err)
	}
	if c.ImportStacks, err = boolOr(cfg.Get("importStacks"), false); err != nil {
		bad("importStacks: %v", err)
	}
	if c.ReviewStackTTLHours, err = intOr(cfg.Get("reviewStackTtlHours"), 8); err != nil || c.ReviewStackTTLHours < 1 || c.ReviewStackTTLHours > 720 {
		bad("reviewStackTtlHours %q: want 1-720 hours", cfg.Get("reviewStackTtlHours"))
	}
	if c.SessionHours, err = intOr(cfg.Get("sessionHours"), 6); err != nil || c.SessionHours < 1 || c.SessionHours > 12 {
		bad("sessionHours %q: want 1-12, IAM's limit for a role session", cfg.Get("sessionHours"))
	}

	switch {
	case c.Organization == "":
		bad("organization: required, the Pulumi Cloud organization of the root stacks")
	case c.Organization != strings.ToLower(c.Organization):
		bad("organization %q: Pulumi Cloud organization names are lowercase, and the OIDC audience the deploy roles trust is "+
			"matched case-sensitively; write %q", c.Organization, strings.ToLower(c.Organization))
	case !orgRe.MatchString(c.Organization):
		bad("organization %q: want the Pulumi Cloud organization's name: lowercase letters, digits, '-', '_' or '.'", c.Organization)
	}
	if !stackRe.MatchString(c.Project) {
		bad("project %q: want the root project's name: letters, digits, '-', '_' or '.' (it goes into the roles' trust, where * would match any project)", c.Project)
	}
	if c.ReviewStacks && !stackRe.MatchString(c.ReviewStackPrefix) {
		bad("reviewStackPrefix %q: want the start of a stack name: letters, digits, '-', '_' or '.' (it goes into the review role's trust)", c.ReviewStackPrefix)
	}
	if !repoRe.MatchString(c.Repository) {
		bad("repository %q: required, the GitHub repository as owner/name", c.Repository)
	}
	if !regionRe.MatchString(c.Region) {
		bad("aws:region %q: want the region of the root stacks, such as \"eu-west-1\"", c.Region)
	}
	if strings.HasPrefix(c.RepoDir, "/") || strings.Contains(c.RepoDir, "..") {
		bad("repoDir %q: want a directory inside the repository, such as \".\"", c.RepoDir)
	}
	if !namePrefixRe.MatchString(strings.TrimSuffix(c.ReviewClusterNamePrefix, "-")) {
		bad("reviewClusterNamePrefix %q: want 3-41 letters, digits, '-' or '_'; the review role may touch only names that start with it", c.ReviewClusterNamePrefix)
	} else if c.ReviewStacks && strings.HasPrefix(deployRoleName, c.ReviewClusterNamePrefix) {
		bad("reviewClusterNamePrefix %q: the deploy roles are named %q...; review runs could change them", c.ReviewClusterNamePrefix, deployRoleName)
	}
	if len(c.Stacks) == 0 {
		bad("stacks: name at least one stack of the root project to deploy")
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		switch {
		case !stackRe.MatchString(name):
			bad("stacks %q: want a stack name of letters, digits, '-', '_' or '.'", name)
		case c.ReviewStacks && (name == c.ReviewTemplate || strings.HasPrefix(name, c.ReviewStackPrefix)):
			bad("stacks %q: reserved for review stacks (reviewTemplateStack %q, reviewStackPrefix %q)", name, c.ReviewTemplate, c.ReviewStackPrefix)
		case s.Production && (name == "nonprod" || name == "review"):
			bad("stacks %q: a production stack's deploy role is named after it, and %s%s is the shared role of other stacks; rename the stack", name, deployRoleName, name)
		case s.Production && len(names.Autoname(deployRoleName+name)) > maxRoleNameLength:
			bad("stacks %q: a production stack's deploy role is named %s%s plus pulumi's 8-character suffix, and IAM allows %d characters; "+
				"use a stack name of at most %d", name, deployRoleName, name, maxRoleNameLength, maxRoleNameLength-len(deployRoleName)-names.AutonameSuffixLength)
		}
		if s.Production && s.PreviewPullRequests != nil && *s.PreviewPullRequests {
			bad("stacks.%s.previewPullRequests: a production stack's role would then trust pull-request runs, which run the "+
				"pull request's code with production credentials; preview changes on a non-production stack instead", name)
		}
		if s.DriftSchedule == "" {
			s.DriftSchedule = "0 4 * * *"
		} else if !cronRe.MatchString(s.DriftSchedule) {
			bad("stacks.%s.driftSchedule %q: want a cron expression of five fields, such as \"0 4 * * *\"", name, s.DriftSchedule)
		}
		if s.ClusterName == "" {
			s.ClusterName = names.DefaultClusterName(c.Project, name)
		} else if !clusterNameRe.MatchString(s.ClusterName) || len(s.ClusterName) > names.MaxClusterNameLength {
			bad("stacks.%s.clusterName %q: want the stack's clusterName, 1-%d letters, digits, '-' or '_'", name, s.ClusterName, names.MaxClusterNameLength)
		}
		if c.ReviewStacks && reachesNamesOf(c.ReviewClusterNamePrefix, s.ClusterName) {
			bad("stacks.%s.clusterName %q: its resources' names (%q..., %q...) and reviewClusterNamePrefix %q overlap, so review runs "+
				"could change them; choose another reviewClusterNamePrefix", name, s.ClusterName, s.ClusterName+"-", s.ClusterName+"_", c.ReviewClusterNamePrefix)
		}
		if strings.HasPrefix(deployRoleName, s.ClusterName) || strings.HasPrefix(s.ClusterName, deployRoleName) {
			bad("stacks.%s.clusterName %q: the deploy roles are named %q...; a cluster name that starts alike would let a run change them", name, s.ClusterName, deployRoleName)
		}
		c.Stacks[name] = s
	}
	// A role's IAM reach is its clusters' names followed by '-' (roles,
	// policies, queues, rules) or '_' (Karpenter's instance profiles): one
	// stack's name followed by either may not begin another stack's name
	// unless both share the non-production role anyway.
	for _, a := range sortedKeys(c.Stacks) {
		for _, b := range sortedKeys(c.Stacks) {
			ca, cb := c.Stacks[a].ClusterName, c.Stacks[b].ClusterName
			sameRole := !c.Stacks[a].Production && !c.Stacks[b].Production
			if a == b || sameRole {
				continue
			}
			if ca == cb || strings.HasPrefix(cb, ca+"-") || strings.HasPrefix(cb, ca+"_") {
				bad("stacks.%s.clusterName %q: stack %s's cluster %q starts with it, so %s's deploy role could change %s's roles, "+
					"queue and instance profiles; give one of them another clusterName", a, ca, b, cb, a, b)
			}
		}
	}
	if c.ReviewStacks && !stackRe.MatchString(c.ReviewTemplate) {
		bad("reviewTemplateStack %q: want a stack name", c.ReviewTemplate)
	}
	if c.OidcProviderArn != "" && !arnOidcRe.MatchString(c.OidcProviderArn) {
		bad("oidcProviderArn %q: want the ARN of the api.pulumi.com/oidc provider, arn:aws:iam::<account>:oidc-provider/api.pulumi.com/oidc", c.OidcProviderArn)
	}
	for i, arn := range c.DeployPolicyArns {
		if !arnPolicyRe.MatchString(arn) {
			bad("deployPolicyArns[%d] %q: want a managed policy ARN", i, arn)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, checkTrustSizes(c)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid stack configuration:\n%w", err)
	}
	return c, nil
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

// checkTrustSizes refuses a configuration whose deploy role would have a
// trust policy longer than IAM accepts (each named non-production stack
// adds its subjects to the shared role's trust), a deployer policy in more
// parts than IAM attaches, or a boundary over a managed policy's size.
func checkTrustSizes(c *Config) []error {
	var errs []error
	// The longest provider ARN any partition gives.
	const providerArn = "arn:aws-us-gov:iam::123456789012:oidc-provider/api.pulumi.com/oidc"
	for _, r := range Roles(c) {
		doc, err := TrustPolicy(c, r, providerArn)
		if err != nil {
			errs = append(errs, err)
		} else if len(doc) > maxTrustPolicyLength {
			errs = append(errs, fmt.Errorf("stacks: the trust policy of %s%s would be %d characters, and IAM accepts %d by default: "+
				"give some of its stacks (%s) their own role with production: true, or fewer stacks per project",
				deployRoleName, r.Key, len(doc), maxTrustPolicyLength, strings.Join(r.Stacks, ", ")))
		}
		if len(c.DeployPolicyArns) == 0 {
			parts, err := iampolicy.Split(DeployerPolicy(scope{partition: "aws-us-gov", region: c.Region, account: "123456789012",
				clusters: r.Clusters, prefix: r.ClusterPrefix, boundaryArns: boundaryArnsOf(c, r, "aws-us-gov", "123456789012")}),
				iampolicy.MaxManagedPolicySize)
			if err != nil {
				errs = append(errs, err)
			} else if len(parts) > maxPoliciesPerRole {
				errs = append(errs, fmt.Errorf("stacks: the deployer policy of %s%s would need %d managed policies, and IAM attaches %d "+
					"to a role by default: give some of its stacks (%s) their own role with production: true",
					deployRoleName, r.Key, len(parts), maxPoliciesPerRole, strings.Join(r.Stacks, ", ")))
			}
		}
	}
	// A boundary reaches one cluster; only a very long name or prefix
	// could outgrow a managed policy.
	for _, b := range Boundaries(c) {
		size := WorkloadBoundary(scope{partition: "aws-us-gov", region: c.Region, account: "123456789012",
			clusters: b.Clusters, prefix: b.Prefix}).Size()
		if size > iampolicy.MaxManagedPolicySize {
			errs = append(errs, fmt.Errorf("stacks: the permissions boundary %s would be %d characters, and IAM accepts %d: shorten its cluster name",
				BoundaryName(c, b.Key), size, iampolicy.MaxManagedPolicySize))
		}
	}
	return errs
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func boolOr(v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q: want true or false", v)
	}
	return b, nil
}

func intOr(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
