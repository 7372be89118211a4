package main

import (
	"encoding/json"
	"os"
	"testing"

	"nodeless-eks/internal/iampolicy"

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
// the review stacks') and deploy/ run as a role of a tooling
// account: the organization's settings (step 2: cleanOrg), each account's
// role and OIDC provider (step 3: fleetAWS), deploy/'s own stack and
// settings (step 4), then its `pulumi up` (step 5), which hands over
// staging, a quick-start stack that a member created, by import: the
// first preview refuses the creator's grant, which step 5 says to remove.
// Each stack file goes to the root project, whose
// TestWalkthroughStacksUnderTheirDeployRoles runs it under its role.
func TestWalkthrough(t *testing.T) {
	handover := map[string]string{"stacks": `{"prod": {"account": "prod", "production": true, "driftSchedule": "0 4 * * *"},
		"staging": {"account": "dev", "import": true}}`}
	w := newWorld(t, "Pulumi.example.yaml", handover, "staging")
	w.org.Stacks["nodeless-eks/staging"].Creator = "alice" // her quick start

	rec, res := w.run(t, true)
	rec.RequireRefused(t, res.Err, "stack staging: alice created it and holds Stack Admin on it as its creator")
	w.org.Stacks["nodeless-eks/staging"].Creator = "" // the stack's Settings, Access

	rec, res = w.run(t, false)
	require.NoError(t, res.Err, "step 5")
	assert.Equal(t, "my-org/nodeless-eks/staging", rec.Get(t, "pulumiservice:index:Stack", "stack-staging").ImportID)
	assert.Equal(t, "stk-staging", w.org.Stacks["nodeless-eks/staging"].ID, "the quick start's stack, not a new one")
	assert.Equal(t, "deploy-nodeless-eks-staging", field(w.settingsOf(t, "staging"), "operationContext.servicePrincipal.teamName"))
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

	// The next hourly run finds everything as declared and writes nothing.
	_, res = w.run(t, false)
	require.NoError(t, res.Err)
	for stack, status := range res.Exports["settings"].(map[string]string) {
		assert.Equal(t, "as declared", status, stack)
	}
}
