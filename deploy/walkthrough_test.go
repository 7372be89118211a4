package main

import (
	"encoding/json"
	"os"
	"testing"

	"nodeless-eks/internal/iampolicy"
	"nodeless-eks/testkit/fakecloud"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkthroughGolden is what the walkthrough leaves for the root project's
// TestWalkthroughStacksUnderTheirDeployRoles: each root stack file as the
// checklist writes it, the deploy role deploy/ registered for it (its
// deployer policy and boundary ARN, in its account and region), and the
// actions deploy/ holds each type of the root program to.
const walkthroughGolden = "../testdata/walkthrough.golden.json"

// walkthroughStack is one stack of the walkthrough.
type walkthroughStack struct {
	Name, Account, Region string
	// StackFile is Pulumi.<name>.yaml as deploy/'s stackFiles output gives it.
	StackFile string
	// DeployerPolicy is the stack's registered deployer policy, its parts
	// as one document.
	DeployerPolicy iampolicy.Document
	// Boundary is the ARN every role the stack creates must carry.
	Boundary string
}

// TestWalkthrough follows deploy/README.md's checklist under mocks, for
// the example's accounts (production's, development's with staging, and
// the review stacks') and deploy/ run as a role of a tooling account: the
// organization's settings (step 2: cleanOrg), each account's role and
// OIDC provider (step 3: fleetAWS), deploy/'s own stack (step 4), then its
// first `pulumi up` by hand (step 5), which hands over staging, a quick
// start's stack, by import; then the hourly restore and a second `up`.
// Pulumi Cloud adds each new team's creator as a member (the fixture's
// created); the restore's refresh and update remove them. Grants only an
// admin can make are not read, so the restore runs with a member's team
// named like deploy/'s, an organization token with a custom role and a
// review stack's collaborator in the organization. Each stack file goes
// to the root project, whose TestWalkthroughStacksUnderTheirDeployRoles
// runs it under its role.
func TestWalkthrough(t *testing.T) {
	handover := map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "driftSchedule": "0 4 * * *"},
		"staging": {"account": "dev", "import": true}}`}
	w := newWorld(t, "Pulumi.example.yaml", handover, "staging")
	identities := []string{"deploy-nodeless-eks-prod", "deploy-nodeless-eks-staging", "deploy-nodeless-eks-review"}

	rec, res := w.run(t, false)
	require.NoError(t, res.Err, "step 5")
	assert.Equal(t, "my-org/nodeless-eks/staging", rec.Get(t, "pulumiservice:index:Stack", "stack-staging").ImportID)
	assert.Equal(t, "stk-staging", w.org.Stacks["nodeless-eks/staging"].ID, "the quick start's stack, not a new one")
	assert.Equal(t, "deploy-nodeless-eks-staging", field(w.settingsOf(t, "staging"), "operationContext.servicePrincipal.teamName"))
	assert.Equal(t, "deploy-admin", field(w.org.Stacks[project+"/admin"].Settings, "operationContext.servicePrincipal.userId"),
		"deploy/'s own settings select its service principal")
	for _, team := range identities {
		assert.Equal(t, []string{admin}, w.org.Teams[team].Members, "Pulumi Cloud made %s's creator a member", team)
	}
	// The deploy role has the name the handover's first step gives its
	// access entry.
	assert.Equal(t, "arn:aws:iam::"+devAccount+":role/deploy-staging", res.Exports["deployRoleArns"].(map[string]string)["staging"])

	files := res.Exports["stackFiles"].(map[string]string)
	var stacks []walkthroughStack
	for _, name := range []string{"prod", "staging", "pr"} {
		r := RoleOf(w.c, name)
		stacks = append(stacks, walkthroughStack{Name: name, Account: w.c.Accounts[r.Account].ID, Region: r.Region, StackFile: files[name],
			DeployerPolicy: policyOf(t, rec, r.Key), Boundary: BoundaryArn(w.c, "aws", w.c.Accounts[r.Account].ID, r.Key)})
	}
	golden := struct {
		Actions map[string][]string
		Stacks  []walkthroughStack
	}{deployerActions, stacks}
	want, err := json.MarshalIndent(golden, "", " ")
	require.NoError(t, err)
	want = append(want, '\n')
	if *update {
		require.NoError(t, os.WriteFile(walkthroughGolden, want, 0o644))
	}
	got, err := os.ReadFile(walkthroughGolden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "%s is written by this test: go test -run TestWalkthrough -update, then the root project's tests", walkthroughGolden)

	// What admins may do, and the old audit refused, stops nothing.
	w.org.Teams["deploy-nodeless-eks-x"] = &fakecloud.Team{Members: []string{"bob"}}
	w.org.Tokens = append(w.org.Tokens, fakecloud.Token{Name: "ci", RoleID: "role-custom"})
	w.org.Stacks["nodeless-eks/pr-3"] = &fakecloud.Stack{ID: "stk-pr-3", Users: []string{"bob"}, Settings: map[string]any{
		"sourceContext": map[string]any{"git": map[string]any{"branch": "refs/pull/3/head"}}}}
	w.org.Metadata["stackCount"] = len(w.org.Stacks)

	// The hourly restore, then a second `up` by hand: the creators are gone
	// from the identities, and the third finds everything as declared.
	for _, run := range []string{"the hourly restore", "the second up"} {
		_, res = w.run(t, false)
		require.NoError(t, res.Err, run)
		for _, team := range identities {
			assert.Empty(t, w.org.Teams[team].Members, "%s: %s has no members", run, team)
		}
	}
	assert.Equal(t, []string{"bob"}, w.org.Teams["deploy-nodeless-eks-x"].Members, "a team deploy/ does not declare is not touched")
	for stack, status := range res.Exports["settings"].(map[string]string) {
		assert.Equal(t, "as declared", status, stack)
	}
}
