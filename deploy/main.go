// Command deploy configures Pulumi Deployments for the stacks of the
// nodeless-eks project: Pulumi Cloud as an AWS OIDC identity provider, a
// deploy role trusted only by those stacks' runs and ESC environments, an
// ESC environment per stack for people at a laptop, deployment settings
// (push to deploy, previews on pull requests, path filters, dependency
// caching), drift detection, and review stacks that destroy themselves
// when abandoned. An administrator runs it once; Pulumi recommends keeping
// a stack's deployment settings out of the stack's own program.
package main

import (
	"fmt"
	"nodeless-eks/internal/iampolicy"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-pulumiservice/sdk/go/pulumiservice"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(program)
}

func program(ctx *pulumi.Context) error {
	c, err := loadConfig(ctx)
	if err != nil {
		return err
	}
	caller, err := aws.GetCallerIdentity(ctx, nil)
	if err != nil {
		return fmt.Errorf("reading caller identity: %w", err)
	}
	partition, err := aws.GetPartition(ctx, nil)
	if err != nil {
		return fmt.Errorf("reading partition: %w", err)
	}

	providerArn := pulumi.String(c.OidcProviderArn).ToStringOutput()
	if c.OidcProviderArn == "" {
		// One provider per account and URL; reuse it with oidcProviderArn
		// where another project created it (both audiences must be on it).
		provider, err := iam.NewOpenIdConnectProvider(ctx, "pulumi-cloud", &iam.OpenIdConnectProviderArgs{
			Url: pulumi.String(oidcIssuerURL),
			// Deployments' tokens carry the organization, ESC's "aws:<org>".
			ClientIdLists: pulumi.ToStringArray([]string{c.Organization, "aws:" + c.Organization}),
		})
		if err != nil {
			return fmt.Errorf("creating the Pulumi Cloud OIDC provider: %w", err)
		}
		providerArn = provider.Arn
	}
	// The permissions boundaries every role a run creates must carry; their
	// names start with deployRoleName, which no deployer policy reaches.
	for _, b := range Boundaries(c) {
		doc, err := WorkloadBoundary(scope{partition: partition.Partition, region: c.Region, account: caller.AccountId,
			clusters: b.Clusters, prefix: b.Prefix}).JSON()
		if err != nil {
			return err
		}
		if _, err := iam.NewPolicy(ctx, "boundary-"+b.Key, &iam.PolicyArgs{
			Name:        pulumi.String(BoundaryName(c, b.Key)),
			Description: pulumi.Sprintf("Permissions boundary of every role the runs of %s create", b.Key),
			Policy:      pulumi.String(doc),
		}); err != nil {
			return fmt.Errorf("creating the permissions boundary of %s: %w", b.Key, err)
		}
	}

	roleArns := map[string]pulumi.StringOutput{}
	for _, r := range Roles(c) {
		trust := providerArn.ApplyT(func(arn string) (string, error) { return TrustPolicy(c, r, arn) }).(pulumi.StringOutput)
		role, err := iam.NewRole(ctx, deployRoleName+r.Key, &iam.RoleArgs{
			Description:      pulumi.Sprintf("Pulumi Deployments and ESC deploy %s of the %s stacks of %s", describe(r), c.Project, c.Organization),
			AssumeRolePolicy: trust,
			// Covers the longest destroy of the root program (a test holds it
			// to ../testdata/destroy-bound.golden.json).
			MaxSessionDuration: pulumi.Int(c.SessionHours * 3600),
		})
		if err != nil {
			return fmt.Errorf("creating the deploy role %s: %w", r.Key, err)
		}
		roleArns[r.Key] = role.Arn
		if len(c.DeployPolicyArns) == 0 {
			// The deployer policy outgrows one managed policy (6,144
			// characters): attach it in parts.
			parts, err := iampolicy.Split(DeployerPolicy(scope{partition: partition.Partition, region: c.Region, account: caller.AccountId,
				clusters: r.Clusters, prefix: r.ClusterPrefix, boundaryArns: boundaryArnsOf(c, r, partition.Partition, caller.AccountId)}),
				iampolicy.MaxManagedPolicySize)
			if err != nil {
				return fmt.Errorf("the deployer policy of %s: %w", r.Key, err)
			}
			for i, part := range parts {
				doc, err := part.JSON()
				if err != nil {
					return err
				}
				name := fmt.Sprintf("%s%s-%d", deployRoleName, r.Key, i+1)
				policy, err := iam.NewPolicy(ctx, name, &iam.PolicyArgs{
					Description: pulumi.Sprintf("What the %s program creates, for %s (part %d of %d)", c.Project, describe(r), i+1, len(parts)),
					Policy:      pulumi.String(doc),
				})
				if err != nil {
					return fmt.Errorf("creating the deployer policy of %s: %w", r.Key, err)
				}
				if _, err := iam.NewRolePolicyAttachment(ctx, name, &iam.RolePolicyAttachmentArgs{Role: role.Name, PolicyArn: policy.Arn}); err != nil {
					return fmt.Errorf("attaching the deployer policy of %s: %w", r.Key, err)
				}
			}
		}
		for i, arn := range c.DeployPolicyArns {
			if _, err := iam.NewRolePolicyAttachment(ctx, fmt.Sprintf("%s%s-org-%d", deployRoleName, r.Key, i), &iam.RolePolicyAttachmentArgs{
				Role: role.Name, PolicyArn: pulumi.String(arn),
			}); err != nil {
				return fmt.Errorf("attaching %s: %w", arn, err)
			}
		}
	}

	for _, stack := range sortedKeys(c.Stacks) {
		s := c.Stacks[stack]
		roleArn := roleArns[RoleOf(c, stack)]
		// The settings endpoints answer 404 for a stack that does not exist.
		stackRes, err := newStack(ctx, c, stack)
		if err != nil {
			return err
		}
		if _, err := pulumiservice.NewEnvironment(ctx, "env-"+stack, &pulumiservice.EnvironmentArgs{
			Organization: pulumi.String(c.Organization),
			Project:      pulumi.String(c.Project),
			Name:         pulumi.String(stack),
			Yaml: roleArn.ApplyT(func(arn string) pulumi.AssetOrArchive {
				return pulumi.NewStringAsset(EnvironmentYAML(arn, stack, c.SessionHours))
			}).(pulumi.AssetOrArchiveOutput),
		}); err != nil {
			return fmt.Errorf("creating the ESC environment of %s: %w", stack, err)
		}
		settings, err := newSettings(ctx, c, stack, s.Previews(), roleArn, BoundaryArn(c, partition.Partition, caller.AccountId, stack), false, stackRes)
		if err != nil {
			return err
		}
		if _, err := pulumiservice.NewDriftSchedule(ctx, "drift-"+stack, &pulumiservice.DriftScheduleArgs{
			Organization:  pulumi.String(c.Organization),
			Project:       pulumi.String(c.Project),
			Stack:         pulumi.String(stack),
			ScheduleCron:  pulumi.String(s.DriftSchedule),
			AutoRemediate: pulumi.Bool(s.AutoRemediate),
		},
			// A schedule needs the stack's deployment settings.
			pulumi.DependsOn([]pulumi.Resource{settings})); err != nil {
			return fmt.Errorf("creating the drift schedule of %s: %w", stack, err)
		}
	}
	if c.ReviewStacks {
		template, err := newStack(ctx, c, c.ReviewTemplate)
		if err != nil {
			return err
		}
		if _, err := newSettings(ctx, c, c.ReviewTemplate, true, roleArns["review"], BoundaryArn(c, partition.Partition, caller.AccountId, c.ReviewTemplate), true, template); err != nil {
			return err
		}
	}

	ctx.Export("deployRoleArns", pulumi.ToStringMapOutput(roleArns))
	boundaryArns := map[string]string{}
	for _, b := range Boundaries(c) {
		boundaryArns[b.Key] = BoundaryArn(c, partition.Partition, caller.AccountId, b.Key)
	}
	ctx.Export("permissionsBoundaryArns", pulumi.ToStringMap(boundaryArns))
	ctx.Export("oidcProviderArn", providerArn)
	ctx.Export("stacks", pulumi.ToStringArray(sortedKeys(c.Stacks)))
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
func newSettings(ctx *pulumi.Context, c *Config, stack string, previews bool, roleArn pulumi.StringOutput, boundaryArn string,
	template bool, stackRes pulumi.Resource) (*pulumiservice.DeploymentSettings, error) {
	preRun := pulumi.ToStringArray(PreRunCommands(c, boundaryArn, template))
	settings, err := pulumiservice.NewDeploymentSettings(ctx, "settings-"+stack, &pulumiservice.DeploymentSettingsArgs{
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
			PreviewPullRequests: pulumi.Bool(!template && previews),
			PullRequestTemplate: pulumi.Bool(template),
			Paths:               pulumi.ToStringArray(PathFilters(c.RepoDir, stack)),
		},
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
			PreRunCommands: preRun,
		},
		// Dependency caching keeps, for Go, the module cache and the build
		// cache, keyed by go.sum, on Pulumi-hosted runners
		// (https://www.pulumi.com/docs/deployments/concepts/settings/dependency-caching/):
		// a warm run links the program instead of compiling it.
		CacheOptions: &pulumiservice.DeploymentSettingsCacheOptionsArgs{Enable: pulumi.Bool(true)},
	},
		// The settings endpoints answer 404 for a stack that does not exist.
		pulumi.DependsOn([]pulumi.Resource{stackRes}))
	if err != nil {
		return nil, fmt.Errorf("creating the deployment settings of %s: %w", stack, err)
	}
	return settings, nil
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

// PreRunCommands fail fast and clearly when the runner lacks what the root
// program needs, or the stack lacks the permissions boundary its deploy
// role requires of every role it creates, and give a review stack its time
// to live on each update. Each runs in a shell of its own.
func PreRunCommands(c *Config, boundaryArn string, template bool) []string {
	cmds := []string{
		`command -v go >/dev/null || { echo "nodeless-eks: the runner image has no Go toolchain; use an image with Go 1.26" >&2; exit 1; }`,
		`command -v aws >/dev/null || { echo "nodeless-eks: the runner image has no AWS CLI; the cluster's kubeconfig runs aws eks get-token" >&2; exit 1; }`,
		BoundaryCheckCommand(c.RepoDir, c.Project, boundaryArn),
	}
	if template {
		cmds = append(cmds, ReviewTTLCommand(c.RepoDir, c.ReviewTemplate, c.ReviewStackTTLHours))
	}
	return cmds
}

// BoundaryCheckCommand stops a run whose stack does not give every role
// its own permissions boundary (iamPermissionsBoundary): its deploy role may
// create no role without it, so `pulumi up` would fail at the first role
// with an AccessDenied that does not say why. `pulumi config` reads the
// stack file of the project in the current directory, so it runs in
// repoDir of the checkout, as the TTL command does.
func BoundaryCheckCommand(repoDir, project, boundaryArn string) string {
	return fmt.Sprintf(`got="$(cd "$(git rev-parse --show-toplevel)"/%[3]q && pulumi config get %[1]s:iamPermissionsBoundary --stack "$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK" 2>/dev/null)"; `+
		`[ "$got" = %[2]q ] || { echo "nodeless-eks: stack $PULUMI_CI_STACK must set %[1]s:iamPermissionsBoundary to %[2]s (it has \"$got\"): `+
		`its deploy role creates only roles with that boundary. Add it to Pulumi.$PULUMI_CI_STACK.yaml (see deploy/README.md)" >&2; exit 1; }`,
		project, boundaryArn, repoDir)
}

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
	return "stack(s) " + strings.Join(r.Stacks, ", ")
}
