package main

import (
	"encoding/json"
	"fmt"
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
		{"examples/vpc/Pulumi.yaml", "examples/vpc/README.md"},
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
	docs := []string{"README.md", "CONTRIBUTING.md", "deploy/README.md", "examples/vpc/README.md"}
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
		case e.IsDir() && name == "examples":
			tree = append(tree, "examples/vpc/")
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
// section, with its first line (NAME=…) as a user edits it.
func quickStart(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Quick start\n")
	require.True(t, ok, "README.md has a Quick start section")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	require.NotNil(t, block, "the quick start holds a sh block")
	first, rest, _ := strings.Cut(block[1], "\n")
	require.True(t, strings.HasPrefix(first, "NAME="), "the block starts by naming NAME: %q", first)
	return "NAME=" + shellQuote(name) + "\n" + rest
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// quickStartFakes are stand-ins for the CLIs the quick start runs: each
// logs "<directory>|<arguments>" to $QS_LOG. pulumi fails a command whose
// stack file is missing, as the stack would start empty, and the command
// $QS_FAIL names; aws answers the Spot role's create as $QS_SPOT says
// (created, taken, denied).
var quickStartFakes = map[string]string{
	"pulumi": `#!/bin/sh
echo "pulumi|$PWD|$*" >> "$QS_LOG"
[ -n "$QS_FAIL" ] && [ "$1 $PWD" = "$QS_FAIL" ] && { echo "error: $1 failed" >&2; exit 255; }
stack=""; prev=""
for a in "$@"; do [ "$prev" = --stack ] && stack="$a"; prev="$a"; done
[ "$1 $2 $3" = "stack select --create" ] && stack="$4"
[ -n "$stack" ] && [ ! -f "Pulumi.$stack.yaml" ] && { echo "no stack file Pulumi.$stack.yaml in $PWD" >&2; exit 3; }
case "$1 $2" in "stack output") echo "out-$5";; esac
exit 0
`,
	"aws": `#!/bin/sh
echo "aws|$PWD|$*" >> "$QS_LOG"
case "$*" in *create-service-linked-role*)
  case "$QS_SPOT" in
    taken) echo "An error occurred (InvalidInput) when calling the CreateServiceLinkedRole operation: Service role name AWSServiceRoleForEC2Spot has been taken in this account, please try a different suffix." >&2; exit 254;;
    denied) echo "An error occurred (AccessDenied) when calling the CreateServiceLinkedRole operation: User is not authorized" >&2; exit 254;;
  esac;;
esac
exit 0
`,
	"kubectl": "#!/bin/sh\necho \"kubectl|$PWD|$*\" >> \"$QS_LOG\"\n",
}

// TestQuickStartRunsForAnyName runs the README's quick start, pasted whole
// into bash, in a copy of the two projects' files, with stand-ins for the
// CLIs: for two names one after the other, each gets its own stack files
// (made from the example's) and every command names its stack, so that
// neither touches the other's; a run again goes on; a bad name, a refused
// Spot role or a failed command stops it there. Each `pulumi config set`
// names a key its project declares, and each `pulumi stack output` one the
// program exports.
func TestQuickStartRunsForAnyName(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root, bin := t.TempDir(), t.TempDir()
	for _, f := range []string{"Pulumi.yaml", "Pulumi.dev.yaml", "examples/vpc/Pulumi.yaml", "examples/vpc/Pulumi.dev.yaml"} {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), raw, 0o644))
	}
	for name, script := range quickStartFakes {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755))
	}
	declared := map[string]map[string]bool{}
	for dir, file := range map[string]string{root: "Pulumi.yaml", filepath.Join(root, "examples", "vpc"): "examples/vpc/Pulumi.yaml"} {
		project, err := workspace.LoadProject(file)
		require.NoError(t, err)
		declared[dir] = map[string]bool{}
		for key := range project.Config {
			declared[dir][key] = true
		}
	}
	// main.go exports each of nodeless.Outputs by its tag.
	outputs, err := os.ReadFile(filepath.Join("nodeless", "deploy.go"))
	require.NoError(t, err)
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`Output +`+"`"+`pulumi:"([A-Za-z]+)"`).FindAllStringSubmatch(string(outputs), -1) {
		exported[m[1]] = true
	}
	run := func(name string, env ...string) ([]string, string, error) {
		log := filepath.Join(t.TempDir(), "log")
		cmd := exec.Command(bash, "-c", quickStart(t, name))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "QS_LOG=" + log}, env...)...)
		out, err := cmd.CombinedOutput()
		raw, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(raw)), "\n"), string(out), err
	}
	devFiles := map[string][]byte{}
	for _, f := range []string{"Pulumi.dev.yaml", "examples/vpc/Pulumi.dev.yaml"} {
		devFiles[f], _ = os.ReadFile(filepath.Join(root, f))
	}

	for _, name := range []string{"eks-alice", "eks_bob-2", "eks-alice"} {
		calls, out, err := run(name, "QS_SPOT=taken")
		require.NoError(t, err, "%s: %s", name, out)
		var ups []string
		for _, call := range calls {
			parts := strings.SplitN(call, "|", 3)
			require.Len(t, parts, 3, call)
			tool, dir, line := parts[0], parts[1], parts[2]
			args := strings.Fields(line)
			if tool != "pulumi" {
				continue
			}
			if !slices.Contains(args, "--stack") && !strings.HasPrefix(line, "stack select") {
				t.Errorf("%s: a pulumi command that names no stack runs against whichever is selected: %s", name, line)
				continue
			}
			switch {
			case args[0] == "stack" && args[1] == "select":
				assert.Equal(t, []string{"stack", "select", "--create", name}, args)
			case args[0] == "config" && args[1] == "set":
				require.Equal(t, []string{"--stack", name}, args[2:4], line)
				assert.True(t, declared[dir][args[4]], "%s: `pulumi config set %s` in %s: the project declares no such key", name, args[4], dir)
			case args[0] == "stack" && args[1] == "output":
				assert.Equal(t, root, dir)
				assert.True(t, exported[args[4]], "`pulumi stack output %s`: the program exports no such output", args[4])
			case args[0] == "up":
				assert.Equal(t, []string{"up", "--stack", name, "--yes"}, args)
				ups = append(ups, dir)
			default:
				t.Errorf("%s: an unexpected pulumi command: %s", name, line)
			}
		}
		assert.Equal(t, []string{filepath.Join(root, "examples", "vpc"), root}, ups, "%s: the VPC, then the cluster", name)
		for _, dir := range []string{".", "examples/vpc"} {
			own, err := os.ReadFile(filepath.Join(root, dir, "Pulumi."+name+".yaml"))
			require.NoError(t, err, "%s's own stack file in %s", name, dir)
			assert.Equal(t, string(devFiles[filepath.Join(dir, "Pulumi.dev.yaml")]), string(own), "made from the example's")
		}
	}
	for f, was := range devFiles {
		now, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		assert.Equal(t, string(was), string(now), "%s, the example, is never changed", f)
	}

	for name, tc := range map[string]struct {
		name string
		env  []string
		want string
	}{
		"a name with a dot":       {"eks.alice", []string{"QS_SPOT=created"}, "NAME=eks.alice: want 1-32 letters"},
		"a name of 33 characters": {"eks-" + strings.Repeat("a", 29), []string{"QS_SPOT=created"}, "want 1-32 letters"},
		"the Spot role refused":   {"eks-carol", []string{"QS_SPOT=denied"}, "AccessDenied"},
		"the VPC's up fails":      {"eks-dave", []string{"QS_SPOT=created", "QS_FAIL=up " + filepath.Join(root, "examples", "vpc")}, "error: up failed"},
	} {
		t.Run(name, func(t *testing.T) {
			calls, out, err := run(tc.name, tc.env...)
			require.Error(t, err, out)
			assert.Contains(t, out, tc.want)
			for _, call := range calls {
				assert.NotContains(t, call, "clusterName", "nothing of the cluster runs after a failure")
			}
		})
	}
	// The README's check of NAME is the program's own rule for clusterName.
	assert.Contains(t, quickStart(t, "x"), fmt.Sprintf("[A-Za-z0-9][A-Za-z0-9_-]{0,%d}", names.MaxClusterNameLength-1))
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
