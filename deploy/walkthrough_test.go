package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// StackFile is Pulumi.<name>.yaml as the checklist writes it.
	StackFile string
	// DeployerPolicy is the stack's registered deployer policy, its parts
	// as one document.
	DeployerPolicy iampolicy.Document
	// Boundary is the ARN every role the stack creates must carry.
	Boundary string
}

// TestWalkthrough follows deploy/README.md's checklist under mocks, for a
// fixture organization with two accounts (production's, and a development
// account with staging and the review stacks) and deploy/ run from a
// tooling account: the organization's defaults and teams (step 2-3), one
// account role per account (step 4, TestAccountRoleCoversWhatDeployCreates),
// examples/vpc per account and region (step 5: the fake accounts hold the
// VPCs), the Spot role (step 6), root stack files written as RootStackFile
// says (step 7), then `pulumi up` of deploy/ (step 8). Each stack's
// registered deploy role goes to the root project, whose
// TestWalkthroughStacksUnderTheirDeployRoles runs the program of each
// stack file under that role. Then a stack file copied from another stack
// is refused, at deploy/'s preview and by the pre-run check of the
// stack's own runs, in seconds.
func TestWalkthrough(t *testing.T) {
	withCloud(t, isolated)
	c := configOf(t, "Pulumi.example.yaml", nil)
	dir := writeRootStacks(t, c, nil)
	rec, res := fleetAccounts(c).RunStackFile(t, project, "admin", "Pulumi.example.yaml", map[string]string{"rootProjectDir": dir}, program)
	require.NoError(t, res.Err, "deploy/ up, step 8")

	var stacks []walkthroughStack
	for _, name := range []string{"prod", "staging", "pr"} {
		r := RoleOf(c, name)
		file, err := os.ReadFile(filepath.Join(dir, "Pulumi."+name+".yaml"))
		require.NoError(t, err)
		stacks = append(stacks, walkthroughStack{Name: name, Account: c.Accounts[r.Account].ID, Region: r.Region, StackFile: string(file),
			DeployerPolicy: policyOf(t, rec, deployRoleName+r.Key), Boundary: BoundaryArn(c, "aws", c.Accounts[r.Account].ID, r.BoundaryKey)})
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

	// A copy of staging's file as production's, with production's region,
	// boundary and production: true, but staging's clusterName.
	copied := func(stack, file string) string {
		if stack != "prod" {
			return file
		}
		staging := fillVpc(RootStackFile(c, "staging", "aws"), vpcNameOf("prod"))
		staging = replaceLine(staging, "nodeless-eks:iamPermissionsBoundary", "nodeless-eks:iamPermissionsBoundary: "+boundaryArn(prodAccount, "prod"))
		for _, k := range []string{"production: true", "supportType: STANDARD", "allowPublicEndpointFromInternet: true"} {
			staging = replaceLine(staging, "nodeless-eks:"+strings.SplitN(k, ":", 2)[0], "nodeless-eks:"+k)
		}
		return staging
	}
	t.Run("a copied stack file is refused at deploy/'s preview", func(t *testing.T) {
		start := time.Now()
		rec, res := runPrepared(t, "Pulumi.example.yaml", nil, fixture{edit: copied})
		rec.RequireRefused(t, res.Err, `stacks.prod: `)
		assert.Contains(t, res.Err.Error(), `Pulumi.prod.yaml, nodeless-eks:clusterName: is "nodeless-eks-staging" (the cluster it would create); deploy/'s entry says "nodeless-eks-prod"`)
		assert.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("and by the pre-run check of the stack's runs, which reads the file the runner checked out", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not on PATH; the command finds the checkout with git")
		}
		checkout := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(checkout, "Pulumi.prod.yaml"), []byte(copied("prod", "")), 0o644))
		require.NoError(t, exec.Command("git", "-C", checkout, "init", "-q").Run())
		bin := t.TempDir()
		// pulumi config get <key> --stack <org/project/stack>: the value
		// the stack file in the working directory sets, as the CLI reads
		// a scalar, or the CLI's message for a key it does not set.
		fake := "#!/bin/sh\nstack=${5##*/}\n" +
			"v=$(sed -n \"s|^  $3: ||p\" \"Pulumi.$stack.yaml\")\n" +
			"[ -n \"$v\" ] || { echo \"error: configuration key '$3' not found for stack '$5'\" >&2; exit 255; }\necho \"$v\"\n"
		require.NoError(t, os.WriteFile(filepath.Join(bin, "pulumi"), []byte(fake), 0o755))
		cmd := exec.Command("sh", "-c", StackCheckCommand(c, boundaryArn(prodAccount, "prod"), RoleOf(c, "prod"), false))
		cmd.Dir = checkout
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PULUMI_CI_ORGANIZATION=my-org", "PULUMI_CI_PROJECT=nodeless-eks",
			"PULUMI_CI_STACK=prod", "TMPDIR="+t.TempDir())
		start := time.Now()
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "the run stops: %s", out)
		assert.Contains(t, string(out), `stack prod must set nodeless-eks:clusterName to nodeless-eks-prod (it has "nodeless-eks-staging")`)
		assert.Less(t, time.Since(start), 5*time.Second, "before any build")

		require.NoError(t, os.WriteFile(filepath.Join(checkout, "Pulumi.prod.yaml"), []byte(stacks[0].StackFile), 0o644))
		cmd = exec.Command("sh", "-c", StackCheckCommand(c, boundaryArn(prodAccount, "prod"), RoleOf(c, "prod"), false))
		cmd.Dir, cmd.Env = checkout, append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "PULUMI_CI_ORGANIZATION=my-org",
			"PULUMI_CI_PROJECT=nodeless-eks", "PULUMI_CI_STACK=prod", "TMPDIR="+t.TempDir())
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "the checklist's own file passes: %s", out)
	})
}
