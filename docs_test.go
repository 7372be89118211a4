package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestReadmeLayoutIsTheTree holds the README's layout to the repository:
// every directory and Go file at the top level is listed once, and nothing
// listed is missing.
func TestReadmeLayoutIsTheTree(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Layout\n")
	require.True(t, ok, "README.md has a Layout section")
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
