package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// OwnerTagKey tags what deploy/ creates once per account (Pulumi Cloud's
// OIDC provider) with the deploy/ stack that owns it, so that a check, or
// the recovery of a run cut off while creating it, tells it from one that
// someone else created.
const OwnerTagKey = "nodeless-eks/deploy-stack"

// ownerTag is this deploy/ stack, "<organization>/<project>/<stack>".
func ownerTag(ctx *pulumi.Context) string {
	return ctx.Organization() + "/" + ctx.Project() + "/" + ctx.Stack()
}

// spotRolePath is where the EC2 Spot service-linked role lives
// (AWSServiceRoleForEC2Spot).
const spotRolePath = "/aws-service-role/spot.amazonaws.com/"

// checkAccounts reads, in each account and region of the fleet, what
// deploy/ and the stacks assume is there and no deploy role may create:
// the VPC each stack file names (examples/vpc creates one), the EC2 Spot
// service-linked role, and the state of Pulumi Cloud's OIDC provider
// (none, or this stack's, where deploy/ creates it; the one
// oidcProviderArn names, where it is reused). What is missing is refused,
// naming the file or key and the fix; a lookup the credentials may not
// make is a warning, since the check is only as good as they allow.
func checkAccounts(ctx *pulumi.Context, c *Config, accounts map[string]*accountResources, stacks []rootStack) ([]string, error) {
	var warnings []string
	var errs []error
	providers := map[string]pulumi.InvokeOption{}
	providerIn := func(account, region string) (pulumi.InvokeOption, error) {
		key := account + "/" + region
		if p, ok := providers[key]; ok {
			return p, nil
		}
		a := accounts[account]
		var p pulumi.ProviderResource
		switch {
		case region == c.Region && a.provider != nil:
			p = a.provider
		case region == c.Region:
			providers[key] = nil
			return nil, nil
		default:
			args := &aws.ProviderArgs{Region: pulumi.String(region), AllowedAccountIds: pulumi.ToStringArray([]string{c.Accounts[account].ID})}
			if arn := c.Accounts[account].RoleArn; arn != "" {
				args.AssumeRole = &aws.ProviderAssumeRoleArgs{RoleArn: pulumi.String(arn), SessionName: pulumi.String("nodeless-eks-deploy")}
			}
			np, err := aws.NewProvider(ctx, "aws-"+account+"-"+region, args)
			if err != nil {
				return nil, fmt.Errorf("creating the provider of account %s in %s: %w", account, region, err)
			}
			p = np
		}
		providers[key] = pulumi.Provider(p)
		return providers[key], nil
	}
	opts := func(o pulumi.InvokeOption) []pulumi.InvokeOption {
		if o == nil {
			return nil
		}
		return []pulumi.InvokeOption{o}
	}

	for _, s := range stacks {
		o, err := providerIn(s.Role.Account, s.Role.Region)
		if err != nil {
			return nil, err
		}
		where := fmt.Sprintf("account %s (%s) in %s", s.Role.Account, c.Accounts[s.Role.Account].ID, s.Role.Region)
		vpcs, err := ec2.GetVpcs(ctx, &ec2.GetVpcsArgs{Filters: []ec2.GetVpcsFilter{{Name: "tag:Name", Values: []string{s.VpcName}}}}, opts(o)...)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%s: could not look for VPC %q in %s (ec2:DescribeVpcs): %v", s.File, s.VpcName, where, err))
		case len(vpcs.Ids) == 0:
			errs = append(errs, fmt.Errorf("%s, %s:vpcName: %q: %s has no VPC of that name, and no deploy role may create one: run "+
				"examples/vpc there with vpcName %q (deploy/README.md, step 5), or name the stack's VPC", s.File, c.Project, s.VpcName, where, s.VpcName))
		case len(vpcs.Ids) > 1:
			errs = append(errs, fmt.Errorf("%s, %s:vpcName: %q: %s has %d VPCs of that name (%s), so the root program's lookup is ambiguous; "+
				"rename one of them", s.File, c.Project, s.VpcName, where, len(vpcs.Ids), strings.Join(vpcs.Ids, ", ")))
		}
	}

	for _, name := range sortedKeys(c.Accounts) {
		acct := c.Accounts[name]
		if !slices.ContainsFunc(Roles(c), func(r deployRole) bool { return r.Account == name }) {
			continue
		}
		o, err := providerIn(name, c.Region)
		if err != nil {
			return nil, err
		}
		roles, err := iam.GetRoles(ctx, &iam.GetRolesArgs{PathPrefix: pulumi.StringRef(spotRolePath)}, opts(o)...)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("accounts.%s: could not look for the EC2 Spot service-linked role (iam:ListRoles): %v", name, err))
		case len(roles.Names) == 0:
			warnings = append(warnings, fmt.Sprintf("accounts.%s: account %s has no EC2 Spot service-linked role, so Karpenter's spot launches "+
				"fall back to on-demand, at the on-demand price; create it once, with the account's own credentials: aws iam "+
				"create-service-linked-role --aws-service-name spot.amazonaws.com (deploy/README.md, step 6)", name, acct.ID))
		}
		warning, err := checkOIDCProvider(ctx, c, name, ownerTag(ctx), opts(o))
		if err != nil {
			errs = append(errs, err)
		} else if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the fleet's accounts lack what deploy/ and the stacks need:\n%w", err)
	}
	return warnings, nil
}

// checkOIDCProvider reads Pulumi Cloud's OIDC provider of an account: IAM
// holds one per URL, so where deploy/ creates it there must be none, or
// the one this stack tagged as its own; where oidcProviderArn reuses one,
// it must exist. pulumi-aws answers a lookup that finds nothing with an
// error (its aws_iam_openid_connect_provider data source), which is told
// from a refusal by its text: anything else is a warning, not an answer.
func checkOIDCProvider(ctx *pulumi.Context, c *Config, name, owner string, opts []pulumi.InvokeOption) (string, error) {
	acct := c.Accounts[name]
	args := &iam.LookupOpenIdConnectProviderArgs{Url: pulumi.StringRef(oidcIssuerURL)}
	if acct.OidcProviderArn != "" {
		args = &iam.LookupOpenIdConnectProviderArgs{Arn: pulumi.StringRef(acct.OidcProviderArn)}
	}
	found, err := iam.LookupOpenIdConnectProvider(ctx, args, opts...)
	absent := err != nil && notFound(err)
	switch {
	case err != nil && !absent:
		return fmt.Sprintf("accounts.%s: could not read Pulumi Cloud's OIDC provider (iam:GetOpenIDConnectProvider): %v", name, err), nil
	case acct.OidcProviderArn != "" && absent:
		return "", fmt.Errorf("accounts.%s.oidcProviderArn %s: account %s has no such provider; remove oidcProviderArn to let deploy/ "+
			"create it, or name the account's provider of %s", name, acct.OidcProviderArn, acct.ID, oidcIssuerURL)
	case acct.OidcProviderArn != "" || absent:
		return "", nil
	case found.Tags[OwnerTagKey] == owner:
		return "", nil
	}
	return "", fmt.Errorf("accounts.%s: account %s already has Pulumi Cloud's OIDC provider %s, which this deploy/ stack did not create "+
		"(its tag %s is %q, not %q), and IAM refuses a second one for the URL: set accounts.%s.oidcProviderArn to %s to reuse it; "+
		"or, if an earlier version of this deploy/ stack created it (it did not tag it), tag it: aws iam tag-open-id-connect-provider "+
		"--open-id-connect-provider-arn %s --tags Key=%s,Value=%s",
		name, acct.ID, found.Arn, OwnerTagKey, found.Tags[OwnerTagKey], owner, name, found.Arn, found.Arn, OwnerTagKey, owner)
}

// notFound reports whether a lookup's error says that nothing matched.
func notFound(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "nosuchentity") || strings.Contains(msg, "not found") || strings.Contains(msg, "no matching") ||
		strings.Contains(msg, "empty result")
}
