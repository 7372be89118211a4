package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakecloud"
	"nodeless-eks/testkit/mock"

	"github.com/stretchr/testify/require"
)

// toolingAccount is the account whose credentials run deploy/ in the
// examples: it hosts no stack, and every account of the fleet reaches it
// through its deploy-account-access role.
const toolingAccount = "210987654321"

// deployer is the organization admin whose token runs deploy/, and who
// creates the stacks.
const deployer = "platform-admin"

// vpcNameOf is the VPC name the fixture's stack files give a stack.
func vpcNameOf(stack string) string { return stack + "-vpc" }

// writeRootStacks writes, into a fresh root project directory (the root
// Pulumi.yaml and a stack file per stack of c and the review template),
// the stack files the checklist has a team write: RootStackFile with the
// VPC filled in. edit may change a file before it is written.
func writeRootStacks(t *testing.T, c *Config, edit func(stack, file string) string) string {
	t.Helper()
	dir := t.TempDir()
	project, err := os.ReadFile("../Pulumi.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), project, 0o644))
	stacks := sortedKeys(c.Stacks)
	if c.ReviewStacks {
		stacks = append(stacks, c.ReviewTemplate)
	}
	for _, name := range stacks {
		file := fillVpc(RootStackFile(c, name, "aws"), vpcNameOf(name))
		if edit != nil {
			file = edit(name, file)
		}
		if file == "" {
			continue
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Pulumi."+name+".yaml"), []byte(file), 0o644))
	}
	return dir
}

// fillVpc fills RootStackFile's VPC placeholders, as examples/vpc's
// rootStackConfig output says to.
func fillVpc(file, vpc string) string {
	return strings.NewReplacer("<the VPC's Name tag>", vpc, "<vpcName>", vpc).Replace(file)
}

// fleetAccounts is the fake AWS of a fleet: deploy/'s credentials in the
// tooling account, and in every account of c the VPC each of its stacks'
// files names, in the stack's region, and the Spot role.
func fleetAccounts(c *Config) *fakeaws.Account {
	acct := &fakeaws.Account{CallerAccount: toolingAccount, Others: map[string]*fakeaws.Elsewhere{}}
	for _, name := range sortedKeys(c.Accounts) {
		acct.Others[c.Accounts[name].ID] = &fakeaws.Elsewhere{VpcNames: map[string][]string{}}
	}
	for _, r := range Roles(c) {
		stack := r.Stack
		if stack == "" {
			stack = c.ReviewTemplate
		}
		e := acct.Others[c.Accounts[r.Account].ID]
		e.VpcNames[r.Region] = append(e.VpcNames[r.Region], vpcNameOf(stack))
	}
	return acct
}

// isolatedOrg is an organization whose grants are deploy/'s: an admin who
// runs deploy/, a production team, and members outside it.
func isolatedOrg() fakecloud.Org {
	return fakecloud.Org{
		Admins:  []string{deployer},
		Members: []string{"alice", "bob"},
		Teams:   map[string]fakecloud.Team{"platform": {Members: []string{"alice"}}, "developers": {Members: []string{"bob"}}},
		// The example's production stack, as deploy/ left it: the admin
		// who ran it created it, and the production team has it.
		Stacks: map[string]fakecloud.StackGrants{"nodeless-eks/prod": {Teams: map[string]int{"platform": 103}, Creator: deployer}},
	}
}

// runFleet runs the program with a stack file of deploy/ and the given
// changes, against root stack files written as the checklist says, the
// fleet's accounts, and an organization whose defaults and grants isolate
// production.
func runFleet(t *testing.T, stackFile string, set map[string]string) (*mock.Recorder, mock.Result) {
	t.Helper()
	withCloud(t, isolated)
	return runPrepared(t, stackFile, set, fixture{})
}

// fixture changes what runPrepared runs against: a root stack file
// (edit; "" leaves the file out), or the fake AWS accounts.
type fixture struct {
	edit func(stack, file string) string
	aws  func(*Config, *fakeaws.Account)
}

// runPrepared is runFleet against the Pulumi Cloud already set up, with
// the fixture's changes.
func runPrepared(t *testing.T, stackFile string, set map[string]string, fx fixture) (*mock.Recorder, mock.Result) {
	t.Helper()
	c, err := loadConfigOf(t, stackFile, set)
	if err != nil {
		// The configuration is refused before any stack file is read.
		return fakeaws.RunStackFile(t, project, "admin", stackFile, set, program)
	}
	withRoot := map[string]string{"rootProjectDir": writeRootStacks(t, c, fx.edit)}
	for k, v := range set {
		withRoot[k] = v
	}
	acct := fleetAccounts(c)
	if fx.aws != nil {
		fx.aws(c, acct)
	}
	return acct.RunStackFile(t, project, "admin", stackFile, withRoot, program)
}
