package main

import (
	"testing"

	"nodeless-eks/testkit/fakeaws"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadConfig: each configuration that could never be safe, or never
// work, is refused before anything is read or registered, naming the key.
func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"an organization in capitals", map[string]string{"organization": "My-Org"}, `organization "My-Org": Pulumi Cloud organization names are lowercase`},
		{"no deployer", map[string]string{"deployer": ""}, `deployer "": required, the ARN of the role that runs deploy/`},
		{"a deployer that is a user", map[string]string{"deployer": "arn:aws:iam::210987654321:user/admin"}, `deployer "arn:aws:iam::210987654321:user/admin": required, the ARN of the role`},
		{"no service principal", map[string]string{"servicePrincipal": ""}, `servicePrincipal "": required, the login of the service principal`},
		{"a misspelt stack field", map[string]string{"stacks": `{"prod": {"acount": "prod"}}`}, `stacks: want an object of stacks by name`},
		{"production sharing its account", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "staging": {"account": "prod"}}`},
			`stacks.staging.account "prod": holds production stack prod`},
		{"review stacks in production's account", map[string]string{"reviewStacks": `{"account": "prod"}`},
			`reviewStacks.account "prod": holds stack prod, and a review run, which runs a pull request's code`},
		{"production on a customer-managed pool", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "agentPoolId": "p1"},
			"staging": {"account": "dev"}}`}, `stacks.prod.agentPoolId "p1": production runs on Pulumi's hosted pool`},
		{"a template named as a review stack", map[string]string{"reviewStacks": `{"account": "review", "template": "pr-template"}`},
			`reviewStacks.template "pr-template": starts with the review prefix "pr-"`},
		{"one cluster name the start of another's", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true},
			"a": {"account": "dev", "clusterName": "team"}, "b": {"account": "dev", "clusterName": "team-b"}}`}, `stacks.a.clusterName "team": stack b's cluster "team-b"`},
		{"review stacks beside staging", map[string]string{"reviewStacks": `{"account": "dev"}`},
			`reviewStacks.account "dev": holds stack staging, and a review run, which runs a pull request's code, may create roles`},
		{"one team for both", map[string]string{"operatorsTeam": "platform"}, `operatorsTeam "platform": the production team too`},
		{"a stack named as a review stack", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "pr-1": {"account": "dev"}}`},
			`stacks "pr-1": reserved for review stacks`},
		{"a stack named as the review identity", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "review": {"account": "dev"}}`},
			`stacks "review": deploy-review is a role deploy/ keeps for itself`},
		{"a cluster named like a deploy role", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "clusterName": "deploy-x"}}`},
			`stacks.prod.clusterName "deploy-x": the deploy roles are named "deploy-"`},
		{"a review cluster prefix with no room for the pull request's number", map[string]string{"reviewStacks": `{"account": "review",
			"clusterPrefix": "nodeless-eks-platform-prod-pr-"}`}, `reviewStacks.clusterPrefix "nodeless-eks-platform-prod-pr-": 30 characters`},
		{"a session IAM refuses", map[string]string{"sessionHours": "13"}, `sessionHours "13": want 1-12`},
		{"a schedule that is no cron", map[string]string{"schedule": "hourly"}, `schedule "hourly": want a cron expression`},
		{"an account ID of 11 digits", map[string]string{"accounts": `{"prod": {"id": "11112222333"}, "dev": {"id": "123456789012"}}`},
			`accounts.prod.id "11112222333": want the 12-digit AWS account ID`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := loadConfigOf(t, "Pulumi.example.yaml", nil)
			acct := fleetAWS(c)
			rec, res := acct.RunStackFile(t, project, "admin", "Pulumi.example.yaml", tt.set, program)
			rec.RequireRefused(t, res.Err, tt.want)
			assert.Contains(t, res.Err.Error(), "invalid stack configuration")
		})
	}
}

// TestReviewDefaults: review stacks get one for each labelled pull request,
// named pr-*, with clusters named nodeless-eks-pr-*, for 8 hours after
// their last update; an empty reviewStacks is none.
func TestReviewDefaults(t *testing.T) {
	c := configOf(t, "Pulumi.example.yaml", nil)
	require.NotNil(t, c.Review)
	assert.Equal(t, Review{Account: "review", Region: "eu-west-1", Template: "pr", Prefix: "pr-", ClusterPrefix: "nodeless-eks-pr-",
		Labels: &[]string{"review-stack"}, TTLHours: 8}, *c.Review)
	c = configOf(t, "Pulumi.example.yaml", map[string]string{"reviewStacks": `{"account": "review", "labels": []}`})
	assert.Equal(t, []string{}, *c.Review.Labels, "every pull request")
	c = configOf(t, "Pulumi.example.yaml", map[string]string{"reviewStacks": `{}`})
	assert.Nil(t, c.Review)
}

// TestAccountsOIDCProvider: each account's Pulumi Cloud OIDC provider,
// which its administrator creates, must exist and admit the organization.
// An account where it does not gets no role changes, the other accounts
// do, every stack's settings are restored (a role's ARN is fixed), and the
// run fails naming the command that fixes it. The account role's trust
// and other roles' trusts are the account administrator's, and are not
// read (THREATS.md).
func TestAccountsOIDCProvider(t *testing.T) {
	tests := []struct {
		name    string
		account string
		change  func(a *fakeaws.Account)
		want    string
	}{
		{"no OIDC provider", "dev", func(a *fakeaws.Account) { a.Others[devAccount].PulumiOIDC = nil },
			"aws iam create-open-id-connect-provider --url https://api.pulumi.com/oidc --client-id-list my-org"},
		{"a provider for another organization", "prod", func(a *fakeaws.Account) { a.Others[prodAccount].PulumiOIDC.ClientIDs = []string{"other-org"} },
			"admits the audiences [\"other-org\"], not the organization my-org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
			tt.change(w.aws)
			rec, res := w.run(t, false)
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), tt.want)
			for _, stack := range fleetOf(w.c) {
				r := RoleOf(w.c, stack)
				_, registered := rec.Find("aws:iam/role:Role", deployRoleName+r.Key)
				assert.Equal(t, r.Account != tt.account, registered, "%s's role is changed only in a readable account", stack)
				assert.Equal(t, "arn:aws:iam::"+w.c.Accounts[r.Account].ID+":role/"+deployRoleName+r.Key,
					field(w.settingsOf(t, stack), "operationContext.oidc.aws.roleArn"), "%s's settings are restored", stack)
			}
		})
	}
	t.Run("another role trusting Pulumi Cloud is the account administrator's", func(t *testing.T) {
		w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
		w.aws.Others[prodAccount].Roles["esc"] = `{"Statement":[{"Principal":{"Federated":"arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"}}]}`
		_, res := w.run(t, true)
		require.NoError(t, res.Err)
	})
}
