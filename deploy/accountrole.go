package main

import (
	"fmt"

	"nodeless-eks/internal/iampolicy"
)

// AccountRoleName is the role deploy/ assumes in each account it does not
// run in (accounts.<name>.roleArn). An administrator of the account creates
// it once, with that account's own credentials, from the documents in
// account-role/ (AccountRoleTrust and AccountRolePolicy with placeholders),
// instead of AWS Organizations' OrganizationAccountAccessRole, which has
// administrator rights and trusts the management account only
// (Organizations user guide, orgs_manage_accounts_access.html). It starts
// with deployRoleName, which no deployer policy may change
// (KeepTheDeployRoles) and no cluster name may start with.
const AccountRoleName = deployRoleName + "account-access"

// Placeholders of the committed account-role documents, which the setup
// replaces with sed (deploy/README.md, "One role per account").
const (
	placeholderPrincipal = "${DEPLOYER_PRINCIPAL_ARN}"
	placeholderAccount   = "${ACCOUNT_ID}"
	placeholderPartition = "${PARTITION}"
)

// AccountRoleTrust lets the one principal that runs deploy/ (a role of an
// account that hosts no pull-request run, checked at preview) assume the
// account role, and nobody else: no account root, no wildcard. IAM turns a
// role ARN in Principal into the role's unique ID when the policy is saved,
// so a deleted and recreated principal must be written in again
// (IAM user guide, reference_policies_elements_principal.html).
func AccountRoleTrust(principalArn string) iampolicy.Document {
	return iampolicy.New(iampolicy.Statement{
		Sid: "OnlyTheDeployer", Effect: "Allow", Action: "sts:AssumeRole",
		Principal: map[string]any{"AWS": principalArn},
	})
}

// AccountRolePolicy is what deploy/ does in one account through the
// account role, and nothing more: Pulumi Cloud's OIDC provider, the deploy
// roles and their policies (every name starts with deployRoleName), with
// attachments limited to the account's own policies, and the reads of its
// preview checks (the stacks' VPCs, the Spot service-linked role, the
// OIDC providers). It cannot change itself, create any other role, user
// or policy, or attach an AWS managed policy such as AdministratorAccess
// (an account whose deployPolicyArns name one adds it to the ArnLike).
// accountRoleActions, per type deploy/ registers there, is held to it by
// TestAccountRoleCoversWhatDeployCreates.
func AccountRolePolicy(partition, account string) iampolicy.Document {
	arn := func(resource string) string { return fmt.Sprintf("arn:%s:iam::%s:%s", partition, account, resource) }
	self := arn("role/" + AccountRoleName)
	return iampolicy.New(
		iampolicy.Statement{Sid: "PulumiCloudOIDCProvider", Effect: "Allow", Resource: arn("oidc-provider/" + oidcIssuerKey),
			Action: []string{"iam:CreateOpenIDConnectProvider", "iam:GetOpenIDConnectProvider", "iam:DeleteOpenIDConnectProvider",
				"iam:TagOpenIDConnectProvider", "iam:UntagOpenIDConnectProvider", "iam:ListOpenIDConnectProviderTags",
				"iam:UpdateOpenIDConnectProviderThumbprint", "iam:AddClientIDToOpenIDConnectProvider",
				"iam:RemoveClientIDFromOpenIDConnectProvider"}},
		iampolicy.Statement{Sid: "DeployPolicies", Effect: "Allow", Resource: arn("policy/" + deployRoleName + "*"),
			Action: []string{"iam:CreatePolicy", "iam:DeletePolicy", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions",
				"iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:TagPolicy", "iam:UntagPolicy", "iam:ListPolicyTags"}},
		iampolicy.Statement{Sid: "DeployRoles", Effect: "Allow", Resource: arn("role/" + deployRoleName + "*"),
			Action: []string{"iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
				"iam:UpdateAssumeRolePolicy", "iam:TagRole", "iam:UntagRole", "iam:ListRoleTags", "iam:ListAttachedRolePolicies",
				"iam:ListRolePolicies", "iam:ListInstanceProfilesForRole"}},
		iampolicy.Statement{Sid: "AttachTheAccountsOwnPolicies", Effect: "Allow", Resource: arn("role/" + deployRoleName + "*"),
			Action:    []string{"iam:AttachRolePolicy", "iam:DetachRolePolicy"},
			Condition: map[string]any{"ArnLike": map[string]any{"iam:PolicyARN": arn("policy/*")}}},
		// Preview's checks: the VPC a stack file names, the Spot
		// service-linked role, whether the OIDC provider exists. None of
		// these takes a resource-level scope (IAM's service authorization
		// reference).
		iampolicy.Statement{Sid: "PreviewChecks", Effect: "Allow", Resource: "*",
			Action: []string{"ec2:DescribeVpcs", "iam:ListRoles", "iam:ListOpenIDConnectProviders"}},
		// Finding the provider by its URL reads each of the account's.
		iampolicy.Statement{Sid: "FindTheOIDCProvider", Effect: "Allow", Resource: arn("oidc-provider/*"),
			Action: []string{"iam:GetOpenIDConnectProvider"}},
		iampolicy.Statement{Sid: "NotItself", Effect: "Deny", Resource: self, NotAction: []string{"iam:Get*", "iam:List*"}},
	)
}

// accountRoleActions are the IAM actions deploy/ needs per type it
// registers in an account reached through the account role, read from
// what pulumi-aws calls to create, read, update and delete each.
var accountRoleActions = map[string][]string{
	"aws:iam/openIdConnectProvider:OpenIdConnectProvider": {"iam:CreateOpenIDConnectProvider", "iam:GetOpenIDConnectProvider",
		"iam:DeleteOpenIDConnectProvider", "iam:TagOpenIDConnectProvider", "iam:AddClientIDToOpenIDConnectProvider",
		"iam:RemoveClientIDFromOpenIDConnectProvider"},
	"aws:iam/policy:Policy": {"iam:CreatePolicy", "iam:DeletePolicy", "iam:GetPolicy", "iam:GetPolicyVersion",
		"iam:ListPolicyVersions", "iam:CreatePolicyVersion", "iam:DeletePolicyVersion"},
	"aws:iam/role:Role": {"iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateAssumeRolePolicy", "iam:UpdateRole",
		"iam:TagRole", "iam:ListAttachedRolePolicies", "iam:ListRolePolicies", "iam:ListInstanceProfilesForRole"},
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"iam:AttachRolePolicy", "iam:DetachRolePolicy", "iam:ListAttachedRolePolicies"},
	// Lookups.
	"aws:ec2/getVpcs:getVpcs":                                   {"ec2:DescribeVpcs"},
	"aws:iam/getRoles:getRoles":                                 {"iam:ListRoles"},
	"aws:iam/getOpenIdConnectProvider:getOpenIdConnectProvider": {"iam:GetOpenIDConnectProvider", "iam:ListOpenIDConnectProviders"},
}
