package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakecloud"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replaceLine changes the line of a stack file that sets key, or adds it.
func replaceLine(file, key, line string) string {
	var out []string
	done := false
	for _, l := range strings.Split(file, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key+":") {
			if line != "" {
				out = append(out, "  "+line)
			}
			done = true
			continue
		}
		out = append(out, l)
	}
	if !done && line != "" {
		out = append(out[:len(out)-1], "  "+line, "")
	}
	return strings.Join(out, "\n")
}

// TestRootStackFiles holds each root stack file to the fleet before
// anything is registered: the example's files, written as the checklist
// says, pass; each way a file can disagree with deploy/'s entry, or the
// runner it will deploy from, or the account it deploys into, is refused,
// naming the file, the key and the fix.
func TestRootStackFiles(t *testing.T) {
	only := func(stack string, f func(string) string) func(string, string) string {
		return func(s, file string) string {
			if s == stack {
				return f(file)
			}
			return file
		}
	}
	for _, tt := range []struct {
		name    string
		set     map[string]string
		fx      fixture
		meta    *fakecloud.OrgMetadata
		refused string
		warns   string
	}{
		{name: "the files the checklist writes"},
		{name: "a stack file that does not exist", fx: fixture{edit: only("staging", func(string) string { return "" })},
			refused: "stacks.staging: "},
		{name: "a stack file that does not exist says what to write", fx: fixture{edit: only("staging", func(string) string { return "" })},
			refused: "does not exist; create it, commit it and push it before its first deployment, with at least:\nconfig:\n  aws:region: eu-west-1\n" +
				"  nodeless-eks:iamPermissionsBoundary: arn:aws:iam::123456789012:policy/deploy-nodeless-eks-staging-boundary\n  nodeless-eks:clusterName: nodeless-eks-staging"},
		{name: "a key the project does not declare", fx: fixture{edit: only("staging", func(f string) string {
			return replaceLine(f, "nodeless-eks:clustername", "nodeless-eks:clustername: x")
		})},
			refused: "stacks.staging: the Pulumi CLI would refuse"},
		{name: "a stack file copied from another keeps its clusterName", fx: fixture{edit: only("staging", func(f string) string {
			return replaceLine(f, "nodeless-eks:clusterName", "nodeless-eks:clusterName: nodeless-eks-prod")
		})}, refused: `Pulumi.staging.yaml, nodeless-eks:clusterName: is "nodeless-eks-prod" (the cluster it would create); deploy/'s entry says "nodeless-eks-staging"`},
		{name: "an unset clusterName that is not the entry's", set: map[string]string{"stacks": `{"prod":{"account":"prod","production":true,"driftSchedule":"0 4 * * *"},"staging":{"account":"dev","clusterName":"shop-staging"}}`},
			fx:      fixture{edit: only("staging", func(f string) string { return replaceLine(f, "nodeless-eks:clusterName", "") })},
			refused: `nodeless-eks:clusterName: is "nodeless-eks-staging" (the cluster it would create); deploy/'s entry says "shop-staging"`},
		{name: "a production stack whose file does not say so", fx: fixture{edit: only("prod", func(f string) string { return replaceLine(f, "nodeless-eks:production", "") })},
			refused: "Pulumi.prod.yaml, nodeless-eks:production: is false; deploy/'s entry says production: true"},
		{name: "a file that says production where deploy/ does not", fx: fixture{edit: only("staging", func(f string) string {
			return replaceLine(f, "nodeless-eks:production", "nodeless-eks:production: true")
		})},
			refused: "Pulumi.staging.yaml, nodeless-eks:production: is true; deploy/'s entry says production: false"},
		{name: "another region", fx: fixture{edit: only("staging", func(f string) string { return replaceLine(f, "aws:region", "aws:region: us-east-1") })},
			refused: `Pulumi.staging.yaml, aws:region: is "us-east-1"; set it to eu-west-1`},
		{name: "no boundary", fx: fixture{edit: only("staging", func(f string) string { return replaceLine(f, "nodeless-eks:iamPermissionsBoundary", "") })},
			refused: `nodeless-eks:iamPermissionsBoundary: is ""; set it to arn:aws:iam::123456789012:policy/deploy-nodeless-eks-staging-boundary`},
		{name: "an endpoint the hosted runners cannot reach", fx: fixture{edit: only("staging", func(f string) string {
			return replaceLine(f, "nodeless-eks:publicAccessCidrs", `nodeless-eks:publicAccessCidrs: ["81.2.69.0/24"]`)
		})}, refused: `Pulumi.staging.yaml, nodeless-eks:publicAccessCidrs: is ["81.2.69.0/24"]; Pulumi-hosted runners, which have no fixed egress address`},
		{name: "a private endpoint on hosted runners", fx: fixture{edit: only("staging", func(f string) string {
			return replaceLine(f, "nodeless-eks:endpointPublicAccess", "nodeless-eks:endpointPublicAccess: false")
		})}, refused: "Pulumi.staging.yaml, nodeless-eks:endpointPublicAccess: is false"},
		{name: "production open to hosted runners without the root program's acknowledgement", fx: fixture{edit: only("prod", func(f string) string {
			return replaceLine(f, "nodeless-eks:allowPublicEndpointFromInternet", "")
		})}, refused: "Pulumi.prod.yaml, nodeless-eks:allowPublicEndpointFromInternet: is not true"},
		{name: "a narrow endpoint on a customer-managed runner pool", meta: &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "none",
			Features: map[string]bool{"driftDetectionEnabled": true, "teamsEnabled": true, "selfHostedDeploymentsEnabled": true}}, set: map[string]string{"edition": "enterprise",
			"stacks": `{"prod":{"account":"prod","production":true,"driftSchedule":"0 4 * * *","agentPoolId":"pool-1"},"staging":{"account":"dev","driftSchedule":"0 */6 * * *"}}`},
			fx: fixture{edit: only("prod", func(f string) string {
				return replaceLine(replaceLine(f, "nodeless-eks:allowPublicEndpointFromInternet", ""), "nodeless-eks:publicAccessCidrs", "nodeless-eks:endpointPublicAccess: false")
			})}},
		{name: "a review template with a fixed cluster name", fx: fixture{edit: only("pr", func(f string) string {
			return replaceLine(f, "nodeless-eks:clusterName", "nodeless-eks:clusterName: nodeless-eks-pr-x")
		})}, refused: `reviewTemplateStack pr: `},

		// The accounts.
		{name: "no VPC of the file's name in the stack's account and region", fx: fixture{aws: func(c *Config, a *fakeaws.Account) {
			a.Others[account].VpcNames = nil
		}}, refused: `Pulumi.staging.yaml, nodeless-eks:vpcName: "staging-vpc": account dev (123456789012) in eu-west-1 has no VPC of that name, and no deploy role may create one: run examples/vpc there`},
		{name: "two VPCs of the file's name", fx: fixture{aws: func(c *Config, a *fakeaws.Account) {
			a.Others[prodAccount].VpcNames["eu-west-1"] = append(a.Others[prodAccount].VpcNames["eu-west-1"], "prod-vpc")
		}}, refused: `"prod-vpc": account prod (111122223333) in eu-west-1 has 2 VPCs of that name`},
		{name: "no Spot service-linked role", fx: fixture{aws: func(c *Config, a *fakeaws.Account) { a.Others[prodAccount].NoSpotRole = true }},
			warns: "accounts.prod: account 111122223333 has no EC2 Spot service-linked role"},
		{name: "another's Pulumi Cloud OIDC provider where deploy/ would create one", fx: fixture{aws: func(c *Config, a *fakeaws.Account) {
			a.Others[prodAccount].PulumiOIDC = &fakeaws.OIDCProvider{Arn: "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"}
		}}, refused: "accounts.prod: account 111122223333 already has Pulumi Cloud's OIDC provider arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc, which this deploy/ stack did not create"},
		{name: "this stack's own OIDC provider", fx: fixture{aws: func(c *Config, a *fakeaws.Account) {
			a.Others[prodAccount].PulumiOIDC = &fakeaws.OIDCProvider{Arn: "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc",
				Tags: map[string]string{OwnerTagKey: "organization/" + project + "/admin"}}
		}}},
		{name: "an oidcProviderArn that does not exist", set: map[string]string{"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access",
			"oidcProviderArn": "arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc"}, "dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access"}}`},
			refused: "accounts.prod.oidcProviderArn arn:aws:iam::111122223333:oidc-provider/api.pulumi.com/oidc: account 111122223333 has no such provider"},
		{name: "lookups the account role may not make are warnings", fx: fixture{aws: func(c *Config, a *fakeaws.Account) { a.Others[prodAccount].Refuse = true }},
			warns: "could not look for VPC \"prod-vpc\" in account prod (111122223333) in eu-west-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meta := isolated
			if tt.meta != nil {
				meta = tt.meta
			}
			withCloud(t, meta)
			warnings := captureWarnings(t)
			rec, res := runPrepared(t, "Pulumi.example.yaml", tt.set, tt.fx)
			if tt.refused != "" {
				rec.RequireRefused(t, res.Err, tt.refused)
				return
			}
			require.NoError(t, res.Err)
			if tt.warns != "" {
				assert.True(t, slices.ContainsFunc(*warnings, func(w string) bool { return strings.Contains(w, tt.warns) }), "warnings: %v", *warnings)
			}
		})
	}
}

// TestRootStackFileIsWhatTheRootProgramAccepts checks RootStackFile's
// output, filled in, against the root project's rules for each kind of
// stack: the CLI's (stackfile) and the keys deploy/ checks.
func TestRootStackFileIsWhatTheRootProgramAccepts(t *testing.T) {
	c := configOf(t, "Pulumi.example.yaml", nil)
	for _, stack := range []string{"prod", "staging", "pr"} {
		file := RootStackFile(c, stack, "aws")
		assert.Contains(t, file, fmt.Sprintf("aws:region: %s", RoleOf(c, stack).Region))
		assert.Contains(t, file, "nodeless-eks:vpcName: <the VPC's Name tag>", "the VPC is the team's to fill in")
	}
	assert.Contains(t, RootStackFile(c, "prod", "aws"), "nodeless-eks:production: true")
	assert.NotContains(t, RootStackFile(c, "pr", "aws"), "clusterName", "review stacks are named after their stack")
}
