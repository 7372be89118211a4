package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"nodeless-eks/internal/iampolicy"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReachTableCitesTests: each row of README.md's reach table names
// tests that exist in this package.
func TestReachTableCitesTests(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(raw), "## What a run can reach")
	require.True(t, ok)
	table, _, _ = strings.Cut(table, "\n## ")
	var sources strings.Builder
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sources.Write(b)
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| claim") {
			continue
		}
		rows++
		names := regexp.MustCompile("`(Test[A-Za-z]+)`").FindAllStringSubmatch(line, -1)
		require.NotEmptyf(t, names, "the row %q names no test", line)
		for _, n := range names {
			assert.Containsf(t, sources.String(), "func "+n[1]+"(t *testing.T)", "the reach table cites %s", n[1])
		}
	}
	assert.GreaterOrEqual(t, rows, 12)
}

// TestChecklistCommands runs step 3's sed commands from README.md on the
// committed documents: they give what the code means.
func TestChecklistCommands(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var seds []string
	for _, line := range strings.Split(string(raw), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "sed ") && strings.Contains(l, "deploy/account-role/") {
			seds = append(seds, l)
		}
	}
	require.Len(t, seds, 2, "step 3 renders the trust and the permissions")
	tmp := t.TempDir()
	for _, sed := range seds {
		cmd := exec.Command("sh", "-c", "cd .. && "+strings.ReplaceAll(sed, "/tmp/", tmp+"/"))
		cmd.Env = append(os.Environ(), "DEPLOYER="+deployerArn, "ACCOUNT="+prodAccount)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", sed, out)
	}
	for file, want := range map[string]iampolicy.Document{
		"trust.json": AccountRoleTrust(deployerArn), "permissions.json": AccountRolePolicy("aws", prodAccount),
	} {
		got, err := os.ReadFile(filepath.Join(tmp, file))
		require.NoError(t, err)
		assert.JSONEq(t, mustJSON(want), string(got), "the README's sed gives what the code means by %s", file)
	}
}
