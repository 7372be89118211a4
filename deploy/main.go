// Command deploy configures Pulumi Deployments for a fleet of stacks of the
// nodeless-eks project over several AWS accounts, safe by construction:
// every deployment runs as a Pulumi Cloud identity it declares, which
// reaches its own stack alone and writes no settings (roles.go); only
// review stacks, in an account production does not share, run a pull
// request's code (config.go); each stack's AWS deploy role is trusted by
// its stack's runs alone and capped by a permissions boundary (policy.go;
// the documents are the program's, internal/deployerpolicy). What it rests
// on and cannot declare it reads (organization.go); a failed precondition
// fails the run after the restore, never before. README.md is the
// checklist.
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"nodeless-eks/internal/deployerpolicy"
	"nodeless-eks/internal/iampolicy"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(program)
}

// logWarning and logError show a warning or an error in `pulumi preview`
// and `pulumi up`; tests read them here.
var (
	logWarning = func(ctx *pulumi.Context, msg string) error { return ctx.Log.Warn(msg, nil) }
	logError   = func(ctx *pulumi.Context, msg string) error { return ctx.Log.Error(msg, nil) }
)

func program(ctx *pulumi.Context) error {
	c, err := loadConfig(ctx)
	if err != nil {
		return err
	}
	api, err := loadCloudAPI()
	if err != nil {
		return err
	}
	org, findings := readOrganization(context.Background(), c, api)
	partition, err := aws.GetPartition(ctx, nil)
	if err != nil {
		return fmt.Errorf("reading the partition: %w", err)
	}

	// An account whose OIDC provider cannot be read gets no role changes;
	// its stacks' settings still name their roles, whose ARNs are fixed.
	roleArns := map[string]pulumi.StringOutput{}
	for _, name := range sortedKeys(c.Accounts) {
		a, finding, err := newAccount(ctx, c, name, partition.Partition)
		if err != nil {
			return err
		}
		findings = append(findings, finding)
		for _, r := range Roles(c) {
			switch {
			case r.Account != name:
			case finding != nil:
				roleArns[r.Key] = pulumi.Sprintf("arn:%s:iam::%s:role/%s%s", partition.Partition, c.Accounts[name].ID, deployRoleName, r.Key)
			default:
				if roleArns[r.Key], err = newDeployRole(ctx, c, r, r.scope(c, partition.Partition), a); err != nil {
					return err
				}
			}
		}
	}
	if err := newCloud(ctx, c, api, org, roleArns, partition.Partition); err != nil {
		return err
	}
	ctx.Export("deployRoleArns", pulumi.ToStringMapOutput(roleArns))
	// Each stack's Pulumi.<stack>.yaml, as the checklist has a team commit
	// it (step 6).
	files := pulumi.StringMap{}
	for _, r := range Roles(c) {
		stack := r.Stack
		if stack == "" {
			stack = c.Review.Template
		}
		files[stack] = pulumi.String(StackFile(c, stack, partition.Partition))
	}
	ctx.Export("stackFiles", files)
	// Everything above is registered and awaited whatever the findings
	// (RunWithContext waits for every registration and output before it
	// returns the program's error: pulumi sdk v3.276.0 go/pulumi/run.go).
	// The engine performs no delete in a run whose program fails
	// (deployment_executor.go runs its post steps only after a program that
	// ended well), so a removal waits for the first run without findings.
	// Each is logged too: a failed restore's error replaces the program's.
	if err := errors.Join(findings...); err != nil {
		for _, f := range findings {
			if f != nil {
				_ = logError(ctx, f.Error())
			}
		}
		return fmt.Errorf("deploy/ restored what it declares, but what it rests on does not hold, and nothing it no longer declares "+
			"is deleted until it does:\n%w", err)
	}
	return nil
}

// account is how the program reaches one AWS account: the provider that
// assumes its account role, and the ARN of its Pulumi Cloud OIDC provider.
type account struct {
	opts    []pulumi.ResourceOption
	oidcArn string
}

// newAccount reaches an account through AccountRoleName and reads the
// account's Pulumi Cloud OIDC provider; a provider that cannot be read,
// or does not admit the organization, is a finding.
func newAccount(ctx *pulumi.Context, c *Config, name, partition string) (a *account, finding, err error) {
	id := c.Accounts[name].ID
	p, err := aws.NewProvider(ctx, "aws-"+name, &aws.ProviderArgs{
		Region:            pulumi.String(c.Region),
		AllowedAccountIds: pulumi.ToStringArray([]string{id}),
		AssumeRole: &aws.ProviderAssumeRoleArgs{
			RoleArn:     pulumi.String(fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, id, AccountRoleName)),
			SessionName: pulumi.String("nodeless-eks-deploy"),
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the provider of account %s: %w", name, err)
	}
	a = &account{opts: []pulumi.ResourceOption{pulumi.Provider(p)}}
	// Pulumi Cloud's OIDC provider: IAM holds one per URL, which ESC or a
	// quick start may use too, so the account's administrator creates it
	// and deploy/ reads it, by its fixed ARN.
	a.oidcArn = fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", partition, id, oidcIssuerKey)
	oidc, err := iam.LookupOpenIdConnectProvider(ctx, &iam.LookupOpenIdConnectProviderArgs{Arn: &a.oidcArn}, pulumi.Provider(p))
	create := fmt.Sprintf("aws iam create-open-id-connect-provider --url %s --client-id-list %s", oidcIssuerURL, c.Organization)
	switch {
	case err != nil:
		return a, fmt.Errorf("accounts.%s: reading Pulumi Cloud's OIDC provider %s: %w; if the account has none, create it (deploy/README.md, "+
			"step 3): %s", name, a.oidcArn, err, create), nil
	case !slices.Contains(oidc.ClientIdLists, c.Organization):
		return a, fmt.Errorf("accounts.%s: Pulumi Cloud's OIDC provider %s admits the audiences %q, not the organization %s, which "+
			"Deployments' tokens carry: aws iam add-client-id-to-open-id-connect-provider --open-id-connect-provider-arn %s --client-id %s",
			name, a.oidcArn, oidc.ClientIdLists, c.Organization, a.oidcArn, c.Organization), nil
	}
	return a, nil, nil
}

// newDeployRole creates, in the role's account, the permissions boundary
// that every role its runs create must carry, the role deploy-<key>
// trusted by its stack's runs alone, and its deployer policy in parts of
// at most a managed policy's size.
func newDeployRole(ctx *pulumi.Context, c *Config, r deployRole, sc deployerpolicy.Scope, a *account) (pulumi.StringOutput, error) {
	doc, err := deployerpolicy.WorkloadBoundary(sc).JSON()
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	// Its name starts with deployRoleName, which no deployer policy reaches.
	if _, err := iam.NewPolicy(ctx, "boundary-"+r.Key, &iam.PolicyArgs{
		Name:        pulumi.String(BoundaryName(c, r.Key)),
		Description: pulumi.Sprintf("Permissions boundary of every role the runs of %s create", describe(r)),
		Policy:      pulumi.String(doc),
	}, a.opts...); err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("creating the permissions boundary of %s: %w", r.Key, err)
	}
	trust, err := TrustPolicy(c, r, a.oidcArn)
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	role, err := iam.NewRole(ctx, deployRoleName+r.Key, &iam.RoleArgs{
		Name:             pulumi.String(deployRoleName + r.Key),
		Description:      pulumi.Sprintf("Pulumi Deployments deploy role of %s of %s/%s", describe(r), c.Organization, c.Project),
		AssumeRolePolicy: pulumi.String(trust),
		// Covers the longest destroy of the root program (a test holds it
		// to ../testdata/destroy-bound.golden.json).
		MaxSessionDuration: pulumi.Int(c.SessionHours * 3600),
	}, a.opts...)
	if err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("creating the deploy role %s: %w", r.Key, err)
	}
	parts, err := iampolicy.Split(deployerpolicy.DeployerPolicy(sc), iampolicy.MaxManagedPolicySize)
	if err != nil {
		return pulumi.StringOutput{}, fmt.Errorf("the deployer policy of %s: %w", r.Key, err)
	}
	for i, part := range parts {
		doc, err := part.JSON()
		if err != nil {
			return pulumi.StringOutput{}, err
		}
		name := fmt.Sprintf("%s%s-%d", deployRoleName, r.Key, i+1)
		policy, err := iam.NewPolicy(ctx, name, &iam.PolicyArgs{
			Name:        pulumi.String(name),
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
	return role.Arn, nil
}

// describe says what a deploy role deploys.
func describe(r deployRole) string {
	if r.ReviewStackPrefix != "" {
		return "the review stacks " + r.ReviewStackPrefix + "*"
	}
	return "stack " + r.Stack
}
