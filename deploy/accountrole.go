package main

// AccountRoleName is the role deploy/ assumes in every account of the
// fleet, by this fixed name. An administrator of the account creates
// it once, with that account's own credentials, from the documents in
// account-role/ (AccountRoleTrust and AccountRolePolicy, in
// accountrole_test.go, with placeholders),
// instead of AWS Organizations' OrganizationAccountAccessRole, which has
// administrator rights and trusts the management account only
// (Organizations user guide, orgs_manage_accounts_access.html). It starts
// with deployRoleName, which no deployer policy may change
// (KeepTheDeployRoles) and no cluster name may start with.
const AccountRoleName = deployRoleName + "account-access"
