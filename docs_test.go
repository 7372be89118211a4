package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"nodeless-eks/internal/names"
)

// configRow is a row of a docs table of configuration keys.
type configRow struct{ key, defaultCell string }

// tableRowRe matches "| `key` | default | meaning |".
var tableRowRe = regexp.MustCompile("^\\| `([A-Za-z0-9:]+)` \\| (.*?) \\| ")

func configTable(t *testing.T, doc string) []configRow {
	t.Helper()
	raw, err := os.ReadFile(doc)
	require.NoError(t, err)
	var rows []configRow
	for _, line := range strings.Split(string(raw), "\n") {
		if m := tableRowRe.FindStringSubmatch(line); m != nil {
			rows = append(rows, configRow{m[1], m[2]})
		}
	}
	require.NotEmptyf(t, rows, "%s has no configuration table", doc)
	return rows
}

// TestDocsMatchPulumiYaml holds each project's configuration table to its
// Pulumi.yaml: the same keys, required where the CLI requires them, and
// the declared default, literally.
func TestDocsMatchPulumiYaml(t *testing.T) {
	for _, tc := range []struct{ project, doc string }{
		{"Pulumi.yaml", "docs/configuration.md"},
		{"deploy/Pulumi.yaml", "deploy/README.md"},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			proj, err := workspace.LoadProject(tc.project)
			require.NoError(t, err)
			documented := map[string]bool{}
			for _, row := range configTable(t, tc.doc) {
				documented[row.key] = true
				if strings.Contains(row.key, ":") {
					assert.Equalf(t, "— (required)", row.defaultCell, "%s: a provider key such as %s is set per stack", tc.doc, row.key)
					continue
				}
				decl, ok := proj.Config[row.key]
				if !assert.Truef(t, ok, "%s documents %s, which %s does not declare", tc.doc, row.key, tc.project) {
					continue
				}
				if decl.Default == nil && decl.Value == nil {
					assert.Equalf(t, "— (required)", row.defaultCell, "%s: %s has no default, so the CLI requires it", tc.doc, row.key)
					continue
				}
				literal, ok := strings.CutPrefix(row.defaultCell, "`")
				literal, ok2 := strings.CutSuffix(literal, "`")
				if !assert.Truef(t, ok && ok2, "%s: the default of %s must be one literal in backticks, got %s", tc.doc, row.key, row.defaultCell) {
					continue
				}
				assert.Truef(t, sameDefault(literal, decl.Default), "%s: %s defaults to %v in %s, not %s", tc.doc, row.key, decl.Default, tc.project, literal)
			}
			for key := range proj.Config {
				assert.Truef(t, documented[key], "%s declares %s, which %s does not document", tc.project, key, tc.doc)
			}
		})
	}
}

// sameDefault compares a documented literal with a declared default: a
// string as written ("" for the empty string), anything else as JSON.
func sameDefault(literal string, declared any) bool {
	if s, ok := declared.(string); ok {
		return literal == s || (s == "" && literal == `""`)
	}
	var doc any
	if json.Unmarshal([]byte(literal), &doc) != nil {
		return false
	}
	raw, err := json.Marshal(declared)
	if err != nil {
		return false
	}
	var decl any
	return json.Unmarshal(raw, &decl) == nil && reflect.DeepEqual(doc, decl)
}

// TestDocsTestCommandIsCIs holds the test command that the README and the
// contributing guide give to the one CI runs.
func TestDocsTestCommandIsCIs(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	command := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(command, "go test ./..."), ".ci/run must end with the test command, got %q", command)
	for _, doc := range []string{"README.md", "CONTRIBUTING.md"} {
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.Truef(t, strings.Contains(string(raw), "\n"+command+"\n"), "%s must give the test command CI runs: %s", doc, command)
	}
}

// TestDocsLinksResolve checks every relative link of the documents: the
// file exists and, for a link with a fragment, so does the heading.
func TestDocsLinksResolve(t *testing.T) {
	docs := []string{"README.md", "CONTRIBUTING.md", "deploy/README.md", "deploy/THREATS.md", "provider/README.md"}
	more, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	docs = append(docs, more...)
	linkRe := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range linkRe.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if info, err := os.Stat(path); err == nil && info.IsDir() && fragment == "" {
				continue // a directory of the repository
			}
			content, err := os.ReadFile(path)
			if !assert.NoErrorf(t, err, "%s links to %s, which does not exist", doc, target) || fragment == "" {
				continue
			}
			assert.Truef(t, slices.Contains(headingSlugs(string(content)), fragment), "%s links to %s, which has no such heading", doc, target)
		}
	}
}

// headingSlugs are the anchors GitHub gives a document's headings.
func headingSlugs(doc string) []string {
	var slugs []string
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		slug := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r == ' ':
				return '-'
			}
			return -1
		}, title)
		slugs = append(slugs, slug)
	}
	return slugs
}

// TestReadmeCostAddsUp checks the README's cost table: each day's figure
// is 24 hours of the month's (730 h) hourly rate, and the total row is the
// sum of the rows above it (the extended-support alternative, marked "—",
// is not part of it).
func TestReadmeCostAddsUp(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	rowRe := regexp.MustCompile(`^\| (.*?) \| .*? \| \*{0,2}\$([0-9.,]+)\*{0,2} \| \*{0,2}\$([0-9.,]+)\*{0,2} \|$`)
	money := func(s string) float64 {
		var v float64
		_, err := fmt.Sscanf(strings.ReplaceAll(s, ",", ""), "%f", &v)
		require.NoError(t, err)
		return v
	}
	var day, month float64
	rows := 0
	for _, line := range strings.Split(string(raw), "\n") {
		m := rowRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d, mo := money(m[2]), money(m[3])
		switch {
		case strings.HasPrefix(m[1], "**"):
			assert.InDeltaf(t, day, d, 0.011, "the total per day is the sum of the rows")
			assert.InDeltaf(t, month, mo, 0.011, "the total per month is the sum of the rows")
			rows++
		case strings.HasPrefix(m[1], "—"):
		default:
			assert.InDeltaf(t, mo*24/730, d, 0.011, "%s: a day is 24 of the month's 730 hours", m[1])
			day, month = day+d, month+mo
			rows++
		}
	}
	assert.GreaterOrEqual(t, rows, 5, "the README's cost table was not found")
}

// TestBootstrapTimeAddsUp checks the modelled flows of docs/design.md's
// Bootstrap time: each bold row is the sum of the rows above it in its
// table, and the README quotes the one-stack flow's range, rounded out,
// and the two-project flow's.
func TestBootstrapTimeAddsUp(t *testing.T) {
	raw, err := os.ReadFile("docs/design.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "## Bootstrap time\n")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	numRe := regexp.MustCompile(`^\*{0,2}([0-9.]+)\*{0,2}$`)
	var low, high float64
	var totals [][2]float64
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 || numRe.FindStringSubmatch(strings.TrimSpace(cells[2])) == nil {
			continue
		}
		m := []string{line, strings.TrimSpace(cells[0]), numRe.FindStringSubmatch(strings.TrimSpace(cells[2]))[1],
			numRe.FindStringSubmatch(strings.TrimSpace(cells[3]))[1]}
		var l, h float64
		_, err1 := fmt.Sscanf(m[2], "%f", &l)
		_, err2 := fmt.Sscanf(m[3], "%f", &h)
		require.NoError(t, errors.Join(err1, err2), line)
		if strings.HasPrefix(m[1], "**") {
			assert.InDeltaf(t, low, l, 0.01, "%s: the sum of the rows above", m[1])
			assert.InDeltaf(t, high, h, 0.01, "%s: the sum of the rows above", m[1])
			totals = append(totals, [2]float64{l, h})
			low, high = 0, 0
			continue
		}
		assert.LessOrEqual(t, l, h, line)
		low, high = low+l, high+h
	}
	require.Len(t, totals, 2, "the one-stack flow and the two-project flow")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	round := func(r [2]float64) (int, int) { return int(math.Floor(r[0])), int(math.Ceil(r[1])) }
	l, h := round(totals[0])
	assert.Contains(t, string(readme), fmt.Sprintf("**%d to %d minutes**", l, h), "the README quotes the one-stack flow")
	l, h = round(totals[1])
	assert.Contains(t, string(readme), fmt.Sprintf("modelled %d to %d", l, h), "and the two-project flow")
}

// TestLayoutIsTheTree holds CONTRIBUTING.md's layout to the repository:
// every directory and Go file at the top level is listed once, and nothing
// listed is missing.
func TestLayoutIsTheTree(t *testing.T) {
	guide, err := os.ReadFile("CONTRIBUTING.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(guide), "## Layout\n")
	require.True(t, ok, "CONTRIBUTING.md has a Layout section")
	block := regexp.MustCompile("(?s)```\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "the Layout section holds the tree")
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
		listed = append(listed, strings.Fields(line)[0])
	}

	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var tree []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir():
			tree = append(tree, name+"/")
		case name == "docs_test.go":
			// the docs' own test, beside the README it reads
		case strings.HasPrefix(name, "stack_") && strings.HasSuffix(name, "_test.go"):
			tree = append(tree, "stack_*_test.go")
		case strings.HasPrefix(name, "integration") && strings.HasSuffix(name, "_test.go"):
			tree = append(tree, "integration*_test.go")
		case strings.HasSuffix(name, ".go"):
			tree = append(tree, name)
		}
	}
	assert.Equal(t, slices.Compact(slices.Sorted(slices.Values(tree))), slices.Sorted(slices.Values(listed)))
}

// quickStart is the README's quick start, the first sh block of its
// section: the clone, then the commands to a look at the nodes.
func quickStart(t *testing.T) (clone string, commands []string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Quick start\n")
	require.True(t, ok, "README.md has a Quick start section")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "the quick start holds a sh block")
	for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "git clone ") {
			clone = line
			continue
		}
		commands = append(commands, line)
	}
	return clone, commands
}

// quickStartFakes are stand-ins for the CLIs the quick start runs: each
// logs "<directory>|<arguments>" to $QS_LOG. pulumi refuses a command
// before a stack is selected, and fails the one $QS_FAIL names; its stack
// outputs are "out-<name>".
var quickStartFakes = map[string]string{
	"pulumi": `#!/bin/sh
echo "pulumi|$PWD|$*" >> "$QS_LOG"
[ -n "$QS_FAIL" ] && [ "$1" = "$QS_FAIL" ] && { echo "error: $1 failed" >&2; exit 255; }
case "$1 $2" in
  "stack select") echo "$4" > .selected; exit 0;;
esac
[ -f .selected ] || { echo "error: no stack selected" >&2; exit 255; }
case "$1 $2" in "stack output") echo "out-$3";; esac
exit 0
`,
	"aws":     "#!/bin/sh\necho \"aws|$PWD|$*\" >> \"$QS_LOG\"\n",
	"kubectl": "#!/bin/sh\necho \"kubectl|$PWD|$*\" >> \"$QS_LOG\"\n",
}

// TestQuickStartIsFiveCommands runs the README's quick start, pasted into
// bash after the clone, with stand-ins for the CLIs: at most five
// commands, one project, one `pulumi up`, a stack of the user's own name
// whose default cluster name fits, a region set, and only keys and
// outputs the project declares and exports. A failed command stops it.
func TestQuickStartIsFiveCommands(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	clone, commands := quickStart(t)
	assert.Regexp(t, `^git clone \S+ && cd nodeless-eks\b`, clone, "it starts with the repository's clone command")
	assert.LessOrEqual(t, len(commands), 5, "at most five commands after the clone: %q", commands)

	root, bin := t.TempDir(), t.TempDir()
	raw, err := os.ReadFile("Pulumi.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "Pulumi.yaml"), raw, 0o644))
	for name, script := range quickStartFakes {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	project, err := workspace.LoadProject("Pulumi.yaml")
	require.NoError(t, err)
	// main.go exports each of nodeless.Outputs by its tag.
	outputs, err := os.ReadFile(filepath.Join("nodeless", "deploy.go"))
	require.NoError(t, err)
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`Output +`+"`"+`pulumi:"([A-Za-z]+)"`).FindAllStringSubmatch(string(outputs), -1) {
		exported[m[1]] = true
	}
	run := func(user string, env ...string) ([]string, string, error) {
		log := filepath.Join(t.TempDir(), "log")
		_ = os.Remove(filepath.Join(root, ".selected"))
		cmd := exec.Command(bash, "-e", "-c", strings.Join(commands, "\n"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "QS_LOG=" + log, "USER=" + user}, env...)...)
		out, err := cmd.CombinedOutput()
		raw, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(raw)), "\n"), string(out), err
	}

	for _, user := range []string{"alice", "bob.smith", strings.Repeat("x", 40)} {
		calls, out, err := run(user)
		require.NoError(t, err, "%s: %s", user, out)
		var ups, stacks []string
		region := false
		for _, call := range calls {
			parts := strings.SplitN(call, "|", 3)
			require.Len(t, parts, 3, call)
			args := strings.Fields(parts[2])
			if parts[0] != "pulumi" {
				continue
			}
			switch {
			case args[0] == "stack" && args[1] == "select":
				assert.Equal(t, "--create", args[2])
				stacks = append(stacks, args[3])
			case args[0] == "config" && args[1] == "set":
				key := args[2]
				region = region || key == "aws:region"
				if !strings.Contains(key, ":") {
					assert.Contains(t, project.Config, key, "`pulumi config set %s`: the project declares no such key", key)
				}
			case args[0] == "stack" && args[1] == "output":
				assert.True(t, exported[args[2]], "`pulumi stack output %s`: the program exports no such output", args[2])
			case args[0] == "up":
				ups = append(ups, parts[2])
			}
		}
		assert.Equal(t, []string{"up --yes"}, ups, "%s: one pulumi up", user)
		require.Len(t, stacks, 1, "%s: a stack of the user's own", user)
		assert.Contains(t, stacks[0], user, "the stack is named after the user")
		cluster := names.DefaultClusterName(project.Name.String(), stacks[0])
		assert.LessOrEqual(t, len(cluster), names.MaxClusterNameLength, "%s: the cluster name the stack gets fits", user)
		assert.True(t, region, "the region is set")
	}
	t.Run("a failed up stops it there", func(t *testing.T) {
		calls, out, err := run("carol", "QS_FAIL=up")
		require.Error(t, err, out)
		for _, call := range calls {
			assert.NotContains(t, call, "kubectl", "nothing runs after a failure")
		}
	})
}

// TestStackFileHintsAreAccepted: the commented-out settings that
// Pulumi.dev.yaml suggests are values the program takes once uncommented
// (a hint the CLI or the program refuses is a trap).
func TestStackFileHintsAreAccepted(t *testing.T) {
	raw, err := os.ReadFile("Pulumi.dev.yaml")
	require.NoError(t, err)
	hint := regexp.MustCompile(`(?m)^  # (nodeless-eks:publicAccessCidrs: .*)$`).FindStringSubmatch(string(raw))
	require.NotNil(t, hint, "Pulumi.dev.yaml suggests publicAccessCidrs")
	var parsed map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(hint[1]), &parsed))
	cidrs, ok := parsed["nodeless-eks:publicAccessCidrs"].([]any)
	require.True(t, ok, "a list, as the key is declared: %v", parsed)
	for _, c := range cidrs {
		s, _ := c.(string)
		_, network, err := net.ParseCIDR(s)
		require.NoError(t, err, "%q", c)
		assert.Equal(t, s, network.String(), "no host bits: the program refuses them")
	}
}

// TestTheReleaseBuildsWithTheGoCITests: the release workflow's Go is the
// toolchain .ci/run builds and tests every module with.
func TestTheReleaseBuildsWithTheGoCITests(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^export GOTOOLCHAIN=go(\d+\.\d+\.\d+)$`).FindStringSubmatch(string(ci))
	require.NotNil(t, m, ".ci/run exports one GOTOOLCHAIN")
	workflow, err := os.ReadFile(".github/workflows/release.yml")
	require.NoError(t, err)
	assert.Contains(t, string(workflow), `go-version: "`+m[1]+`"`)
	readme, err := os.ReadFile("provider/README.md")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), "GNU tar and Go "+m[1]+" (the workflow's",
		"provider/README.md says which Go reproduces a release")
}
