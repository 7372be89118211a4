package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"

	"nodeless-eks/internal/stackfile"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	project = "nodeless-eks-deploy"
	account = "123456789012"
)

type registration struct {
	Type, Name, URN string
	Inputs          resource.PropertyMap
	Dependencies    []string
}

type recorder struct {
	mu   sync.Mutex
	regs []*registration
}

func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	reg := &registration{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs,
		URN: fmt.Sprintf("urn:pulumi:admin::%s::%s::%s", project, args.TypeToken, args.Name)}
	if rpc := args.RegisterRPC; rpc != nil {
		reg.Dependencies = rpc.GetDependencies()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, reg)
	state := args.Inputs.Copy()
	switch args.TypeToken {
	case "aws:iam/role:Role":
		state["name"] = resource.NewProperty(args.Name + "-7f3a")
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":role/" + args.Name + "-7f3a")
	case "aws:iam/policy:Policy":
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":policy/" + args.Name + "-7f3a")
	case "aws:iam/openIdConnectProvider:OpenIdConnectProvider":
		state["arn"] = resource.NewProperty("arn:aws:iam::" + account + ":oidc-provider/api.pulumi.com/oidc")
	}
	return args.Name + "-id", state, nil
}

func (r *recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	switch args.Token {
	case "aws:index/getCallerIdentity:getCallerIdentity":
		return resource.PropertyMap{"accountId": resource.NewProperty(account)}, nil
	case "aws:index/getPartition:getPartition":
		return resource.PropertyMap{"partition": resource.NewProperty("aws")}, nil
	}
	return nil, fmt.Errorf("unexpected invoke %s", args.Token)
}

func (r *recorder) ofType(typ string) []*registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*registration
	for _, reg := range r.regs {
		if reg.Type == typ {
			out = append(out, reg)
		}
	}
	return out
}

func (r *recorder) get(t *testing.T, typ, name string) *registration {
	t.Helper()
	for _, reg := range r.ofType(typ) {
		if reg.Name == name {
			return reg
		}
	}
	t.Fatalf("no %s named %s", typ, name)
	return nil
}

// run runs the program with Pulumi.example.yaml, read as the Pulumi CLI
// reads it (internal/stackfile), and the given changes ("" deletes a key).
func run(t *testing.T, set map[string]string) (*recorder, error) {
	t.Helper()
	cfg, err := stackfile.Load("Pulumi.yaml", "Pulumi.example.yaml")
	require.NoError(t, err, "the Pulumi CLI would refuse Pulumi.example.yaml")
	for k, v := range set {
		if !strings.Contains(k, ":") {
			k = project + ":" + k
		}
		if v == "" {
			delete(cfg, k)
			continue
		}
		cfg[k] = v
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(b))
	rec := &recorder{}
	return rec, pulumi.RunErr(program, pulumi.WithMocks(project, "admin", rec))
}

type policyStatement struct {
	Sid       string
	Effect    string
	Principal map[string]any
	Action    any
	Resource  any
	Condition map[string]map[string]any
}

func parse(t *testing.T, doc string) []policyStatement {
	t.Helper()
	var d struct{ Statement []policyStatement }
	require.NoError(t, json.Unmarshal([]byte(doc), &d))
	return d.Statement
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = e.(string)
		}
		return out
	}
	return nil
}

func TestExampleConfig(t *testing.T) {
	rec, err := run(t, nil)
	require.NoError(t, err)

	t.Run("Pulumi Cloud is the OIDC provider, for both audiences", func(t *testing.T) {
		p := rec.get(t, "aws:iam/openIdConnectProvider:OpenIdConnectProvider", "pulumi-cloud")
		assert.Equal(t, "https://api.pulumi.com/oidc", p.Inputs["url"].StringValue())
		var ids []string
		for _, v := range p.Inputs["clientIdLists"].ArrayValue() {
			ids = append(ids, v.StringValue())
		}
		assert.Equal(t, []string{"my-org", "aws:my-org"}, ids)
	})

	role := rec.get(t, "aws:iam/role:Role", "deploy")
	t.Run("the deploy role trusts exactly the configured stacks, review stacks and their environments", func(t *testing.T) {
		trust := parse(t, role.Inputs["assumeRolePolicy"].StringValue())
		require.Len(t, trust, 2)
		for _, st := range trust {
			assert.Equal(t, "sts:AssumeRoleWithWebIdentity", st.Action)
			assert.Equal(t, "arn:aws:iam::"+account+":oidc-provider/api.pulumi.com/oidc", st.Principal["Federated"])
		}
		assert.Equal(t, map[string]map[string]any{
			"StringEquals": {"api.pulumi.com/oidc:aud": "my-org"},
			"StringLike": {"api.pulumi.com/oidc:sub": []any{
				"pulumi:deploy:org:my-org:project:nodeless-eks:stack:prod:operation:*:scope:write",
				"pulumi:deploy:org:my-org:project:nodeless-eks:stack:staging:operation:*:scope:write",
				"pulumi:deploy:org:my-org:project:nodeless-eks:stack:pr-*:operation:*:scope:write",
			}},
		}, trust[0].Condition, "Deployments: the organization as audience")
		assert.Equal(t, map[string]map[string]any{
			"StringEquals": {
				"api.pulumi.com/oidc:aud": "aws:my-org",
				"api.pulumi.com/oidc:sub": []any{
					"pulumi:environments:org:my-org:env:nodeless-eks/prod",
					"pulumi:environments:org:my-org:env:nodeless-eks/staging",
				},
			},
		}, trust[1].Condition, "ESC: aws:<org> as audience, one environment per stack, no wildcard")
	})

	t.Run("one environment, settings and drift schedule per stack", func(t *testing.T) {
		for _, stack := range []string{"prod", "staging"} {
			env := rec.get(t, "pulumiservice:index:Environment", "env-"+stack)
			assert.Equal(t, stack, env.Inputs["name"].StringValue())
			assert.Equal(t, "nodeless-eks", env.Inputs["project"].StringValue())
			assert.Contains(t, env.Inputs["yaml"].AssetValue().Text, "roleArn: arn:aws:iam::"+account+":role/deploy-7f3a")
			assert.Contains(t, env.Inputs["yaml"].AssetValue().Text, "fn::open::aws-login:")

			settings := rec.get(t, "pulumiservice:index:DeploymentSettings", "settings-"+stack)
			vcs := settings.Inputs["vcs"].ObjectValue()
			assert.Equal(t, "github", vcs["provider"].StringValue())
			assert.Equal(t, "my-org/nodeless-eks", vcs["repository"].StringValue())
			assert.Equal(t, true, vcs["deployCommits"].V, "push to deploy")
			assert.Equal(t, true, vcs["previewPullRequests"].V, "pull requests preview")
			assert.Equal(t, false, vcs["pullRequestTemplate"].V)
			git := settings.Inputs["sourceContext"].ObjectValue()["git"].ObjectValue()
			assert.Equal(t, "refs/heads/main", git["branch"].StringValue())
			assert.Equal(t, ".", git["repoDir"].StringValue())
			assert.Equal(t, true, settings.Inputs["cacheOptions"].ObjectValue()["enable"].V)
			oidc := settings.Inputs["operationContext"].ObjectValue()["oidc"].ObjectValue()["aws"].ObjectValue()
			assert.Equal(t, "arn:aws:iam::"+account+":role/deploy-7f3a", oidc["roleARN"].StringValue())
			assert.Equal(t, "6h0m0s", oidc["duration"].StringValue())

			drift := rec.get(t, "pulumiservice:index:DriftSchedule", "drift-"+stack)
			assert.Equal(t, false, drift.Inputs["autoRemediate"].V, "drift is reported, not overwritten")
			assert.Contains(t, drift.Dependencies, settings.URN, "a schedule needs the stack's settings")
		}
		assert.Equal(t, "0 */6 * * *", rec.get(t, "pulumiservice:index:DriftSchedule", "drift-staging").Inputs["scheduleCron"].StringValue())
	})

	t.Run("path filters skip docs, the deploy project and the example VPC", func(t *testing.T) {
		settings := rec.get(t, "pulumiservice:index:DeploymentSettings", "settings-prod")
		var paths []string
		for _, p := range settings.Inputs["vcs"].ObjectValue()["paths"].ArrayValue() {
			paths = append(paths, p.StringValue())
		}
		deployed := func(file string) bool {
			in := false
			for _, p := range paths { // the last matching filter wins
				if globMatch(strings.TrimPrefix(p, "!"), file) {
					in = !strings.HasPrefix(p, "!")
				}
			}
			return in
		}
		for file, want := range map[string]bool{
			"main.go": true, "cluster/cluster.go": true, "go.sum": true, "Pulumi.prod.yaml": true,
			"README.md": false, "deploy/main.go": false, "examples/vpc/main.go": false, "config_test.go": false,
		} {
			assert.Equalf(t, want, deployed(file), "a change to %s deploys: %v (filters %v)", file, want, paths)
		}
	})

	t.Run("runs fail fast without Go or the AWS CLI", func(t *testing.T) {
		cmds := rec.get(t, "pulumiservice:index:DeploymentSettings", "settings-prod").Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		require.Len(t, cmds, 2, "named stacks get no TTL")
		assert.Contains(t, cmds[0].StringValue(), "command -v go")
		assert.Contains(t, cmds[1].StringValue(), "command -v aws")
	})

	t.Run("the review template is never deployed itself, and its copies expire", func(t *testing.T) {
		tmpl := rec.get(t, "pulumiservice:index:DeploymentSettings", "settings-pr")
		vcs := tmpl.Inputs["vcs"].ObjectValue()
		assert.Equal(t, true, vcs["pullRequestTemplate"].V)
		assert.Equal(t, false, vcs["deployCommits"].V)
		cmds := tmpl.Inputs["operationContext"].ObjectValue()["preRunCommands"].ArrayValue()
		require.Len(t, cmds, 3)
		ttl := cmds[2].StringValue()
		assert.Contains(t, ttl, `[ "$PULUMI_CI_STACK" != "pr" ]`, "not the template itself")
		assert.Contains(t, ttl, "+8 hours")
		assert.Contains(t, ttl, "/deployments/ttl/schedules")
		assert.Contains(t, ttl, `\"deleteAfterDestroy\":true`)
		for _, d := range rec.ofType("pulumiservice:index:DriftSchedule") {
			assert.NotEqual(t, "pr", d.Inputs["stack"].StringValue(), "the template has nothing to drift")
		}
		assert.Empty(t, rec.ofType("pulumiservice:index:TtlSchedule"), "a TtlSchedule names one stack and one time")
	})
}

func TestSessionCoversTheLongestDestroy(t *testing.T) {
	raw, err := os.ReadFile("../testdata/destroy-bound.golden.json")
	require.NoError(t, err, "written by the root project's TestLongestDestroyForTheDeployRole")
	var bound struct {
		Seconds int      `json:"seconds"`
		Path    []string `json:"path"`
	}
	require.NoError(t, json.Unmarshal(raw, &bound))
	require.Positive(t, bound.Seconds)

	rec, err := run(t, nil)
	require.NoError(t, err)
	session := rec.get(t, "aws:iam/role:Role", "deploy").Inputs["maxSessionDuration"].NumberValue()
	assert.GreaterOrEqual(t, int(session), bound.Seconds,
		"the deploy role's session must outlast the root program's longest destroy: %v", bound.Path)
	assert.LessOrEqual(t, int(session), 12*3600, "IAM allows at most 12 hours")
}

// allows reports whether a statement's action list grants action.
func allows(patterns []string, action string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(action)); ok {
			return true
		}
	}
	return false
}

func TestDeployerPolicyCoversWhatTheRootProgramCreates(t *testing.T) {
	raw, err := os.ReadFile("../testdata/registered-types.golden.json")
	require.NoError(t, err, "written by the root project's TestRegisteredTypesForTheDeployRole")
	var registered struct{ Resources, Invokes []string }
	require.NoError(t, json.Unmarshal(raw, &registered))
	require.NotEmpty(t, registered.Resources)

	doc, err := DeployerPolicy(scope{partition: "aws", region: "eu-west-1", account: account, prefix: "nodeless-eks-"})
	require.NoError(t, err)
	var granted []string
	for _, st := range parse(t, doc) {
		require.Equal(t, "Allow", st.Effect)
		granted = append(granted, strs(st.Action)...)
		for _, r := range strs(st.Resource) {
			if r == "*" {
				// Every action on * is read-only or carries a condition.
				for _, a := range strs(st.Action) {
					verb := a[strings.Index(a, ":")+1:]
					if !strings.HasPrefix(verb, "Describe") && !strings.HasPrefix(verb, "List") && !strings.HasPrefix(verb, "Get") {
						assert.NotEmptyf(t, st.Condition, "statement %s allows %s on *", st.Sid, a)
					}
				}
			}
		}
	}
	for _, typ := range append(registered.Resources, registered.Invokes...) {
		exempt := false
		for _, p := range exemptPrefixes {
			exempt = exempt || strings.HasPrefix(typ, p)
		}
		if exempt {
			continue
		}
		actions, ok := deployerActions[typ]
		if !assert.Truef(t, ok, "the root program registers %s, which no entry of deployerActions covers; add its actions and a statement", typ) {
			continue
		}
		for _, a := range actions {
			assert.Truef(t, allows(granted, a), "%s needs %s, which the deployer policy does not allow", typ, a)
		}
	}
}

func TestOrganisationManagedPolicyAndProvider(t *testing.T) {
	rec, err := run(t, map[string]string{
		"oidcProviderArn":  "arn:aws:iam::" + account + ":oidc-provider/api.pulumi.com/oidc",
		"deployPolicyArns": `["arn:aws:iam::` + account + `:policy/platform-deployer"]`,
	})
	require.NoError(t, err)
	assert.Empty(t, rec.ofType("aws:iam/openIdConnectProvider:OpenIdConnectProvider"), "an account has one provider per URL")
	assert.Empty(t, rec.ofType("aws:iam/policy:Policy"), "the organisation's policy replaces ours")
	attachments := rec.ofType("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
	require.Len(t, attachments, 1)
	assert.Equal(t, "arn:aws:iam::"+account+":policy/platform-deployer", attachments[0].Inputs["policyArn"].StringValue())
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want string
	}{
		{"no organization", map[string]string{"organization": ""}, `organization "": required`},
		{"repository without owner", map[string]string{"repository": "nodeless-eks"}, `repository "nodeless-eks": required, the GitHub repository as owner/name`},
		{"no stacks", map[string]string{"stacks": "{}"}, "stacks: name at least one stack"},
		{"a stack named like a review stack", map[string]string{"stacks": `{"pr-1":{}}`}, `stacks "pr-1": reserved for review stacks`},
		{"a drift schedule that is not cron", map[string]string{"stacks": `{"prod":{"driftSchedule":"daily"}}`}, `stacks.prod.driftSchedule "daily": want a cron expression`},
		{"an unknown stack setting", map[string]string{"stacks": `{"prod":{"drift":"0 4 * * *"}}`}, `stacks: want an object of stacks by name, each {driftSchedule, autoRemediate}: json: unknown field "drift"`},
		{"a TTL of zero", map[string]string{"reviewStackTtlHours": "0"}, `reviewStackTtlHours "0": want 1-720 hours`},
		{"a session beyond IAM's limit", map[string]string{"sessionHours": "13"}, `sessionHours "13": want 1-12`},
		{"another provider's ARN", map[string]string{"oidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"}, "want the ARN of the api.pulumi.com/oidc provider"},
		{"a policy name for an ARN", map[string]string{"deployPolicyArns": `["AdministratorAccess"]`}, `deployPolicyArns[0] "AdministratorAccess": want a managed policy ARN`},
		{"review stacks not a bool", map[string]string{"reviewStacks": "yes"}, `reviewStacks: "yes": want true or false`},
		{"a repoDir outside the repository", map[string]string{"repoDir": "../other"}, `repoDir "../other": want a directory inside the repository`},
		{"a cluster name prefix too short", map[string]string{"clusterNamePrefix": "a"}, `clusterNamePrefix "a": want 3-41 letters`},
		{"no region", map[string]string{"aws:region": ""}, `aws:region "": want the region of the root stacks`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := run(t, tt.set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, rec.regs, "nothing is registered for bad config")
		})
	}
}

// globMatch matches a path filter: ** spans directories, * does not.
func globMatch(glob, file string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			re.WriteString(".*")
			i++
		case glob[i] == '*':
			re.WriteString("[^/]*")
		default:
			re.WriteString(regexp.QuoteMeta(string(glob[i])))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(file)
}
