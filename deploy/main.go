// Command deploy configures Pulumi Deployments for a fleet of stacks of the
// nodeless-eks project over several AWS accounts and regions: in each
// account, Pulumi Cloud as an AWS OIDC identity provider, a deploy role
// and a permissions boundary per stack, trusted only by that stack's runs;
// in Pulumi Cloud, the stacks, their deployment settings (push to deploy,
// previews on pull requests, path filters, dependency caching), ESC
// environments where asked for, drift detection, team permissions, and
// review stacks that destroy themselves when abandoned. Production is
// isolated by account; what Pulumi Cloud must add to that (its default
// permissions) is checked before anything is registered. An administrator
// runs it; Pulumi recommends keeping a stack's deployment settings out of
// the stack's own program.
package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/names"
	"nodeless-eks/internal/pulumicloud"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-pulumiservice/sdk/go/pulumiservice"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(program)
}

// logWarning shows a warning in `pulumi preview` and `pulumi up`; tests
// read it here.
var logWarning = func(ctx *pulumi.Context, msg string) error { return ctx.Log.Warn(msg, nil) }

// accountResources is what the program creates in one AWS account for every role
// there: the provider that reaches it (nil: the credentials deploy/ runs
// with) and the ARN of its Pulumi Cloud OIDC provider.
type accountResources struct {
	name    string
	opts    []pulumi.ResourceOption
	oidcArn pulumi.StringOutput
	// provider reaches the account in deploy/'s region (nil: the
	// credentials deploy/ runs with).
	provider *aws.Provider
}

func program(ctx *pulumi.Context) error {
	c, err := loadConfig(ctx)
	if err != nil {
		return err
	}
	client, source, err := pulumicloud.Load()
	if err != nil {
		return err
	}
	warnings, err := checkOrganization(context.Background(), c, client, source)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(c.Accounts) {
		if c.Accounts[name].SharedWithNonProduction {
			warnings = append(warnings, fmt.Sprintf("accounts.%s.sharedWithNonProduction: non-production runs in account %s can reach "+
				"production's data there; deploy/README.md, \"A shared production account\", lists how", name, c.Accounts[name].ID))
		}
	}
	for _, w := range warnings {
		if err := logWarning(ctx, w); err != nil {
			return err
		}
	}
	partition, err := aws.GetPartition(ctx, nil)
	if err != nil {
		return fmt.Errorf("reading the partition: %w", err)
	}
	if err := checkAmbientAccount(ctx, c); err != nil {
		return err
	}
	stackFiles, err := checkRootStacks(c, partition.Partition)
	if err != nil {
		return err
	}

	// The providers first (configuration only: they create nothing in an
	// account), then the checks that read the accounts through them, then
	// the accounts' resources.
	accounts := map[string]*accountResources{}
	for _, name := range sortedKeys(c.Accounts) {
		a, err := newAccountProvider(ctx, c, name)
		if err != nil {
			return err
		}
		accounts[name] = a
	}
	lookupWarnings, err := checkAccounts(ctx, c, accounts, stackFiles)
	if err != nil {
		return err
	}
	for _, w := range lookupWarnings {
		if err := logWarning(ctx, w); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		if err := newAccountOIDC(ctx, c, accounts[name]); err != nil {
			return err
		}
	}

	roleArns := map[string]pulumi.StringOutput{}
	boundaryArns := map[string]string{}
	for _, r := range Roles(c) {
		a := accounts[r.Account]
		sc := r.scope(c, partition.Partition)
		arn, err := newDeployRole(ctx, c, r, sc, a)
		if err != nil {
			return err
		}
		roleArns[r.Key] = arn
		boundaryArns[r.BoundaryKey] = sc.boundaryArn
	}

	for _, name := range sortedKeys(c.Stacks) {
		if err := newStackDeployments(ctx, c, name, roleArns[name], boundaryArns[name]); err != nil {
			return err
		}
	}
	if c.ReviewStacks {
		template, err := newStack(ctx, c, c.ReviewTemplate)
		if err != nil {
			return err
		}
		if _, err := newSettings(ctx, c, c.ReviewTemplate, RoleOf(c, c.ReviewTemplate), roleArns[reviewRoleKey],
			boundaryArns[c.ReviewTemplate], true, template); err != nil {
			return err
		}
	}

	oidcArns := map[string]pulumi.StringOutput{}
	for name, a := range accounts {
		oidcArns[name] = a.oidcArn
	}
	ctx.Export("deployRoleArns", pulumi.ToStringMapOutput(roleArns))
	ctx.Export("permissionsBoundaryArns", pulumi.ToStringMap(boundaryArns))
	ctx.Export("oidcProviderArns", pulumi.ToStringMapOutput(oidcArns))
	ctx.Export("stacks", pulumi.ToStringArray(sortedKeys(c.Stacks)))
	return nil
}

// checkAmbientAccount holds the account without a roleArn to the
// credentials deploy/ runs with: creating its deploy roles in another
// account would give that account's stacks' runs roles they were never
// meant to have there. And when deploy/ reaches other accounts through
// their roleArn, it refuses credentials of an account where a pull
// request's code runs (review stacks, or a stack that previews pull
// requests): each account role trusts the principal that runs deploy/, so
// that principal must live where no such run creates roles. A fleet of one
// account, reached with the credentials themselves, has no account role
// to protect.
func checkAmbientAccount(ctx *pulumi.Context, c *Config) error {
	caller, err := aws.GetCallerIdentity(ctx, nil)
	if err != nil {
		return fmt.Errorf("reading the caller identity: %w", err)
	}
	var reached []string
	for _, name := range sortedKeys(c.Accounts) {
		if c.Accounts[name].RoleArn != "" {
			reached = append(reached, name)
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		a := c.Accounts[name]
		if a.RoleArn == "" && caller.AccountId != a.ID {
			return fmt.Errorf("accounts.%s.id %s: the credentials deploy/ runs with are for account %s (%s); use credentials of "+
				"account %s, or set accounts.%s.roleArn to a role there that those credentials may assume", name, a.ID, caller.AccountId, caller.Arn, a.ID, name)
		}
		if a.ID == caller.AccountId && c.runsPullRequestCode(name) && len(reached) > 0 {
			return fmt.Errorf("accounts.%s: deploy/ runs with credentials of account %s (%s), where pull-request code runs (review stacks, "+
				"or a stack that previews pull requests), and the %s roles of accounts %s trust those credentials: a run there must "+
				"not share an account with them. Run deploy/ from an account that hosts no such run (a tooling account; "+
				"deploy/README.md, \"One role per account\"), and give accounts.%s a roleArn too",
				name, a.ID, caller.Arn, AccountRoleName, strings.Join(reached, ", "), name)
		}
	}
	return nil
}

// newAccountProvider gives an account its provider: a role deploy/
// assumes there, limited to that account by allowedAccountIds, so that a
// wrong roleArn fails instead of creating roles elsewhere.
func newAccountProvider(ctx *pulumi.Context, c *Config, name string) (*accountResources, error) {
	cfg := c.Accounts[name]
	a := &accountResources{name: name}
	if cfg.RoleArn != "" {
		p, err := aws.NewProvider(ctx, "aws-"+name, &aws.ProviderArgs{
			Region:            pulumi.String(c.Region),
			AllowedAccountIds: pulumi.ToStringArray([]string{cfg.ID}),
			AssumeRole: &aws.ProviderAssumeRoleArgs{
				RoleArn:     pulumi.String(cfg.RoleArn),
				SessionName: pulumi.String("nodeless-eks-deploy"),
			},
		})
		if err != nil {
			return nil, fmt.Errorf("creating the provider of account %s: %w", name, err)
		}
		a.opts = []pulumi.ResourceOption{pulumi.Provider(p)}
		a.provider = p
	}
	return a, nil
}

// newAccountOIDC gives an account its Pulumi Cloud OIDC provider, one per
// account and URL, or reuses the one oidcProviderArn names.
func newAccountOIDC(ctx *pulumi.Context, c *Config, a *accountResources) error {
	name, cfg := a.name, c.Accounts[a.name]
	var aliases []pulumi.Alias
	if cfg.RoleArn == "" {
		// The single-account deploy/ called it pulumi-cloud.
		aliases = []pulumi.Alias{{Name: pulumi.String("pulumi-cloud")}}
	}
	if cfg.OidcProviderArn != "" {
		a.oidcArn = pulumi.String(cfg.OidcProviderArn).ToStringOutput()
		return nil
	}
	// Deployments' tokens carry the organization, ESC's "aws:<org>": the
	// second only where an environment logs in.
	audiences := []string{c.Organization}
	for _, r := range Roles(c) {
		if r.Account == name && r.Environment {
			audiences = append(audiences, "aws:"+c.Organization)
			break
		}
	}
	provider, err := iam.NewOpenIdConnectProvider(ctx, "pulumi-cloud-"+name, &iam.OpenIdConnectProviderArgs{
		Url:           pulumi.String(oidcIssuerURL),
		ClientIdLists: pulumi.ToStringArray(audiences),
		// Names this deploy/ stack as its owner: an account holds one
		// provider per URL, and a later preview (or the recovery of a run
		// cut off while creating it) must tell ours from another's.
		Tags: pulumi.StringMap{OwnerTagKey: pulumi.String(ownerTag(ctx))},
	}, append(a.opts, pulumi.Aliases(aliases))...)
	if err != nil {
		return fmt.Errorf("creating the Pulumi Cloud OIDC provider of account %s: %w", name, err)
	}
	a.oidcArn = provider.Arn
	return nil
}

// newDeployRole creates, in the role's account, the permissions boundary
// that every role its runs create must carry, the role trusted by its
// stack's runs alone, and its deployer policy (in parts of at most a
// managed policy's size) or the account's own policies.
func newDeployRole(ctx *pulumi.Context, c *Config, r deployRole, sc scope, a *accountResources) (pulumi.StringOutput, error) {
	doc, err := WorkloadBoundary(sc).JSON()
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	// Its name starts with deployRoleName, which no deployer policy reaches.
	if _, err := iam.NewPolicy(ctx, "boundary-"+r.BoundaryKey, &iam.PolicyArgs{
		Name:        pulumi.String(BoundaryName(c, r.BoundaryKey)),
		Description: pulumi.Sprintf("Permissions boundary of every role the runs of %s create", describe(r)),
		Policy:      pulumi.String(doc),
	}, a.opts...); err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("creating the permissions boundary of %s: %w", r.BoundaryKey, err)
	}
	trust := a.oidcArn.ApplyT(func(arn string) (string, error) { return TrustPolicy(c, r, arn) }).(pulumi.StringOutput)
	role, err := iam.NewRole(ctx, deployRoleName+r.Key, &iam.RoleArgs{
		Description:      pulumi.Sprintf("Pulumi Deployments deploy role of %s of %s/%s", describe(r), c.Organization, c.Project),
		AssumeRolePolicy: trust,
		// Covers the longest destroy of the root program (a test holds it
		// to ../testdata/destroy-bound.golden.json).
		MaxSessionDuration: pulumi.Int(c.SessionHours * 3600),
	}, a.opts...)
	if err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("creating the deploy role %s: %w", r.Key, err)
	}
	own := c.Accounts[r.Account].DeployPolicyArns
	if len(own) == 0 {
		parts, err := iampolicy.Split(DeployerPolicy(sc), iampolicy.MaxManagedPolicySize)
		if err != nil {
			return pulumi.StringOutput{}, fmt.Errorf("the deployer policy of %s: %w", r.Key, err)
		}
		for i, part := range parts {
			doc, err := part.JSON()
			if err != nil {
				return pulumi.StringOutput{}, err
			}
			name := deployerPolicyName(r, i+1)
			policy, err := iam.NewPolicy(ctx, name, &iam.PolicyArgs{
				Description: pulumi.Sprintf("What the %s program creates, for %s (part %d of %d)", c.Project, describe(r), i+1, len(parts)),
				Policy:      pulumi.String(doc),
			}, a.opts...)
			if err != nil {
				return pulumi.StringOutput{}, fmt.Errorf("creating the deployer policy of %s: %w", r.Key, err)
			}
			if _, err := iam.NewRolePolicyAttachment(ctx, name, &iam.RolePolicyAttachmentArgs{Role: role.Name, PolicyArn: policy.Arn}, a.opts...); err != nil {
				return pulumi.StringOutput{}, fmt.Errorf("attaching the deployer policy of %s: %w", r.Key, err)
			}
		}
	}
	for i, arn := range own {
		// Not "deploy-<key>-..." like the deployer policy's parts, which a
		// stack named "<key>-org" would collide with.
		if _, err := iam.NewRolePolicyAttachment(ctx, fmt.Sprintf("own-policy-%s-%d", r.Key, i), &iam.RolePolicyAttachmentArgs{
			Role: role.Name, PolicyArn: pulumi.String(arn),
		}, append(a.opts, pulumi.Aliases([]pulumi.Alias{{Name: pulumi.Sprintf("%s%s-org-%d", deployRoleName, r.Key, i)}}))...); err != nil {
			return pulumi.StringOutput{}, fmt.Errorf("attaching %s: %w", arn, err)
		}
	}
	return role.Arn, nil
}

// newStackDeployments configures Pulumi Cloud for one named stack: the
// stack, its ESC environment where it has one, its deployment settings,
// its drift schedule, and its team's permissions.
func newStackDeployments(ctx *pulumi.Context, c *Config, name string, roleArn pulumi.StringOutput, boundaryArn string) error {
	s := c.Stacks[name]
	// The settings endpoints answer 404 for a stack that does not exist.
	stackRes, err := newStack(ctx, c, name)
	if err != nil {
		return err
	}
	team := c.NonProductionTeam
	permission := pulumiservice.TeamStackPermissionScopeEdit
	if s.Production {
		team, permission = c.ProductionTeam, pulumiservice.TeamStackPermissionScopeAdmin
	}
	if team != "" {
		// DependsOn: it names the stack by string; its create PATCHes the team with a grant on it, which must exist (pulumiservice pulumiapi/teams.go).
		if _, err := pulumiservice.NewTeamStackPermission(ctx, "team-"+name, &pulumiservice.TeamStackPermissionArgs{
			Organization: pulumi.String(c.Organization), Project: pulumi.String(c.Project), Stack: pulumi.String(name),
			Team: pulumi.String(team), Permission: permission,
		}, pulumi.DependsOn([]pulumi.Resource{stackRes})); err != nil {
			return fmt.Errorf("giving team %s the stack %s: %w", team, name, err)
		}
	}
	if s.HasEnvironment() {
		env, err := pulumiservice.NewEnvironment(ctx, "env-"+name, &pulumiservice.EnvironmentArgs{
			Organization: pulumi.String(c.Organization),
			Project:      pulumi.String(c.Project),
			Name:         pulumi.String(name),
			Yaml: roleArn.ApplyT(func(arn string) pulumi.AssetOrArchive {
				return pulumi.NewStringAsset(EnvironmentYAML(arn, name, c.SessionHours))
			}).(pulumi.AssetOrArchiveOutput),
		})
		if err != nil {
			return fmt.Errorf("creating the ESC environment of %s: %w", name, err)
		}
		if team != "" {
			// DependsOn: it names the environment by string; granted once it exists, revoked before it is deleted (environment: false).
			if _, err := pulumiservice.NewTeamEnvironmentPermission(ctx, "team-env-"+name, &pulumiservice.TeamEnvironmentPermissionArgs{
				Organization: pulumi.String(c.Organization), Project: pulumi.String(c.Project), Environment: pulumi.String(name),
				Team: pulumi.String(team), Permission: pulumiservice.EnvironmentPermissionOpen,
			}, pulumi.DependsOn([]pulumi.Resource{env})); err != nil {
				return fmt.Errorf("giving team %s the environment %s: %w", team, name, err)
			}
		}
	}
	settings, err := newSettings(ctx, c, name, RoleOf(c, name), roleArn, boundaryArn, false, stackRes)
	if err != nil {
		return err
	}
	if !c.DriftDetection {
		return nil
	}
	if _, err := pulumiservice.NewDriftSchedule(ctx, "drift-"+name, &pulumiservice.DriftScheduleArgs{
		Organization:  pulumi.String(c.Organization),
		Project:       pulumi.String(c.Project),
		Stack:         pulumi.String(name),
		ScheduleCron:  pulumi.String(s.DriftSchedule),
		AutoRemediate: pulumi.Bool(s.AutoRemediate),
	},
		// A schedule needs the stack's deployment settings.
		pulumi.DependsOn([]pulumi.Resource{settings})); err != nil {
		return fmt.Errorf("creating the drift schedule of %s: %w", name, err)
	}
	return nil
}

// newStack makes sure a root stack exists in Pulumi Cloud: created here, or
// imported when it exists already (importStacks), and kept when deploy/ is
// destroyed, since it holds a cluster's state.
func newStack(ctx *pulumi.Context, c *Config, stack string) (*pulumiservice.Stack, error) {
	opts := []pulumi.ResourceOption{pulumi.RetainOnDelete(true)}
	if c.ImportStacks {
		opts = append(opts, pulumi.Import(pulumi.ID(c.Organization+"/"+c.Project+"/"+stack)))
	}
	s, err := pulumiservice.NewStack(ctx, "stack-"+stack, &pulumiservice.StackArgs{
		OrganizationName: pulumi.String(c.Organization),
		ProjectName:      pulumi.String(c.Project),
		StackName:        pulumi.String(stack),
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the stack %s: %w", stack, err)
	}
	return s, nil
}

// newSettings configures Deployments for one stack, or for the review-stack
// template whose settings every review stack copies.
func newSettings(ctx *pulumi.Context, c *Config, stack string, r deployRole, roleArn pulumi.StringOutput, boundaryArn string,
	template bool, stackRes pulumi.Resource) (*pulumiservice.DeploymentSettings, error) {
	preRun := pulumi.ToStringArray(PreRunCommands(c, stack, boundaryArn, r, template))
	args := &pulumiservice.DeploymentSettingsArgs{
		Organization: pulumi.String(c.Organization),
		Project:      pulumi.String(c.Project),
		Stack:        pulumi.String(stack),
		SourceContext: &pulumiservice.DeploymentSettingsSourceContextArgs{
			Git: &pulumiservice.DeploymentSettingsGitSourceArgs{
				Branch:  pulumi.String("refs/heads/" + c.Branch),
				RepoDir: pulumi.String(c.RepoDir),
			},
		},
		Vcs: &pulumiservice.DeploymentSettingsVcsArgs{
			Provider:   pulumi.String("github"),
			Repository: pulumi.String(c.Repository),
			// The template itself is never deployed; its copies are.
			DeployCommits:       pulumi.Bool(!template),
			PreviewPullRequests: pulumi.Bool(!template && r.Previews),
			PullRequestTemplate: pulumi.Bool(template),
			Paths:               pulumi.ToStringArray(PathFilters(c.RepoDir, stack)),
		},
		// No Pulumi Cloud role and no PULUMI_ACCESS_TOKEN: a run triggered by
		// a push or a pull request keeps its ephemeral token, admin on its
		// own stack alone (Pulumi's "Deployment Permissions" page). The
		// provider writes the settings whole (PUT), so a role picked in the
		// console is reset on deploy/'s next update
		// (pulumi/pulumi-pulumiservice#823); v1.3.0 cannot set one.
		OperationContext: &pulumiservice.DeploymentSettingsOperationContextArgs{
			// Deployments' own OIDC: it needs no change to the root stack
			// files, and review stacks inherit it with the settings.
			Oidc: &pulumiservice.OperationContextOIDCArgs{
				Aws: &pulumiservice.AWSOIDCConfigurationArgs{
					RoleARN:     roleArn,
					SessionName: pulumi.String("pulumi-deployments"),
					Duration:    pulumi.String(fmt.Sprintf("%dh0m0s", c.SessionHours)),
				},
			},
			EnvironmentVariables: pulumi.ToStringMap(EnvironmentVariables()),
			PreRunCommands:       preRun,
		},
		CacheOptions: &pulumiservice.DeploymentSettingsCacheOptionsArgs{Enable: pulumi.Bool(CachesDependencies(c, stack, template))},
	}
	if pool := c.Stacks[stack].AgentPoolID; !template && pool != "" {
		args.AgentPoolId = pulumi.String(pool)
	}
	settings, err := pulumiservice.NewDeploymentSettings(ctx, "settings-"+stack, args,
		// The settings endpoints answer 404 for a stack that does not exist.
		pulumi.DependsOn([]pulumi.Resource{stackRes}))
	if err != nil {
		return nil, fmt.Errorf("creating the deployment settings of %s: %w", stack, err)
	}
	return settings, nil
}

// GitHubTokenWithheld is the GITHUB_TOKEN of every deployment. Deployments
// otherwise gives each run a token of Pulumi's GitHub App installation,
// "not limited to the source repository" and with "write access to
// repository contents" (Pulumi's GitHub App page, "GitHub token in
// deployments"): a pull request's code could push to the branch production
// deploys from. "An explicit value always overrides the one Pulumi
// provides" (the same page), so the settings give every stack this value,
// which is no credential, and the first pre-run command stops a run whose
// GITHUB_TOKEN is anything else. Nothing the root program or its pre-run
// commands do needs GitHub.
const GitHubTokenWithheld = "withheld-by-nodeless-eks-deploy"

// GitHubTokenVariables are the variables Deployments puts Pulumi's GitHub
// App token in: GITHUB_TOKEN, and on GitHub Enterprise Server also
// GITHUB_ENTERPRISE_TOKEN and GH_ENTERPRISE_TOKEN (Pulumi's GitHub App
// page: "On GitHub Enterprise Server, Pulumi additionally sets GH_HOST,
// GITHUB_ENTERPRISE_TOKEN, and GH_ENTERPRISE_TOKEN"). Each is withheld.
var GitHubTokenVariables = []string{"GITHUB_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GH_ENTERPRISE_TOKEN"}

// EnvironmentVariables are the variables every deployment's settings set.
func EnvironmentVariables() map[string]string {
	env := map[string]string{}
	for _, v := range GitHubTokenVariables {
		env[v] = GitHubTokenWithheld
	}
	return env
}

// CachesDependencies reports whether a stack's deployments use
// Deployments' dependency cache. The cache is the project's: every stack
// with caching on reads and writes the same entries, keyed by the lock
// files, and for Go they hold the module cache, the build cache and
// ~/.pulumi/plugins (Pulumi's dependency-caching page). A run of a pull
// request's code (a preview, a review stack) could write a poisoned build
// or plugin under a key another stack restores: by being the first to
// build a new go.sum, or after clearing the project's cache
// (ClearProjectCache). So caching is off on every stack that runs pull
// request code and on the review template; and off on production, which
// then reads nothing another run wrote, even if a pull-request run
// rewrote its own stack's settings to turn caching on (its ephemeral token
// is admin on its stack, stack_deployment_settings:write included). And
// since the cache is the project's (Pulumi's Deployments FAQ: "Caches are
// shared on the project level"), a pull-request run that turns caching on
// for its own stack, or clears the project's cache, writes what every
// other caching stack restores: so while any stack of the fleet runs pull
// request code, no stack caches. Without previews or review stacks, the
// non-production stacks on Pulumi's hosted runners cache.
func CachesDependencies(c *Config, stack string, template bool) bool {
	if template || c.ReviewStacks {
		return false
	}
	for _, name := range sortedKeys(c.Stacks) {
		if c.Stacks[name].Previews() {
			return false
		}
	}
	s := c.Stacks[stack]
	return !s.Production && s.AgentPoolID == ""
}

// PathFilters deploy a stack when the root program or the stack's own
// stack file changes: not for another stack's file, docs, tests and the
// test kit, the deploy project or the example VPC.
func PathFilters(repoDir, stack string) []string {
	root := strings.TrimSuffix(strings.TrimPrefix(repoDir, "./"), "/")
	prefix := ""
	if root != "" && root != "." {
		prefix = root + "/"
	}
	return []string{
		prefix + "**/*.go", prefix + "go.mod", prefix + "go.sum", prefix + "Pulumi.yaml", prefix + "Pulumi." + stack + ".yaml",
		"!" + prefix + "deploy/**", "!" + prefix + "examples/**", "!" + prefix + "test/**", "!" + prefix + "**/*_test.go",
		"!" + prefix + "testdata/**", "!" + prefix + "testkit/**", "!" + prefix + "docs/**",
	}
}

// PreRunCommands fail fast and clearly when the run holds a GitHub token
// deploy/ did not give it, when the runner lacks what the root program
// needs, or the stack's file does not match what its deploy role allows
// (the boundary every role it creates must carry, the region it is scoped
// to, the cluster it may touch, production or not); resolve what an
// interrupted run left in the state; and give a review stack its time to
// live on each update. Each runs in a shell of its own.
func PreRunCommands(c *Config, stack, boundaryArn string, r deployRole, template bool) []string {
	cmds := []string{
		GitHubTokenCheckCommand(),
		`command -v go >/dev/null || { echo "nodeless-eks: the runner image has no Go toolchain; use an image with Go 1.26" >&2; exit 1; }`,
		`command -v aws >/dev/null || { echo "nodeless-eks: the runner image has no AWS CLI; the cluster's kubeconfig runs aws eks get-token" >&2; exit 1; }`,
		StackCheckCommand(c, boundaryArn, r, template),
		RecoveryCommand(c.RepoDir),
	}
	if template && c.ReviewStackTTL {
		cmds = append(cmds, ReviewTTLCommand(c.RepoDir, c.ReviewTemplate, c.ReviewStackTTLHours))
	}
	return cmds
}

// GitHubTokenCheckCommand stops a run, before any of the repository's code
// runs, whose GITHUB_TOKEN is not the one its settings give it: settings
// that lost the variable (rewritten outside deploy/), or a Deployments that
// no longer lets it override its own.
func GitHubTokenCheckCommand() string {
	var checks []string
	for _, v := range GitHubTokenVariables {
		checks = append(checks, fmt.Sprintf(`[ "${%s-%s}" = %q ]`, v, GitHubTokenWithheld, GitHubTokenWithheld))
	}
	return fmt.Sprintf(`{ %s; } || { echo "nodeless-eks: this run holds in %s a token that deploy/ did not give it `+
		`(Pulumi's GitHub App token, which can push to the repository), so none of the repository's code runs: run pulumi up in deploy/ `+
		`to restore the stack's settings (deploy/README.md, \"What a pull request can reach\")" >&2; exit 1; }`,
		strings.Join(checks, " && "), strings.Join(GitHubTokenVariables, " or "))
}

// StackCheckCommand stops a run whose stack file does not give every role
// its permissions boundary (iamPermissionsBoundary), names another region
// than its deploy role is scoped to (aws:region), another cluster than the
// one its role may touch (clusterName; unset means "<project>-<stack>"),
// or says production where deploy/ does not, or the other way round: its
// role allows none of these, so `pulumi up` would build for minutes and
// fail with an AccessDenied that does not say why. A review stack's
// cluster must start with the review prefix. `pulumi config` reads the
// stack file of the project in the current directory, so it runs in
// repoDir of the checkout, as the TTL command does. `pulumi config get`
// fails both for a key the stack does not set ("configuration key '<key>'
// not found for stack '<stack>'": pulumi/pulumi
// pkg/cmd/pulumi/config/config_get.go) and when the CLI cannot read the
// stack at all; only the first says the value is wrong, so any other
// failure stops the run with what the command wrote.
func StackCheckCommand(c *Config, boundaryArn string, r deployRole, template bool) string {
	read := func(key, unset string) string {
		return fmt.Sprintf(`e="${TMPDIR:-/tmp}/nodeless-eks-config.$$"; `+
			`if got="$({ cd "$(git rev-parse --show-toplevel)"/%[1]q && pulumi config get %[2]s --stack "$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK"; } 2>"$e")"; then :; `+
			`elif grep -qF "configuration key '%[2]s' not found" "$e"; then got=%[3]s; `+
			`else echo "nodeless-eks: could not read %[2]s of stack $PULUMI_CI_STACK, so its value is not checked; the command failed with:" >&2; `+
			`cat "$e" >&2; rm -f "$e"; exit 1; fi; rm -f "$e"; `, c.RepoDir, key, unset)
	}
	fail := func(key, want, why string) string {
		return fmt.Sprintf(`{ echo "nodeless-eks: stack $PULUMI_CI_STACK must set %[1]s to %[2]s (it has \"$got\"): %[3]s. `+
			`Set it in Pulumi.$PULUMI_CI_STACK.yaml, or change the stack's entry in deploy/'s configuration (see deploy/README.md)" >&2; exit 1; }`,
			key, want, why)
	}
	equal := func(key, unset, want, why string) string {
		return read(key, unset) + fmt.Sprintf(`[ "$got" = %q ] || `, want) + fail(key, want, why)
	}
	p := c.Project + ":"
	checks := []string{
		equal(p+"iamPermissionsBoundary", `""`, boundaryArn, "its deploy role creates only roles with that boundary"),
		equal("aws:region", `""`, r.Region, "its deploy role reaches that region only"),
	}
	if template {
		// A review stack's cluster is named after its stack unless its file
		// names one; either way it must start with the prefix.
		checks = append(checks,
			read(p+"clusterName", `"`+c.Project+`-$PULUMI_CI_STACK"`)+fmt.Sprintf(`case "$got" in %q*) ;; *) `, c.ReviewClusterNamePrefix)+
				fail(p+"clusterName", "a name that starts with "+c.ReviewClusterNamePrefix, "the review role may touch only clusters so named")+`;; esac`,
			equal(p+"production", "false", "false", "review stacks run a pull request's code and are never production"))
	} else {
		production := strconv.FormatBool(c.Stacks[r.Stack].Production)
		checks = append(checks,
			equal(p+"clusterName", strconv.Quote(names.DefaultClusterName(c.Project, r.Stack)), r.Cluster, "its deploy role may touch only that cluster's resources"),
			equal(p+"production", "false", production, "deploy/'s entry says production: "+production+", which decides the role's trust and account"))
	}
	return strings.Join(checks, "; ")
}

// RecoveryCommand resolves, before an update, destroy, refresh or drift
// remediation, what a
// run that died left in the stack's state (cmd/recover-pending: pending
// creates imported or cleared, a Helm release's pending record removed,
// an earlier recovery's unread imports read), and stops the run with a
// report when it cannot decide. A run that was not interrupted pays one
// `pulumi stack export` and a substring test of its output: the Go command
// is built only when the state holds "pending_operations", which a state
// without any omits (apitype.DeploymentV3, omitempty), or the recovery's
// mark on an import not yet read (recovery.Unread). A drift remediation
// runs `pulumi up --refresh` and writes state, so it recovers first;
// previews and drift detection write no state and skip it.
func RecoveryCommand(repoDir string) string {
	return fmt.Sprintf(`case "$PULUMI_CI_OPERATION" in update|destroy|refresh|remediate-drift) `+
		`cd "$(git rev-parse --show-toplevel)"/%q || exit 1; `+
		`state="$(pulumi stack export --stack "$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK" 2>&1)" || `+
		`{ echo "nodeless-eks: could not read the stack's state to look for what an interrupted run left: $state" >&2; exit 1; }; `+
		`case "$state" in *'"pending_operations"'*|*'%s'*) go run ./cmd/recover-pending || `+
		`{ echo "nodeless-eks: an interrupted run left pending operations that need a person (see the lines above; docs/recovery.md)" >&2; exit 1; };; esac;; esac`,
		repoDir, recoveryMark)
}

// recoveryMark is the start of recovery.Unread, which the pre-run looks
// for; TestRecoveryCommand holds the two together.
const recoveryMark = "nodeless-eks recovery: imported"

// ReviewTTLCommand gives a review stack, on each update, a time to live of
// hours from now: cmd/review-ttl, in the root program's checkout, finds the
// stack's TTL schedule through the schedules API and moves it, creates it
// when there is none, and removes any extra, so that a stack has one TTL
// schedule and expires only when abandoned. It uses the stack-scoped token
// every Deployments run has (PULUMI_ACCESS_TOKEN, PULUMI_CI_*:
// https://www.pulumi.com/docs/deployments/concepts/settings/environment-variables/).
// The template itself is never given one.
func ReviewTTLCommand(repoDir, template string, hours int) string {
	return fmt.Sprintf(`if [ "$PULUMI_CI_OPERATION" = update ] && [ "$PULUMI_CI_STACK" != %q ]; then `+
		`cd "$(git rev-parse --show-toplevel)"/%q && go run ./cmd/review-ttl -hours %d || `+
		`{ echo "nodeless-eks: could not set this review stack's time to live (see the lines above)" >&2; exit 1; }; fi`,
		template, repoDir, hours)
}

// EnvironmentYAML is an ESC environment that logs in to AWS as the stack's
// deploy role through ESC's own OIDC (aws-login), for `pulumi env run
// <org>/<project>/<stack> -- pulumi up` at a laptop, or for a stack file
// that imports it. Its subject names it as the root environment (see
// ESCSubject), which the role's trust accepts.
func EnvironmentYAML(roleArn, stack string, hours int) string {
	return fmt.Sprintf(`values:
  aws:
    login:
      fn::open::aws-login:
        oidc:
          roleArn: %s
          sessionName: esc-%s
          duration: %dh
          subjectAttributes:
            - rootEnvironment.name
  environmentVariables:
    AWS_ACCESS_KEY_ID: ${aws.login.accessKeyId}
    AWS_SECRET_ACCESS_KEY: ${aws.login.secretAccessKey}
    AWS_SESSION_TOKEN: ${aws.login.sessionToken}
`, roleArn, stack, hours)
}

// BoundaryName is the name of the permissions boundary of a stack (key is
// its name, or the review template's for review stacks), which the stack's
// iamPermissionsBoundary names.
func BoundaryName(c *Config, key string) string {
	return deployRoleName + c.Project + "-" + key + "-boundary"
}

// describe says what a deploy role deploys.
func describe(r deployRole) string {
	if r.ReviewStackPrefix != "" {
		return "the review stacks " + r.ReviewStackPrefix + "*"
	}
	return "stack " + r.Stack
}
