package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/internal/pulumicloud"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakecloud"
	"nodeless-eks/testkit/iamtest"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allOperations are every operation a Deployments run may present: the
// four Pulumi's OIDC page names (preview, update, refresh, destroy) and
// the drift runs' two, as PULUMI_CI_OPERATION and the API's operation
// names them (detect-drift, remediate-drift).
var allOperations = append([]string{"preview"}, updateOperations...)

// obtainable are the OIDC tokens (audience, subject) a run that is not a
// production run can present: a Deployments token for every operation of
// every non-production stack and of any review stack (named as Deployments
// names them, or as a pull request could wish, after a production stack),
// and an ESC token for every environment that is not production's.
func obtainable(c *Config) [][2]string {
	var out [][2]string
	deploy := func(stack string) {
		for _, op := range allOperations {
			out = append(out, [2]string{c.Organization, DeploymentsSubject(c.Organization, c.Project, stack, op)})
		}
	}
	for _, name := range sortedKeys(c.Stacks) {
		s := c.Stacks[name]
		if s.Production {
			if c.ReviewStacks {
				deploy(c.ReviewStackPrefix + name)
			}
			continue
		}
		deploy(name)
		if s.HasEnvironment() {
			out = append(out, [2]string{"aws:" + c.Organization, ESCSubject(c.Organization, c.Project, name)})
		}
		// The subject an environment imported by a stack file presented
		// before subjectAttributes (pulumi/pulumi#14509).
		out = append(out, [2]string{"aws:" + c.Organization, "pulumi:environments:org:" + c.Organization + ":env:<yaml>"})
	}
	if c.ReviewStacks {
		deploy(c.ReviewStackPrefix + "1")
		deploy(c.ReviewStackPrefix + "4242")
	}
	return out
}

// TestNoRunObtainsAProductionRole evaluates the trust policy of every
// production role, as the program registers it, against every token a
// pull-request, review or non-production run can obtain: none is
// accepted, while the production stack's own update is.
func TestNoRunObtainsAProductionRole(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		set        map[string]string
	}{
		{"the example", "Pulumi.example.yaml", nil},
		{"the example, with a production environment", "Pulumi.example.yaml", map[string]string{
			"stacks": `{"prod":{"account":"prod","production":true,"environment":true,"driftSchedule":"0 4 * * *"},"staging":{"account":"dev"}}`}},
		{"the fleet", fleetFile, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, res := runFile(t, tc.file, tc.set)
			require.NoError(t, res.Err)
			c := configOf(t, tc.file, tc.set)
			tokens := obtainable(c)
			require.NotEmpty(t, tokens)
			checked := 0
			for _, r := range Roles(c) {
				if r.Stack == "" || !c.Stacks[r.Stack].Production {
					continue
				}
				trust := trustOf(t, rec, deployRoleName+r.Key)
				for _, tok := range tokens {
					req := iamtest.Request{Action: "sts:AssumeRoleWithWebIdentity", Resource: "*",
						Context: map[string][]string{"api.pulumi.com/oidc:aud": {tok[0]}, "api.pulumi.com/oidc:sub": {tok[1]}}}
					assert.NotEqualf(t, iamtest.Allowed, iamtest.Evaluate(trust, nil, req), "%s trusts %s (%s)", r.Key, tok[1], tok[0])
					checked++
				}
				own := iamtest.Request{Action: "sts:AssumeRoleWithWebIdentity", Resource: "*", Context: map[string][]string{
					"api.pulumi.com/oidc:aud": {c.Organization}, "api.pulumi.com/oidc:sub": {DeploymentsSubject(c.Organization, c.Project, r.Stack, "update")}}}
				assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(trust, nil, own), "%s's own update assumes it", r.Key)
				if r.Environment {
					esc := iamtest.Request{Action: "sts:AssumeRoleWithWebIdentity", Resource: "*", Context: map[string][]string{
						"api.pulumi.com/oidc:aud": {"aws:" + c.Organization}, "api.pulumi.com/oidc:sub": {ESCSubject(c.Organization, c.Project, r.Stack)}}}
					assert.Equal(t, iamtest.Allowed, iamtest.Evaluate(trust, nil, esc), "%s's own environment assumes it", r.Key)
				}
			}
			assert.Positive(t, checked)
			for _, perm := range rec.OfType("pulumiservice:index:TeamEnvironmentPermission") {
				stack := perm.Inputs["environment"].StringValue()
				if c.Stacks[stack].Production {
					assert.Equal(t, c.ProductionTeam, perm.Inputs["team"].StringValue(), "only the production team opens %s", stack)
					assert.Equal(t, "open", perm.Inputs["permission"].StringValue())
				}
			}
		})
	}
}

// TestNoAWSPrincipalGetsAPulumiCloudToken holds what the program registers
// to giving no AWS principal (a role a run creates among them) a way to a
// Pulumi Cloud token: Pulumi Cloud accepts only its own tokens, and the
// program creates none, no OIDC issuer that would trade another identity
// for one (pulumiservice's AccessToken, OrgAccessToken, TeamAccessToken,
// OidcIssuer), no Pulumi Cloud role, and nothing in AWS that could hold
// one; no run is handed one either (no environment variables in the
// settings, and environments that yield AWS credentials alone).
func TestNoAWSPrincipalGetsAPulumiCloudToken(t *testing.T) {
	registered := map[string]bool{
		"pulumiservice:index:Stack": true, "pulumiservice:index:DeploymentSettings": true, "pulumiservice:index:Environment": true,
		"pulumiservice:index:TeamStackPermission": true, "pulumiservice:index:TeamEnvironmentPermission": true,
		"pulumiservice:index:DriftSchedule": true, "pulumi:providers:aws": true,
		"aws:iam/openIdConnectProvider:OpenIdConnectProvider": true, "aws:iam/role:Role": true, "aws:iam/policy:Policy": true,
		"aws:iam/rolePolicyAttachment:RolePolicyAttachment": true,
	}
	for _, file := range []string{"Pulumi.example.yaml", fleetFile} {
		t.Run(file, func(t *testing.T) {
			rec, res := runFile(t, file, nil)
			require.NoError(t, res.Err)
			for _, reg := range rec.All() {
				assert.Truef(t, registered[reg.Type], "%s %s: a type this test has not shown to hand AWS no Pulumi Cloud token", reg.Type, reg.Name)
			}
			for _, settings := range rec.OfType("pulumiservice:index:DeploymentSettings") {
				opctx := settings.Inputs["operationContext"].ObjectValue()
				assert.NotContains(t, opctx, "environmentVariables", "%s: no token is handed to a run", settings.Name)
			}
			envs := rec.OfType("pulumiservice:index:Environment")
			require.NotEmpty(t, envs)
			for _, env := range envs {
				yaml := env.Inputs["yaml"].AssetValue().Text
				assert.NotContains(t, strings.ToLower(yaml), "pulumi", "%s yields AWS credentials alone", env.Name)
			}
		})
	}
}

// TestOrganizationDefaults runs the example against a fake Pulumi Cloud
// whose organization answers with each setting: only an answer that the
// defaults isolate production lets a fleet that mixes production with
// other runs through, and only when nothing depends on them does an
// unanswered check go on (with a warning).
func TestOrganizationDefaults(t *testing.T) {
	prodEnv := `{"prod":{"account":"prod","production":true,"environment":true},"staging":{"account":"dev"}}`
	onlyProd := `{"prod":{"account":"prod","production":true}}`
	// A fleet of production alone: no pull-request, review or
	// non-production run.
	productionAlone := func(stacks string) map[string]string {
		return map[string]string{"stacks": stacks, "reviewStacks": "false", "reviewStackTtl": "false",
			"accounts":      `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access"}}`,
			"reviewAccount": "", "driftDetection": "false"}
	}
	features := map[string]bool{"driftDetectionEnabled": true, "driftRemediationEnabled": true, "teamsEnabled": true}
	twoProdEnvs := `{"ledger":{"account":"prod","production":true,"environment":true},"shop":{"account":"prod","production":true,"environment":true}}`
	for _, tt := range []struct {
		name    string
		org     any // the metadata's answer
		fail    int
		noToken bool
		set     map[string]string
		refused string // "" when the run goes on
		warns   string
	}{
		{name: "defaults at none", org: isolated},
		{name: "default stack permission Read", org: &fakecloud.OrgMetadata{DefaultStackPermission: 101, DefaultEnvironmentPermission: "none"},
			refused: "organization my-org: its default stack permission is Read (101), so the stack token of every pull-request, review and non-production run"},
		{name: "default stack permission Write", org: &fakecloud.OrgMetadata{DefaultStackPermission: 102, DefaultEnvironmentPermission: "none"},
			refused: `{"setDefaultStackPermission":0}`},
		{name: "a production environment, default environment permission open", set: map[string]string{"stacks": prodEnv, "driftDetection": "false"},
			org:     &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "open"},
			refused: `its default environment permission is "open", so a run's token can open nodeless-eks/prod, nodeless-eks/staging and assume that stack's role`},
		{name: "a non-production environment while pull requests' code runs, default environment permission open",
			org:     &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "open"},
			refused: `its default environment permission is "open", so a run's token can open nodeless-eks/staging and assume that stack's role`},
		{name: "no environment at all, default environment permission open", org: &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "open"},
			set: map[string]string{"stacks": `{"prod":{"account":"prod","production":true},"staging":{"account":"dev","environment":false}}`, "driftDetection": "false"}},
		{name: "a default deployment role", org: &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "none", DefaultDeploymentRoleID: "role-123"},
			refused: "it has a default deployment role (role-123), which every deployment whose settings name no role runs with"},
		{name: "the token may not read the settings", org: isolated, fail: 403,
			refused: "organization my-org: the token from PULUMI_ACCESS_TOKEN may not read its settings"},
		{name: "Pulumi Cloud fails", org: isolated, fail: 503, refused: "organization my-org: reading its settings failed"},
		{name: "no token", org: isolated, noToken: true, refused: "organization my-org: no Pulumi Cloud token was found"},
		{name: "no token, checked by hand", org: isolated, noToken: true, set: map[string]string{"checkOrganizationDefaults": "false"},
			warns: "checkOrganizationDefaults is false: nothing proves that organization my-org's default stack permission"},
		// Members outside the production team hold the default too: a
		// fleet of production alone needs it at None.
		{name: "no token, production alone", org: isolated, noToken: true, set: productionAlone(onlyProd),
			refused: "organization my-org: no Pulumi Cloud token was found"},
		{name: "production alone, default stack permission Read", set: productionAlone(onlyProd),
			org:     &fakecloud.OrgMetadata{DefaultStackPermission: 101, DefaultEnvironmentPermission: "none", Features: features},
			refused: "its default stack permission is Read (101)"},
		// The metadata's product names older SKUs; the features say what
		// the organization has.
		{name: "drift detection Pulumi Cloud says the organization lacks",
			org:     &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "none", Product: "team-pro", Features: map[string]bool{"teamsEnabled": true}},
			refused: "driftDetection: Pulumi Cloud says the organization has no driftDetectionEnabled (drift detection) (features.driftDetectionEnabled is false)"},
		{name: "teams Pulumi Cloud says the organization lacks",
			org:     &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "none", Features: map[string]bool{"driftDetectionEnabled": true}},
			refused: "productionTeam: Pulumi Cloud says the organization has no teamsEnabled (teams)"},
		{name: "no features in the answer: a warning", org: &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "none"},
			warns: "holds no features, so the switches that need an edition"},

		// An answer proves only the defaults it holds: 0 read from nothing
		// would be None.
		{name: "an answer of {}", org: map[string]any{},
			refused: "holds no defaultStackPermission and defaultEnvironmentPermission, which Pulumi Cloud's API document requires of it"},
		{name: "an answer of null", org: json.RawMessage("null"),
			refused: "holds no defaultStackPermission and defaultEnvironmentPermission"},
		{name: "an answer without the default stack permission", org: map[string]any{"defaultEnvironmentPermission": "none"},
			refused: "organization my-org: the answer of http://127.0.0.1"},
		{name: "an answer without the default stack permission, named", org: map[string]any{"defaultEnvironmentPermission": "none"},
			refused: "/metadata holds no defaultStackPermission, which"},
		{name: "an answer without the default environment permission", org: map[string]any{"defaultStackPermission": 0},
			refused: "/metadata holds no defaultEnvironmentPermission, which"},
		{name: "an answer without what the API document may leave out (no default deployment role, no product)",
			org: map[string]any{"defaultStackPermission": 0, "defaultEnvironmentPermission": "none"}},
		{name: "an answer of {}, production alone without an environment", org: map[string]any{}, set: productionAlone(onlyProd),
			refused: "holds no defaultStackPermission, which"},

		// A production environment is guarded whatever else the fleet
		// holds: another production stack's run, or a member outside the
		// production team, holds the default too.
		{name: "two production environments, default environment permission open", set: productionAlone(twoProdEnvs),
			org:     &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "open"},
			refused: `its default environment permission is "open", so a run's token can open nodeless-eks/ledger, nodeless-eks/shop and assume that stack's role`},
		{name: "production alone with an environment, default environment permission open",
			set: productionAlone(`{"prod":{"account":"prod","production":true,"environment":true}}`),
			org: &fakecloud.OrgMetadata{DefaultEnvironmentPermission: "open"}, refused: "any member outside the production team, a production one"},
		{name: "two production environments, no token", set: productionAlone(twoProdEnvs), org: isolated, noToken: true,
			refused: "organization my-org: no Pulumi Cloud token was found"},
		{name: "two production environments, an answer without the default environment permission", set: productionAlone(twoProdEnvs),
			org: map[string]any{"defaultStackPermission": 101}, refused: "holds no defaultEnvironmentPermission"},
		{name: "two production environments, default environment permission none", set: productionAlone(twoProdEnvs),
			org: isolated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := withCloud(t, tt.org)
			if tt.fail != 0 {
				api.Fail("/metadata", tt.fail)
			}
			if tt.noToken {
				t.Setenv("PULUMI_ACCESS_TOKEN", "")
			}
			warnings := captureWarnings(t)
			rec, res := runPrepared(t, "Pulumi.example.yaml", tt.set, fixture{})
			if tt.refused != "" {
				rec.RequireRefused(t, res.Err, tt.refused)
				if strings.Contains(res.Err.Error(), "curl -X PATCH") {
					assert.Contains(t, res.Err.Error(), api.URL+"/api/orgs/my-org`", "the hint names the API the check read")
				}
				return
			}
			require.NoError(t, res.Err)
			if tt.warns != "" {
				assert.True(t, slices.ContainsFunc(*warnings, func(w string) bool { return strings.Contains(w, tt.warns) }), "warnings: %v", *warnings)
			}
			if !tt.noToken {
				assert.Contains(t, api.Requests, "GET /api/orgs/my-org/metadata")
				assert.Empty(t, api.BadHeaders)
			}
		})
	}
}

// TestOrganizationEmptyAnswer holds the check to an answer with no body at
// all, which the fake cannot give: it proves nothing.
func TestOrganizationEmptyAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	c := configOf(t, "Pulumi.example.yaml", nil)
	_, err := checkOrganization(context.Background(), c, &pulumicloud.Client{API: srv.URL, Token: cloudToken}, "PULUMI_ACCESS_TOKEN")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "organization my-org: the answer of "+srv.URL+" to GET /api/orgs/my-org/metadata holds no "+
		"defaultStackPermission and defaultEnvironmentPermission")
	assert.Contains(t, err.Error(), "set checkOrganizationDefaults: false", "and says what to do")
}

// captureWarnings records what the program warns of.
func captureWarnings(t *testing.T) *[]string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	prev := logWarning
	logWarning = func(_ *pulumi.Context, msg string) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msg)
		return nil
	}
	t.Cleanup(func() { logWarning = prev })
	return &got
}

// probe is a request a non-production run could make against production's
// resources in an account they share.
type probe struct {
	what string
	req  iamtest.Request
}

// sharedAccountProbes are the requests the README's shared-account table
// answers: production's volumes, snapshots, instances, network, load
// balancers, cluster, roles, queue and keys, in the shared account.
func sharedAccountProbes(acct string) []probe {
	ec2 := func(res string) string { return "arn:aws:ec2:eu-west-1:" + acct + ":" + res }
	prodTag := map[string][]string{"aws:ResourceTag/karpenter.sh/discovery": {"nodeless-eks-prod"}, "aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}}
	inRegion := map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}
	return []probe{
		{"snapshot a production EBS volume", iamtest.Request{Action: "ec2:CreateSnapshot", Resource: ec2("volume/vol-prod")}},
		{"create a volume from a production snapshot", iamtest.Request{Action: "ec2:CreateVolume", Resource: ec2("snapshot/snap-prod")}},
		{"attach a production volume to an instance of its own", iamtest.Request{Action: "ec2:AttachVolume", Resource: ec2("volume/vol-prod")}},
		{"launch an instance into a production subnet", iamtest.Request{Action: "ec2:RunInstances", Resource: ec2("subnet/subnet-prod")}},
		{"launch an instance with a production security group", iamtest.Request{Action: "ec2:RunInstances", Resource: ec2("security-group/sg-prod")}},
		{"open a production security group", iamtest.Request{Action: "ec2:AuthorizeSecurityGroupIngress", Resource: ec2("security-group/sg-prod"), Context: prodTag}},
		{"delete a production security group", iamtest.Request{Action: "ec2:DeleteSecurityGroup", Resource: ec2("security-group/sg-prod"), Context: prodTag}},
		{"change a production instance's attributes (security groups, user data)", iamtest.Request{Action: "ec2:ModifyInstanceAttribute", Resource: ec2("instance/i-prod")}},
		{"change a production network interface's security groups", iamtest.Request{Action: "ec2:ModifyNetworkInterfaceAttribute", Resource: ec2("network-interface/eni-prod")}},
		{"add a route to a production route table", iamtest.Request{Action: "ec2:CreateRoute", Resource: ec2("route-table/rtb-prod")}},
		{"terminate a production node", iamtest.Request{Action: "ec2:TerminateInstances", Resource: ec2("instance/i-prod")}},
		{"delete a production EBS volume", iamtest.Request{Action: "ec2:DeleteVolume", Resource: ec2("volume/vol-prod")}},
		{"delete a production load balancer", iamtest.Request{Action: "elasticloadbalancing:DeleteLoadBalancer", Resource: "arn:aws:elasticloadbalancing:eu-west-1:" + acct + ":loadbalancer/net/prod/1"}},
		{"share a production snapshot with another account", iamtest.Request{Action: "ec2:ModifySnapshotAttribute", Resource: ec2("snapshot/snap-prod")}},
		{"read production instances' user data", iamtest.Request{Action: "ec2:DescribeInstanceAttribute", Resource: "*", Context: inRegion}},
		{"change the production cluster", iamtest.Request{Action: "eks:UpdateClusterConfig", Resource: "arn:aws:eks:eu-west-1:" + acct + ":cluster/nodeless-eks-prod"}},
		{"put production's node role on an instance", iamtest.Request{Action: "iam:PassRole", Resource: "arn:aws:iam::" + acct + ":role/nodeless-eks-prod-karpenter-node",
			Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}},
		{"change a production role", iamtest.Request{Action: "iam:AttachRolePolicy", Resource: "arn:aws:iam::" + acct + ":role/nodeless-eks-prod-karpenter-controller-1a2b3c4",
			Context: map[string][]string{"iam:PolicyARN": {"arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"}}}},
		{"read production's interruption queue", iamtest.Request{Action: "sqs:ReceiveMessage", Resource: "arn:aws:sqs:eu-west-1:" + acct + ":nodeless-eks-prod-karpenter-interruption-queue-1a2b3c4"}},
		{"decrypt with production's secrets key", iamtest.Request{Action: "kms:Decrypt", Resource: "arn:aws:kms:eu-west-1:" + acct + ":key/prod", Context: prodTag}},
		{"read a Cognito user pool client's secret (DescribeUserPoolClient returns it)", iamtest.Request{Action: "cognito-idp:DescribeUserPoolClient",
			Resource: "arn:aws:cognito-idp:eu-west-1:" + acct + ":userpool/eu-west-1_prod"}},
		{"pull production's private container images", iamtest.Request{Action: "ecr:BatchGetImage", Resource: "arn:aws:ecr:eu-west-1:" + acct + ":repository/prod/app"}},
		{"schedule the deletion of production's secrets key", iamtest.Request{Action: "kms:ScheduleKeyDeletion", Resource: "arn:aws:kms:eu-west-1:" + acct + ":key/prod",
			Context: map[string][]string{"aws:ResourceTag/nodeless-eks/cluster": {"nodeless-eks-prod"}, "kms:ScheduleKeyDeletionPendingWindowInDays": {"30"}}}},
	}
}

// TestSharedProductionAccount puts the example's staging stack in
// production's account, acknowledged, and evaluates what its runs can do
// to production there with the documents the program registers: the
// staging deploy role's policy, and a role a staging run creates (which
// must carry staging's boundary, and bounds the program's own roles too).
// deploy/README.md lists exactly this.
func TestSharedProductionAccount(t *testing.T) {
	set := map[string]string{
		"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access", "sharedWithNonProduction": true},
			"dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access"}}`,
		"stacks":         `{"prod":{"account":"prod","production":true},"staging":{"account":"prod"}}`,
		"driftDetection": "false",
	}
	// A stack that previews pull requests (staging does by default) runs
	// a pull request's code: no acknowledgement admits it there.
	_, res := runFile(t, "Pulumi.example.yaml", set)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "accounts.prod: holds production stack(s) prod and stack(s) staging, which preview pull requests")
	assert.Contains(t, res.Err.Error(), "sharedWithNonProduction does not admit that")

	set["stacks"] = `{"prod":{"account":"prod","production":true},"staging":{"account":"prod","previewPullRequests":false}}`
	warnings := captureWarnings(t)
	rec, res := runFile(t, "Pulumi.example.yaml", set)
	require.NoError(t, res.Err, "acknowledged, a shared account without pull-request code is accepted")
	assert.True(t, slices.ContainsFunc(*warnings, func(w string) bool {
		return strings.Contains(w, "accounts.prod.sharedWithNonProduction: non-production runs in account 111122223333 can reach production's data")
	}), "and every run says so: %v", *warnings)

	deployer := policyOf(t, rec, "deploy-staging")
	boundary := boundaryOf(t, rec, "staging")
	admin := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
	yes := func(d iamtest.Decision) string {
		if d == iamtest.Allowed {
			return "**yes**"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString("| a non-production run in production's account can | with its deploy role | with a role it creates, or the program's own roles |\n|---|---|---|\n")
	both := 0
	for _, p := range sharedAccountProbes(prodAccount) {
		byRole, byMinted := iamtest.Evaluate(deployer, nil, p.req), iamtest.Evaluate(admin, &boundary, p.req)
		if byRole == iamtest.Allowed || byMinted == iamtest.Allowed {
			both++
		}
		fmt.Fprintf(&b, "| %s (`%s`) | %s | %s |\n", p.what, p.req.Action, yes(byRole), yes(byMinted))
	}
	assert.Greater(t, both, 5, "the reason production needs an account of its own")
	checkGenerated(t, "README.md", "shared-account", b.String())

	// From an account of its own, the same run reaches none of it: IAM
	// lets a request on another account's resource through only when that
	// resource's policy grants it (IAM user guide,
	// reference_policies_evaluation-logic-cross-account.html), and no role
	// of production's account trusts another account's runs
	// (TestNoRunObtainsAProductionRole).
}

// TestWhoCanReachProductionCitesTests holds the README's table of who can
// reach production to the tests it cites: each cell that says a test shows
// it names a test of this package that exists.
func TestWhoCanReachProductionCitesTests(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	section := string(raw)
	i, j := strings.Index(section, "<!-- reach:begin -->"), strings.Index(section, "<!-- reach:end -->")
	require.True(t, i >= 0 && j > i, "README.md has the reach table between <!-- reach:begin --> and <!-- reach:end -->")
	section = section[i:j]
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	defined := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
	}
	cited := regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, cited)
	for _, m := range cited {
		assert.Truef(t, defined[m[1]], "README.md's reach table cites %s, which no test of deploy/ defines", m[1])
	}
	rows := strings.Count(section, "\n| ")
	assert.GreaterOrEqual(t, rows, 7, "a header, a separator and a row per principal")
	for _, row := range strings.Split(section, "\n") {
		if !strings.HasPrefix(row, "| ") || strings.HasPrefix(row, "| principal") || strings.HasPrefix(row, "|---") {
			continue
		}
		for _, cell := range strings.Split(strings.Trim(row, "| "), " | ")[1:] {
			assert.Truef(t, strings.Contains(cell, "`Test") || strings.Contains(cell, "not closed"),
				"each cell is shown by a test or marked as not closed, with the mitigation: %q", cell)
		}
	}
}

// TestDeployRunsWhereNoPullRequestRuns holds the credentials that run
// deploy/ to an account where no pull request's code runs, whenever other
// accounts' roles trust them: from the dev account, which hosts staging's
// previews and the review stacks, deploy/ is refused; from a fleet of that
// one account alone, with no account role to trust it, it is not.
func TestDeployRunsWhereNoPullRequestRuns(t *testing.T) {
	withCloud(t, isolated)
	fromDev := fixture{aws: func(_ *Config, a *fakeaws.Account) { a.CallerAccount = account }}
	rec, res := runPrepared(t, "Pulumi.example.yaml", map[string]string{
		"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access"}, "dev": {"id": "123456789012"}}`,
	}, fromDev)
	rec.RequireRefused(t, res.Err, "accounts.dev: deploy/ runs with credentials of account 123456789012 (arn:aws:sts::123456789012:assumed-role/admin/session), "+
		"where pull-request code runs (review stacks, or a stack that previews pull requests), and the deploy-account-access roles of accounts prod trust those credentials")

	rec, res = runPrepared(t, "Pulumi.example.yaml", map[string]string{
		"accounts": `{"dev": {"id": "123456789012"}}`, "stacks": `{"staging": {"account": "dev"}}`, "productionTeam": "", "driftDetection": "false",
	}, fromDev)
	require.NoError(t, res.Err, "one account, no account role")
	assert.Empty(t, rec.OfType("pulumi:providers:aws"), "reached with the credentials themselves")
}

// TestBoundaryDeniesWhatAnotherAccountShares evaluates the registered
// boundary of a non-production stack on what another account shares with
// its account (by a resource policy, or RAM): an image or snapshot, a
// registry's images, a capacity reservation. A role a run creates, or one
// of the program's own, can use none of it; it still launches AWS's
// Bottlerocket images, pulls the EKS add-on images and reads AWS's public
// parameters, and uses its own account's resources, and those of an
// account the entry names in sharedResourceAccounts.
func TestBoundaryDeniesWhatAnotherAccountShares(t *testing.T) {
	const other, network = "999988887777", "555566667777"
	rec, err := run(t, map[string]string{"accounts": `{"prod": {"id": "111122223333", "roleArn": "arn:aws:iam::111122223333:role/deploy-account-access"},
		"dev": {"id": "123456789012", "roleArn": "arn:aws:iam::123456789012:role/deploy-account-access", "sharedResourceAccounts": ["` + network + `"]}}`})
	require.NoError(t, err)
	boundary := boundaryOf(t, rec, "staging")
	admin := iampolicy.New(iampolicy.Statement{Effect: "Allow", Action: "*", Resource: "*"})
	in := func(acct string, kv ...string) map[string][]string {
		m := map[string][]string{"aws:ResourceAccount": {acct}}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []string{kv[i+1]}
		}
		return m
	}
	ec2 := func(acct, res string) string { return "arn:aws:ec2:eu-west-1:" + acct + ":" + res }
	for _, tt := range []struct {
		name string
		req  iamtest.Request
		want iamtest.Decision
	}{
		{"launch an instance from another account's shared image", iamtest.Request{Action: "ec2:RunInstances",
			Resource: "arn:aws:ec2:eu-west-1::image/ami-0shared", Context: in(other, "ec2:Owner", other)}, iamtest.ExplicitDeny},
		{"launch an instance with another account's shared snapshot", iamtest.Request{Action: "ec2:RunInstances",
			Resource: "arn:aws:ec2:eu-west-1::snapshot/snap-0shared", Context: in(other, "ec2:Owner", other)}, iamtest.ExplicitDeny},
		{"create a volume from another account's shared snapshot (no aws:ResourceAccount in the request)", iamtest.Request{Action: "ec2:CreateVolume",
			Resource: "arn:aws:ec2:eu-west-1::snapshot/snap-0shared", Context: map[string][]string{"ec2:Owner": {other}}}, iamtest.ExplicitDeny},
		{"pull another account's shared image", iamtest.Request{Action: "ecr:BatchGetImage",
			Resource: "arn:aws:ecr:eu-west-1:" + other + ":repository/app", Context: in(other)}, iamtest.ExplicitDeny},
		{"launch into another account's shared capacity reservation", iamtest.Request{Action: "ec2:CreateFleet",
			Resource: ec2(other, "capacity-reservation/cr-0shared"), Context: in(other)}, iamtest.ExplicitDeny},
		{"launch into a subnet another account shares", iamtest.Request{Action: "ec2:RunInstances",
			Resource: ec2(other, "subnet/subnet-0shared"), Context: in(other)}, iamtest.ExplicitDeny},

		{"launch Bottlerocket, an image AWS owns", iamtest.Request{Action: "ec2:RunInstances",
			Resource: "arn:aws:ec2:eu-west-1::image/ami-0bottlerocket", Context: in("092701018921", "ec2:Owner", "amazon")}, iamtest.Allowed},
		{"launch with the snapshot behind it", iamtest.Request{Action: "ec2:RunInstances",
			Resource: "arn:aws:ec2:eu-west-1::snapshot/snap-0bottlerocket", Context: in("092701018921", "ec2:Owner", "amazon")}, iamtest.Allowed},
		{"pull an EKS add-on image", iamtest.Request{Action: "ecr:BatchGetImage",
			Resource: "arn:aws:ecr:eu-west-1:602401143452:repository/eks/coredns", Context: in("602401143452")}, iamtest.Allowed},
		{"read AWS's public AMI parameters", iamtest.Request{Action: "ssm:GetParameter",
			Resource: "arn:aws:ssm:eu-west-1::parameter/aws/service/bottlerocket/aws-k8s-1.36/x86_64/latest/image_id", Context: in("aws")}, iamtest.Allowed},
		{"read an SSM document AWS owns (Run Command, patching)", iamtest.Request{Action: "ssm:GetDocument",
			Resource: "arn:aws:ssm:eu-west-1::document/AWS-RunPatchBaseline", Context: in("aws")}, iamtest.Allowed},
		{"pull its own account's image", iamtest.Request{Action: "ecr:BatchGetImage",
			Resource: "arn:aws:ecr:eu-west-1:" + account + ":repository/app", Context: in(account)}, iamtest.Allowed},
		{"create a volume from its own snapshot", iamtest.Request{Action: "ec2:CreateVolume",
			Resource: "arn:aws:ec2:eu-west-1::snapshot/snap-0own", Context: map[string][]string{"ec2:Owner": {account}}}, iamtest.Allowed},
		{"launch into the shared VPC's subnet it names", iamtest.Request{Action: "ec2:RunInstances",
			Resource: ec2(network, "subnet/subnet-0network"), Context: in(network)}, iamtest.Allowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, iamtest.Evaluate(admin, &boundary, tt.req))
		})
	}
	t.Run("the registry is the one of the stack's region", func(t *testing.T) {
		rec, err := run(t, map[string]string{"stacks": `{"prod":{"account":"prod","production":true},"staging":{"account":"dev","region":"af-south-1"}}`,
			"driftDetection": "false"})
		require.NoError(t, err)
		b := boundaryOf(t, rec, "staging")
		pull := func(acct string) iamtest.Decision {
			return iamtest.Evaluate(admin, &b, iamtest.Request{Action: "ecr:BatchGetImage",
				Resource: "arn:aws:ecr:af-south-1:" + acct + ":repository/eks/coredns", Context: in(acct)})
		}
		assert.Equal(t, iamtest.Allowed, pull("877085696533"))
		assert.Equal(t, iamtest.ExplicitDeny, pull("602401143452"), "another region's registry is another account")
	})
}

// TestEveryGrantSourceIsRead gives the fake organization a grant on the
// production stack (or, with importStacks, on any stack) through each
// source the API exposes, one at a time, and shows the preview refused,
// naming the grant and how to take it away; grants deploy/ makes, or that
// organization admins and the production team hold, pass. Every source is
// read: the requests name each endpoint.
func TestEveryGrantSourceIsRead(t *testing.T) {
	withRoles := func(features map[string]bool) *fakecloud.OrgMetadata {
		m := *isolated
		m.Features = map[string]bool{}
		for k, v := range isolated.Features {
			m.Features[k] = v
		}
		for k, v := range features {
			m.Features[k] = v
		}
		return &m
	}
	custom := withRoles(map[string]bool{"customRolesEnabled": true})
	builtIn := map[string]fakecloud.Role{"role-member": {Name: "Member", BuiltIn: true}, "role-admin": {Name: "Admin", BuiltIn: true},
		"role-ops": {Name: "ops-viewer"}}
	prodGrants := func(g fakecloud.StackGrants) map[string]fakecloud.StackGrants {
		return map[string]fakecloud.StackGrants{"nodeless-eks/prod": g}
	}
	for _, tt := range []struct {
		name    string
		meta    *fakecloud.OrgMetadata
		org     func(o *fakecloud.Org)
		set     map[string]string
		refused string // "" when the run goes on
	}{
		{name: "grants deploy/ makes: the production team, the admin who created it", meta: isolated, org: func(o *fakecloud.Org) {
			o.Stacks = prodGrants(fakecloud.StackGrants{Teams: map[string]int{"platform": 103}, Creator: deployer, Users: map[string]int{"alice": 102}})
		}},
		{name: "another team on the production stack", meta: isolated, org: func(o *fakecloud.Org) {
			o.Stacks = prodGrants(fakecloud.StackGrants{Teams: map[string]int{"platform": 103, "developers": 101}, Creator: deployer})
		}, refused: "stacks.prod: team developers has Read on production stack prod; take it away"},
		{name: "a member's grant on the production stack", meta: isolated, org: func(o *fakecloud.Org) {
			o.Stacks = prodGrants(fakecloud.StackGrants{Creator: deployer, Users: map[string]int{"bob": 102}})
		}, refused: "stacks.prod: user bob has Write on production stack prod; take it away"},
		{name: "the creator's grant, the creator outside the team", meta: isolated, org: func(o *fakecloud.Org) {
			o.Stacks = prodGrants(fakecloud.StackGrants{Creator: "bob"})
		}, refused: "stacks.prod: bob created production stack prod and keeps its creator's admin grant"},
		{name: "a custom role held by a member", meta: custom, org: func(o *fakecloud.Org) {
			o.Roles, o.RoleOf = builtIn, map[string]string{"bob": "role-ops", "alice": "role-member", deployer: "role-admin"}
		}, refused: `custom role "ops-viewer" (role-ops) is held by member bob outside productionTeam`},
		{name: "a custom role held by a team", meta: custom, org: func(o *fakecloud.Org) {
			o.Roles, o.Teams["developers"] = builtIn, fakecloud.Team{Members: []string{"bob"}, RoleIDs: []string{"role-ops"}}
		}, refused: `custom role "ops-viewer" (role-ops) is held by team developers outside productionTeam`},
		{name: "a custom role every new member gets", meta: func() *fakecloud.OrgMetadata { m := *custom; m.DefaultRoleID = "role-ops"; return &m }(),
			org:     func(o *fakecloud.Org) { o.Roles = builtIn },
			refused: `custom role "ops-viewer" (role-ops) is held by every new member (the organization's default role) outside productionTeam`},
		{name: "a custom role an admin reviewed", meta: custom, set: map[string]string{"reviewedCustomRoles": `["ops-viewer"]`}, org: func(o *fakecloud.Org) {
			o.Roles, o.RoleOf = builtIn, map[string]string{"bob": "role-ops"}
		}},
		{name: "a custom role held only inside the production team", meta: custom, org: func(o *fakecloud.Org) {
			o.Roles, o.RoleOf = builtIn, map[string]string{"alice": "role-ops"}
		}},
		{name: "no production team in the organization", meta: isolated, org: func(o *fakecloud.Org) { delete(o.Teams, "platform"); o.Teams["platform"] = fakecloud.Team{} },
			refused: `productionTeam "platform": organization my-org has no such team`},
		{name: "importStacks: a stack whose grants are deploy/'s", meta: isolated, set: map[string]string{"importStacks": "true"}, org: func(o *fakecloud.Org) {
			o.Stacks["nodeless-eks/staging"] = fakecloud.StackGrants{Creator: deployer}
			o.Stacks["nodeless-eks/pr"] = fakecloud.StackGrants{Creator: deployer}
		}},
		{name: "importStacks: a non-production stack with a member's grant", meta: isolated, set: map[string]string{"importStacks": "true"}, org: func(o *fakecloud.Org) {
			o.Stacks["nodeless-eks/staging"] = fakecloud.StackGrants{Creator: "bob", Users: map[string]int{"alice": 101}}
		}, refused: "stacks.staging: bob created imported stack staging and keeps its creator's admin grant"},
		{name: "importStacks: a member's explicit grant on a non-production stack", meta: isolated, set: map[string]string{"importStacks": "true"}, org: func(o *fakecloud.Org) {
			o.Stacks["nodeless-eks/staging"] = fakecloud.StackGrants{Creator: deployer, Users: map[string]int{"alice": 101}}
		}, refused: "stacks.staging: user alice has Read on imported stack staging"},
		{name: "importStacks: a non-production stack with a team deploy/ does not grant", meta: isolated, set: map[string]string{"importStacks": "true"}, org: func(o *fakecloud.Org) {
			o.Stacks["nodeless-eks/pr"] = fakecloud.StackGrants{Creator: deployer, Teams: map[string]int{"platform": 103}}
		}, refused: "stacks.pr: team platform has Admin on imported stack pr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := withCloud(t, tt.meta)
			org := isolatedOrg()
			if tt.org != nil {
				tt.org(&org)
			}
			api.PutOrg("my-org", org)
			if tt.name == "no production team in the organization" {
				api.Put("/api/orgs/my-org/teams/platform", nil)
			}
			rec, res := runPrepared(t, "Pulumi.example.yaml", tt.set, fixture{})
			if tt.refused != "" {
				rec.RequireRefused(t, res.Err, tt.refused)
				return
			}
			require.NoError(t, res.Err)
			assert.Contains(t, api.Requests, "GET /api/orgs/my-org/members")
			assert.Contains(t, api.Requests, "GET /api/orgs/my-org/teams/platform")
			assert.Contains(t, api.Requests, "GET /api/stacks/my-org/nodeless-eks/prod/teams")
			assert.Contains(t, api.Requests, "GET /api/stacks/my-org/nodeless-eks/prod/collaborators")
			if tt.meta.Features["customRolesEnabled"] {
				assert.Contains(t, api.Requests, "GET /api/orgs/my-org/teams")
			}
		})
	}
	t.Run("a grant source that cannot be read proves nothing", func(t *testing.T) {
		api := withCloud(t, isolated)
		api.Fail("/collaborators", 403)
		api.PutOrg("my-org", func() fakecloud.Org {
			o := isolatedOrg()
			o.Stacks = prodGrants(fakecloud.StackGrants{Creator: deployer})
			return o
		}())
		rec, res := runPrepared(t, "Pulumi.example.yaml", nil, fixture{})
		rec.RequireRefused(t, res.Err, "reading /api/stacks/my-org/nodeless-eks/prod/collaborators failed")
	})
	t.Run("a stack that exists and whose teams answer 404 is not taken for a stack without grants", func(t *testing.T) {
		api := withCloud(t, isolated)
		api.PutOrg("my-org", func() fakecloud.Org {
			o := isolatedOrg()
			o.Stacks = prodGrants(fakecloud.StackGrants{Creator: "bob"})
			return o
		}())
		api.Fail("/prod/teams", 404)
		rec, res := runPrepared(t, "Pulumi.example.yaml", nil, fixture{})
		rec.RequireRefused(t, res.Err, "the answer to GET /api/stacks/my-org/nodeless-eks/prod/teams lists no teams")
	})
}

// TestSettingsRewrittenByARun gives the staging stack settings that a run
// of its own code could have written with its token, and shows the
// preview saying each change and that the update writes the settings back;
// deploy/ refreshes before every update (Pulumi.yaml, options.refresh), so
// the provider reads what is in Pulumi Cloud and the update restores it.
func TestSettingsRewrittenByARun(t *testing.T) {
	proj, err := workspace.LoadProject("Pulumi.yaml")
	require.NoError(t, err)
	require.NotNil(t, proj.Options)
	assert.Equal(t, "always", proj.Options.Refresh, "every preview and update reads the settings back first")

	api := withCloud(t, isolated)
	c := configOf(t, "Pulumi.example.yaml", nil)
	ours := map[string]any{
		"cacheOptions": map[string]any{"enable": false},
		"vcs":          map[string]any{"previewPullRequests": true},
		"operationContext": map[string]any{
			"environmentVariables": map[string]any{"GITHUB_TOKEN": GitHubTokenWithheld},
			"preRunCommands":       PreRunCommands(c, "staging", boundaryArn(account, "staging"), RoleOf(c, "staging"), false),
			"oidc":                 map[string]any{"aws": map[string]any{"roleArn": "arn:aws:iam::" + account + ":role/deploy-staging-1a2b3c4"}},
		},
	}
	api.Put("/api/stacks/my-org/nodeless-eks/staging/deployments/settings", ours)
	warnings := captureWarnings(t)
	_, res := runPrepared(t, "Pulumi.example.yaml", nil, fixture{})
	require.NoError(t, res.Err)
	assert.False(t, slices.ContainsFunc(*warnings, func(w string) bool { return strings.Contains(w, "changed outside deploy/") }),
		"the settings deploy/ writes are not reported: %v", *warnings)

	rewritten := map[string]any{
		"cacheOptions": map[string]any{"enable": true},
		"vcs":          map[string]any{"previewPullRequests": true},
		"agentPoolID":  "pool-1",
		"operationContext": map[string]any{
			"environmentVariables": map[string]any{"PULUMI_ACCESS_TOKEN": map[string]any{"secret": "pul-..."}},
			"preRunCommands":       []string{"true"},
			"role":                 map[string]any{"id": "role-admin"},
			"oidc":                 map[string]any{"aws": map[string]any{"roleArn": "arn:aws:iam::" + prodAccount + ":role/deploy-prod-1a2b3c4"}},
		},
	}
	api.Put("/api/stacks/my-org/nodeless-eks/staging/deployments/settings", rewritten)
	// A Pulumi Cloud role is refused: pulumiservice v1.3.0 does not model
	// the field, so no update would write it back.
	rec, res := runPrepared(t, "Pulumi.example.yaml", nil, fixture{})
	rec.RequireRefused(t, res.Err, "stacks.staging: its deployment settings name a Pulumi Cloud role (role-admin), which deploy/ never sets and cannot remove")

	delete(rewritten["operationContext"].(map[string]any), "role")
	api.Put("/api/stacks/my-org/nodeless-eks/staging/deployments/settings", rewritten)
	*warnings = nil
	_, res = runPrepared(t, "Pulumi.example.yaml", nil, fixture{})
	require.NoError(t, res.Err)
	i := slices.IndexFunc(*warnings, func(w string) bool {
		return strings.HasPrefix(w, "stacks.staging: its deployment settings were changed outside deploy/")
	})
	require.GreaterOrEqual(t, i, 0, "warnings: %v", *warnings)
	for _, want := range []string{"a PULUMI_ACCESS_TOKEN", "GITHUB_TOKEN is not " + GitHubTokenWithheld,
		"the pre-run commands lack the GitHub token check", "dependency caching is on", `its runner pool is "pool-1", not ""`,
		"its AWS role is not deploy-staging", "this update writes them back"} {
		assert.Contains(t, (*warnings)[i], want)
	}
}
