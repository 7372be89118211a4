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
	trust := providerArn.ApplyT(func(arn string) (string, error) { return TrustPolicy(c, arn) }).(pulumi.StringOutput)
	role, err := iam.NewRole(ctx, "deploy", &iam.RoleArgs{
		Description:      pulumi.Sprintf("Pulumi Deployments and ESC deploy the %s stacks of %s", c.Project, c.Organization),
		AssumeRolePolicy: trust,
		// Covers the longest destroy of the root program (a test holds it
		// to ../testdata/destroy-bound.golden.json).
		MaxSessionDuration: pulumi.Int(c.SessionHours * 3600),
	})
	if err != nil {
		return fmt.Errorf("creating the deploy role: %w", err)
	}
	if len(c.DeployPolicyArns) == 0 {
		doc, err := DeployerPolicy(scope{partition: partition.Partition, region: c.Region, account: caller.AccountId, prefix: c.ClusterNamePrefix})
		if err != nil {
			return err
		}
		policy, err := iam.NewPolicy(ctx, "deploy", &iam.PolicyArgs{
			Description: pulumi.Sprintf("What the %s program creates, for stacks whose clusterName starts with %s", c.Project, c.ClusterNamePrefix),
			Policy:      pulumi.String(doc),
		})
		if err != nil {
			return fmt.Errorf("creating the deployer policy: %w", err)
		}
		if _, err := iam.NewRolePolicyAttachment(ctx, "deploy", &iam.RolePolicyAttachmentArgs{Role: role.Name, PolicyArn: policy.Arn}); err != nil {
			return fmt.Errorf("attaching the deployer policy: %w", err)
		}
	}
	for i, arn := range c.DeployPolicyArns {
		if _, err := iam.NewRolePolicyAttachment(ctx, fmt.Sprintf("deploy-org-%d", i), &iam.RolePolicyAttachmentArgs{
			Role: role.Name, PolicyArn: pulumi.String(arn),
		}); err != nil {
			return fmt.Errorf("attaching %s: %w", arn, err)
		}
	}

	for _, stack := range sortedKeys(c.Stacks) {
		s := c.Stacks[stack]
		if _, err := pulumiservice.NewEnvironment(ctx, "env-"+stack, &pulumiservice.EnvironmentArgs{
			Organization: pulumi.String(c.Organization),
			Project:      pulumi.String(c.Project),
			Name:         pulumi.String(stack),
			Yaml: role.Arn.ApplyT(func(arn string) pulumi.AssetOrArchive {
				return pulumi.NewStringAsset(EnvironmentYAML(arn, stack, c.SessionHours))
			}).(pulumi.AssetOrArchiveOutput),
		}); err != nil {
			return fmt.Errorf("creating the ESC environment of %s: %w", stack, err)
		}
		settings, err := newSettings(ctx, c, stack, role.Arn, false)
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
		if _, err := newSettings(ctx, c, c.ReviewTemplate, role.Arn, true); err != nil {
			return err
		}
	}

	ctx.Export("deployRoleArn", role.Arn)
	ctx.Export("oidcProviderArn", providerArn)
	ctx.Export("stacks", pulumi.ToStringArray(sortedKeys(c.Stacks)))
	return nil
}

// newSettings configures Deployments for one stack, or for the review-stack
// template whose settings every review stack copies.
func newSettings(ctx *pulumi.Context, c *Config, stack string, roleArn pulumi.StringOutput, template bool) (*pulumiservice.DeploymentSettings, error) {
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
			PreviewPullRequests: pulumi.Bool(!template),
			PullRequestTemplate: pulumi.Bool(template),
			Paths:               pulumi.ToStringArray(PathFilters(c.RepoDir)),
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
			PreRunCommands: pulumi.ToStringArray(PreRunCommands(c, template)),
		},
		// Keeps Go modules and plugins; the Go build itself stays cold.
		CacheOptions: &pulumiservice.DeploymentSettingsCacheOptionsArgs{Enable: pulumi.Bool(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the deployment settings of %s: %w", stack, err)
	}
	return settings, nil
}

// PathFilters redeploy a cluster only when the root program or its stack
// files change: not for docs, the deploy project or the example VPC.
func PathFilters(repoDir string) []string {
	root := strings.TrimSuffix(strings.TrimPrefix(repoDir, "./"), "/")
	prefix := ""
	if root != "" && root != "." {
		prefix = root + "/"
	}
	return []string{
		prefix + "**/*.go", prefix + "go.mod", prefix + "go.sum", prefix + "Pulumi.yaml", prefix + "Pulumi.*.yaml",
		"!" + prefix + "deploy/**", "!" + prefix + "examples/**", "!" + prefix + "**/*_test.go", "!" + prefix + "testdata/**",
	}
}

// PreRunCommands fail fast and clearly when the runner lacks what the root
// program needs, and give a review stack its time to live on its first
// update (a TtlSchedule resource names one stack and one time; review
// stacks are named when their pull request opens).
func PreRunCommands(c *Config, template bool) []string {
	cmds := []string{
		`command -v go >/dev/null || { echo "nodeless-eks: the runner image has no Go toolchain; use an image with Go 1.26" >&2; exit 1; }`,
		`command -v aws >/dev/null || { echo "nodeless-eks: the runner image has no AWS CLI; the cluster's kubeconfig runs aws eks get-token" >&2; exit 1; }`,
	}
	if template {
		cmds = append(cmds, ReviewTTLCommand(c.ReviewTemplate, c.ReviewStackTTLHours))
	}
	return cmds
}

// ReviewTTLCommand schedules, on a review stack's update, its destroy and
// removal TTL hours later, through the schedules API with the stack-scoped
// token every Deployments run has (PULUMI_ACCESS_TOKEN, PULUMI_CI_*:
// https://www.pulumi.com/docs/deployments/concepts/settings/environment-variables/).
// Each update moves the time out, so only an abandoned stack expires.
func ReviewTTLCommand(template string, hours int) string {
	return fmt.Sprintf(`if [ "$PULUMI_CI_OPERATION" = update ] && [ "$PULUMI_CI_STACK" != %q ]; then `+
		`curl -fsS -X POST -H "Authorization: token $PULUMI_ACCESS_TOKEN" -H "Content-Type: application/json" `+
		`-d "{\"timestamp\":\"$(date -u -d '+%d hours' +%%Y-%%m-%%dT%%H:%%M:%%SZ)\",\"deleteAfterDestroy\":true}" `+
		`"https://api.pulumi.com/api/stacks/$PULUMI_CI_ORGANIZATION/$PULUMI_CI_PROJECT/$PULUMI_CI_STACK/deployments/ttl/schedules" `+
		`>/dev/null || { echo "nodeless-eks: could not schedule this review stack's time to live" >&2; exit 1; }; fi`, template, hours)
}

// EnvironmentYAML is an ESC environment that logs in to AWS as the deploy
// role through ESC's own OIDC (aws-login), for `pulumi env run
// <org>/<project>/<stack> -- pulumi up` at a laptop, or for a stack file
// that imports it.
func EnvironmentYAML(roleArn, stack string, hours int) string {
	return fmt.Sprintf(`values:
  aws:
    login:
      fn::open::aws-login:
        oidc:
          roleArn: %s
          sessionName: esc-%s
          duration: %dh
  environmentVariables:
    AWS_ACCESS_KEY_ID: ${aws.login.accessKeyId}
    AWS_SECRET_ACCESS_KEY: ${aws.login.secretAccessKey}
    AWS_SESSION_TOKEN: ${aws.login.sessionToken}
`, roleArn, stack, hours)
}
