package main

import (
	"fmt"

	"nodeless-eks/internal/iampolicy"
)

// The account role's documents are committed in account-role/, which an
// account's administrator applies; TestAccountRoleDocuments writes them
// from these (-update) and holds them to these.

// AccountRoleTrust lets the one principal that runs deploy/ (a role of an
// account that hosts no pull-request run) assume the
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
// account role: the deploy roles and their policies (every name starts
// with deployRoleName), and the read of Pulumi Cloud's OIDC provider.
// Plainly: it is administrator-equivalent in its account,
// since it may create a role named deploy-<anything> with any trust and
// attach to it a policy deploy-<anything> with any content; that is why
// it trusts the one principal that runs deploy/ and nothing else
// (AccountRoleTrust, which the account's administrator writes and
// deploy/ does not read back: THREATS.md). It cannot change
// itself, nor attach a policy that is not deploy/'s (AdministratorAccess
// included). accountRoleActions, per type deploy/ registers there, is
// held to it by TestAccountRoleCoversWhatDeployCreates.
func AccountRolePolicy(partition, account string) iampolicy.Document {
	arn := func(resource string) string { return fmt.Sprintf("arn:%s:iam::%s:%s", partition, account, resource) }
	return iampolicy.New(
		// The account's administrator creates it, with this role
		// (deploy/README.md, step 3); deploy/ reads it.
		iampolicy.Statement{Sid: "ReadPulumiCloudOIDCProvider", Effect: "Allow", Resource: arn("oidc-provider/" + oidcIssuerKey),
			Action: "iam:GetOpenIDConnectProvider"},
		iampolicy.Statement{Sid: "DeployPolicies", Effect: "Allow", Resource: arn("policy/" + deployRoleName + "*"),
			Action: []string{"iam:CreatePolicy", "iam:DeletePolicy", "iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions",
				"iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:TagPolicy", "iam:UntagPolicy", "iam:ListPolicyTags"}},
		iampolicy.Statement{Sid: "DeployRoles", Effect: "Allow", Resource: arn("role/" + deployRoleName + "*"),
			Action: []string{"iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
				"iam:UpdateAssumeRolePolicy", "iam:TagRole", "iam:UntagRole", "iam:ListRoleTags", "iam:ListAttachedRolePolicies",
				"iam:ListRolePolicies", "iam:ListInstanceProfilesForRole"}},
		iampolicy.Statement{Sid: "AttachOnlyDeploysPolicies", Effect: "Allow", Resource: arn("role/" + deployRoleName + "*"),
			Action:    []string{"iam:AttachRolePolicy", "iam:DetachRolePolicy"},
			Condition: map[string]any{"ArnLike": map[string]any{"iam:PolicyARN": arn("policy/" + deployRoleName + "*")}}},
		iampolicy.Statement{Sid: "NotItself", Effect: "Deny", Resource: arn("role/" + AccountRoleName), NotAction: []string{"iam:Get*", "iam:List*"}},
	)
}
