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
		{"no deployer", map[string]string{"deployer": ""}, `deployer "": required, the ARN of the role or user that runs deploy/`},
		{"a misspelt stack field", map[string]string{"stacks": `{"prod": {"acount": "prod"}}`}, `stacks: want an object of stacks by name`},
		{"production sharing its account", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "staging": {"account": "prod"}}`},
			`stacks.staging.account "prod": holds production stack prod`},
		{"review stacks in production's account", map[string]string{"reviewStacks": `{"account": "prod"}`},
			`reviewStacks.account "prod": holds stack prod, and a review run, which runs a pull request's code`},
		{"production sharing its runner pool", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "agentPoolId": "p1"},
			"staging": {"account": "dev", "agentPoolId": "p1"}}`}, `stacks.staging.agentPoolId "p1": production stack prod runs on that pool`},
		{"review stacks on production's pool", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "agentPoolId": "p1"},
			"staging": {"account": "dev"}}`, "reviewStacks": `{"account": "review", "agentPoolId": "p1"}`, "operatorsTeam": ""},
			`reviewStacks.agentPoolId "p1": production stack prod runs on that pool`},
		{"one cluster name the start of another's", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true},
			"a": {"account": "dev", "clusterName": "team"}, "b": {"account": "dev", "clusterName": "team-b"}}`}, `stacks.a.clusterName "team": stack b's cluster "team-b"`},
		{"review stacks beside staging", map[string]string{"reviewStacks": `{"account": "dev"}`},
			`reviewStacks.account "dev": holds stack staging, and a review run, which runs a pull request's code, may create roles`},
		{"operators who could move a run to production's pool", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true,
			"agentPoolId": "p1"}, "staging": {"account": "dev"}}`}, `operatorsTeam "developers": a production stack runs on a pool of its own`},
		{"one team for both", map[string]string{"operatorsTeam": "platform"}, `operatorsTeam "platform": the production team too`},
		{"a stack named as a review stack", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "pr-1": {"account": "dev"}}`},
			`stacks "pr-1": reserved for review stacks`},
		{"a stack named as the review identity", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true}, "review": {"account": "dev"}}`},
			`stacks "review": deploy-review is a role deploy/ keeps for itself`},
		{"a cluster named like a deploy role", map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "clusterName": "deploy-x"}}`},
			`stacks.prod.clusterName "deploy-x": the deploy roles are named "deploy-"`},
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

// TestAccountsAreReadBack: each account's role must trust the deployer
// alone, its Pulumi Cloud OIDC provider must exist and admit the
// organization, and in an account that holds production no other role may
// trust Pulumi Cloud's tokens.
func TestAccountsAreReadBack(t *testing.T) {
	tests := []struct {
		name   string
		change func(a *fakeaws.Account)
		want   string
	}{
		{"an account role that trusts more", func(a *fakeaws.Account) {
			a.Others[devAccount].Roles[AccountRoleName] = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole","Principal":{"AWS":"arn:aws:iam::123456789012:root"}}]}`
		}, "accounts.dev: deploy-account-access in account 123456789012 trusts"},
		{"no account role", func(a *fakeaws.Account) { delete(a.Others[prodAccount].Roles, AccountRoleName) }, "accounts.prod: reading deploy-account-access's trust"},
		{"no OIDC provider", func(a *fakeaws.Account) { a.Others[devAccount].PulumiOIDC = nil },
			"aws iam create-open-id-connect-provider --url https://api.pulumi.com/oidc --client-id-list my-org"},
		{"a provider for another organization", func(a *fakeaws.Account) { a.Others[prodAccount].PulumiOIDC.ClientIDs = []string{"other-org"} },
			"admits the audiences [\"other-org\"], not the organization my-org"},
		{"another role trusting Pulumi Cloud in production's account", func(a *fakeaws.Account) {
			a.Others[prodAccount].Roles["esc-admin"] = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRoleWithWebIdentity",` +
				`"Principal":{"Federated":"arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"}}]}`
		}, "accounts.prod: role esc-admin trusts Pulumi Cloud's OIDC provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
			tt.change(w.aws)
			rec, res := w.run(t, true)
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), tt.want)
			for _, reg := range rec.All() {
				assert.NotContains(t, reg.Type, "iam/", "nothing registered in AWS: %s", reg.Name)
			}
		})
	}
	t.Run("a role trusting Pulumi Cloud in the development account is no production matter", func(t *testing.T) {
		w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
		w.aws.Others[devAccount].Roles["esc"] = `{"Statement":[{"Principal":{"Federated":"arn:aws:iam::123456789012:oidc-provider/api.pulumi.com/oidc"}}]}`
		_, res := w.run(t, true)
		require.NoError(t, res.Err)
	})
}
