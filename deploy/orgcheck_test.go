package main

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakecloud"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryGrantSourceIsRead: the check reads each source it names, and
// on a clean organization refuses nothing.
func TestEveryGrantSourceIsRead(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", nil, "prod", "staging")
	_, res := w.run(t, true)
	require.NoError(t, res.Err)
	var read []string
	for _, r := range w.api.Requests {
		if strings.HasPrefix(r, "GET ") {
			read = append(read, r)
		}
	}
	for _, source := range []string{
		"/api/orgs/my-org/metadata", "/api/orgs/my-org/roles", "/api/orgs/my-org/members", "/api/user/stacks",
		"/api/stacks/my-org/nodeless-eks/prod/collaborators", "/api/stacks/my-org/nodeless-eks/prod/teams",
		"/api/orgs/my-org/teams", "/api/orgs/my-org/teams/platform", "/api/orgs/my-org/tokens", "/api/orgs/my-org/oidc/issuers",
		"/api/orgs/my-org/auth/policies/oidcissuers/gha", "/api/orgs/my-org/agent-pools",
		"/api/stacks/my-org/" + project + "/admin/deployments/settings",
	} {
		assert.Contains(t, read, "GET "+source)
	}
}

// TestGrantsOutsideDeployAreRefused: each source, holding a grant that
// reaches the fleet from outside what deploy/ declares, or an answer the
// check cannot decide on, refuses the run before anything is registered,
// naming what to change.
func TestGrantsOutsideDeployAreRefused(t *testing.T) {
	feature := func(name string, v any) func(o *fakecloud.Organization) {
		return func(o *fakecloud.Organization) { o.Metadata["features"].(map[string]any)[name] = v }
	}
	meta := func(name string, v any) func(o *fakecloud.Organization) {
		return func(o *fakecloud.Organization) {
			if v == nil {
				delete(o.Metadata, name)
				return
			}
			o.Metadata[name] = v
		}
	}
	stack := func(name string, edit func(s *fakecloud.Stack)) func(o *fakecloud.Organization) {
		return func(o *fakecloud.Organization) {
			if s := o.Stacks["nodeless-eks/"+name]; s != nil {
				edit(s)
			}
		}
	}
	tests := []struct {
		name   string
		change func(o *fakecloud.Organization)
		want   string
	}{
		{"metadata without features", meta("features", nil), "its metadata does not say whether features.customRolesEnabled is on"},
		{"a feature left out", func(o *fakecloud.Organization) {
			delete(o.Metadata["features"].(map[string]any), "legacyDeploymentsOrgToken")
		},
			"features.legacyDeploymentsOrgToken"},
		{"no custom roles", feature("customRolesEnabled", false), "custom roles are off"},
		{"the legacy deployments token", feature("legacyDeploymentsOrgToken", true), "legacy organization token"},
		{"members read every stack", meta("defaultStackPermission", 101), "the default stack permission is not none"},
		{"no default stack permission", meta("defaultStackPermission", nil), "the default stack permission is not none"},
		{"members open environments", meta("defaultEnvironmentPermission", "open"), `the default environment permission is "open"`},
		{"members create stacks", meta("membersCanCreateStacks", true), "members can create stacks"},
		{"members transfer stacks", meta("membersCanTransferStacks", true), "members can transfer stacks"},
		{"a stack of another project tagged as the fleet's", func(o *fakecloud.Organization) {
			o.Stacks["scratch/x"] = &fakecloud.Stack{ID: "stk-x", Tags: map[string]string{"pulumi:project": "nodeless-eks"}}
			o.Metadata["stackCount"] = len(o.Stacks)
		}, "stack scratch/x carries the tag pulumi:project=nodeless-eks"},
		{"a person's grant on deploy/'s own stack", func(o *fakecloud.Organization) { o.Stacks[project+"/admin"].Users = []string{"bob"} },
			"stack nodeless-eks-deploy/admin: bob holds a permission of their own"},
		{"a team's grant on deploy/'s own stack", func(o *fakecloud.Organization) { o.Teams["developers"].Stacks = []string{project + "/admin"} },
			"team developers: holds a permission on stack nodeless-eks-deploy/admin"},
		{"a token of the operators' team", func(o *fakecloud.Organization) { o.Teams["developers"].Tokens = []string{"ci"} },
			`team developers: its access token "ci"`},
		{"an issuer that gives a run identity's team tokens", func(o *fakecloud.Organization) {
			o.Issuers[0].Policies[0]["teamName"] = "deploy-nodeless-eks-prod"
			o.Issuers[0].Policies[0]["tokenType"] = "team"
		}, "gives a token of team deploy-nodeless-eks-prod"},
		{"an issuer that gives admin tokens", func(o *fakecloud.Organization) { o.Issuers[0].Policies[0]["roleID"] = adminRole },
			`gives a token with role "role-admin"`},
		{"production in the permissive mode", meta("permissionMode", "permissive"), "production and review stacks need the restricted mode"},
		{"an edition without the permission mode", meta("permissionMode", nil), `in the "permissive" permission mode`},
		{"a role known only by its display name", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-x", Name: "Member"})
			o.Members[1].RoleID = "role-x"
		}, `member alice (frontend): holds role "role-x" (Member)`},
		{"a member who reads every stack", func(o *fakecloud.Organization) { o.Members[2].RoleID = readerRole }, `member bob (frontend): holds role "role-reader"`},
		{"a service principal with a custom role", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-ci", Name: "ci"})
			o.Members = append(o.Members, fakecloud.Member{Login: "ci-bot", Kind: "service-principal", RoleID: "role-ci"})
		}, "member ci-bot (service-principal)"},
		{"a stack deploy/ cannot see", meta("stackCount", 9), "holds 9 stacks, and deploy/ sees"},
		{"a stack of the project deploy/ does not name", func(o *fakecloud.Organization) {
			o.Stacks["nodeless-eks/scratch"] = &fakecloud.Stack{ID: "stk-scratch"}
			o.Metadata["stackCount"] = len(o.Stacks)
		}, "stack nodeless-eks/scratch is neither a stack of deploy/'s nor a review stack"},
		{"a person's own grant on a stack", stack("prod", func(s *fakecloud.Stack) { s.Users = []string{"bob"} }), "stack prod: bob holds a permission of their own"},
		{"a creator who is no admin", stack("prod", func(s *fakecloud.Stack) { s.Creator = "bob" }), "stack prod: bob created it"},
		{"a team's grant on a stack", stack("staging", func(s *fakecloud.Stack) { s.Teams = []string{"developers"} }), "stack staging: team developers holds a permission"},
		{"a team's stack grant, seen from the team", func(o *fakecloud.Organization) { o.Teams["developers"].Stacks = []string{"nodeless-eks/prod"} },
			"team developers: holds a permission on stack nodeless-eks/prod"},
		{"a team's grant on an environment", func(o *fakecloud.Organization) { o.Teams["platform"].Environments = []string{"nodeless-eks/prod"} },
			"team platform: holds a permission on environment nodeless-eks/prod"},
		{"a member of a run identity's team", func(o *fakecloud.Organization) {
			o.Teams["deploy-nodeless-eks-prod"] = &fakecloud.Team{Members: []string{"bob"}}
		}, "team deploy-nodeless-eks-prod: bob is a member"},
		{"a token of a run identity's team", func(o *fakecloud.Organization) {
			o.Teams["deploy-nodeless-eks-prod"] = &fakecloud.Team{Tokens: []string{"ci"}}
		}, `team deploy-nodeless-eks-prod: its access token "ci"`},
		{"deploy/'s role held by another team", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-deploy-nodeless-eks-prod", Name: "deploy-nodeless-eks-prod"})
			o.Teams["developers"].RoleIDs = []string{"role-deploy-nodeless-eks-prod"}
		}, `team developers: holds role "role-deploy-nodeless-eks-prod"`},
		{"deploy/'s role held by a person", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-deploy-nodeless-eks-prod", Name: "deploy-nodeless-eks-prod"})
			o.Members[2].RoleID = "role-deploy-nodeless-eks-prod"
		}, `member bob (frontend): holds role "role-deploy-nodeless-eks-prod"`},
		{"the operators' role held by a token", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-ops", Name: "operate-nodeless-eks-production"})
			o.Tokens = []fakecloud.Token{{Name: "ci", RoleID: "role-ops"}}
		}, `organization access token "ci" holds role "role-ops"`},
		{"a role named like deploy/'s that it does not declare", func(o *fakecloud.Organization) {
			o.Roles = append(o.Roles, fakecloud.Role{ID: "role-deploy-x", Name: "deploy-nodeless-eks-x"})
			o.Teams["deploy-nodeless-eks-x"] = &fakecloud.Team{RoleIDs: []string{"role-deploy-x"}}
		}, `holds role "role-deploy-x"`},
		{"an admin token not named", func(o *fakecloud.Organization) { o.Tokens = []fakecloud.Token{{Name: "ci", Admin: true}} },
			`organization access token "ci" is admin`},
		{"an admin token on the second page", func(o *fakecloud.Organization) {
			o.PageSize = 1
			o.Tokens = []fakecloud.Token{{Name: "reader", RoleID: memberRole}, {Name: "ci", Admin: true}}
		}, `organization access token "ci" is admin`},
		{"a token with the Admin role", func(o *fakecloud.Organization) { o.Tokens = []fakecloud.Token{{Name: "ci", RoleID: adminRole}} },
			`"ci" holds the Admin role`},
		{"a token that reads every stack", func(o *fakecloud.Organization) { o.Tokens = []fakecloud.Token{{Name: "ci", RoleID: readerRole}} },
			`"ci" holds role "role-reader"`},
		{"an issuer that admits pull requests", func(o *fakecloud.Organization) {
			o.Issuers[0].Policies[0]["rules"] = map[string]any{"sub": "repo:my-org/nodeless-eks:pull_request"}
		}, "OIDC issuer github-actions"},
		{"an issuer that admits any subject", func(o *fakecloud.Organization) { o.Issuers[0].Policies[0]["rules"] = map[string]any{} },
			"OIDC issuer github-actions"},
		{"a default pool production and pull requests share", func(o *fakecloud.Organization) { o.DefaultAgentPool = "pool-shared" },
			"the organization's default runner pool pool-shared"},
		{"runner pools deploy/ cannot read", func(o *fakecloud.Organization) { o.NoAgentPools = true }, "reading the organization's runner pools"},
		{"deploy/ previews its own pull requests", stack("admin", func(*fakecloud.Stack) {}), ""},
		{"deploy/ previews its pull requests by the legacy block", func(o *fakecloud.Organization) {
			o.Stacks[project+"/admin"].Settings["gitHub"] = map[string]any{"repository": "my-org/nodeless-eks", "previewPullRequests": true}
		}, "deploy/'s stack admin previews pull requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "Pulumi.example.yaml", nil, "prod", "staging")
			if tt.want == "" {
				w.org.Stacks[project+"/admin"].Settings["vcs"].(map[string]any)["previewPullRequests"] = true
				tt.want = "deploy/'s stack admin previews pull requests"
			} else {
				tt.change(w.org)
			}
			rec, res := w.run(t, true)
			rec.RequireRefused(t, res.Err, tt.want)
		})
	}
}

// TestAnswersTheCheckCannotReadRefuse: a source that answers an error
// refuses, whatever the error.
func TestAnswersTheCheckCannotReadRefuse(t *testing.T) {
	for _, suffix := range []string{"/members", "/tokens", "/oidc/issuers", "/teams", "/collaborators", "/user/stacks"} {
		t.Run(suffix, func(t *testing.T) {
			w := newWorld(t, "Pulumi.example.yaml", nil, "prod")
			w.api.Fail(suffix, http.StatusServiceUnavailable)
			rec, res := w.run(t, true)
			rec.RequireRefused(t, res.Err, "deploy/ refuses what it cannot read")
		})
	}
}

// TestPermissiveModeWithoutProduction: a fleet without production or
// review stacks may run in the permissive mode, with a warning saying what
// it gives up.
func TestPermissiveModeWithoutProduction(t *testing.T) {
	w := newWorld(t, "Pulumi.example.yaml", map[string]string{"stacks": `{"staging": {"account": "dev"}}`,
		"accounts": `{"dev": {"id": "123456789012"}}`, "productionTeam": "", "reviewStacks": "{}"})
	w.org.Metadata["permissionMode"] = "permissive"
	warnings := captureWarnings(t)
	_, res := w.run(t, true)
	require.NoError(t, res.Err)
	sort.Strings(*warnings)
	assert.Contains(t, strings.Join(*warnings, "\n"), `is in the "permissive" permission mode, where a stack whose settings lose their service principal runs as whoever starts it`)
}
