// Package gomod finds the source of a module of go.mod, so that a test can
// hold the program to the SDK it compiles against (a generated args struct,
// the provider version it asks for) without linking more of it.
package gomod

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PulumiKubernetes is the pulumi-kubernetes Go SDK module.
const PulumiKubernetes = "github.com/pulumi/pulumi-kubernetes/sdk/v4"

// Dir is where the go command keeps module of go.mod, and its version.
func Dir(t testing.TB, module string) (dir, version string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", module).Output()
	require.NoError(t, err, "go list -m %s", module)
	var m struct{ Dir, Version string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "the module must be downloaded (go mod download)")
	return m.Dir, m.Version
}

// PulumiFields parses files of package pkg (a directory of module) and
// returns, for each of the named struct types, its fields by pulumi tag
// with their types printed as reflect prints them (*string,
// map[string]interface {}). The source is parsed, not compiled, so a test
// of the wire shape does not link the SDK package it is held to.
func PulumiFields(t testing.TB, module, pkg string, files []string, structs ...string) map[string]map[string]string {
	t.Helper()
	dir, _ := Dir(t, module)
	out := map[string]map[string]string{}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, pkg, file), nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok || !slices.Contains(structs, spec.Name.Name) {
				return true
			}
			fields := map[string]string{}
			for _, field := range st.Fields.List {
				if field.Tag != nil && len(field.Names) == 1 {
					fields[reflect.StructTag(strings.Trim(field.Tag.Value, "`")).Get("pulumi")] = exprString(field.Type)
				}
			}
			out[spec.Name.Name] = fields
			return false
		})
	}
	for _, s := range structs {
		require.NotEmptyf(t, out[s], "%s of %s/%s was not found", s, module, pkg)
	}
	return out
}

// RequireWireShape fails unless every field of ours carries a pulumi tag
// that the SDK's struct has (sdk, from PulumiFields), with the same type
// once rename turns our type names into the SDK's.
func RequireWireShape(t testing.TB, ours reflect.Type, sdk map[string]string, rename *strings.Replacer) {
	t.Helper()
	for i := range ours.NumField() {
		f := ours.Field(i)
		tag := f.Tag.Get("pulumi")
		sdkType, ok := sdk[tag]
		if assert.Truef(t, ok, "%s.%s: input %q is not in the SDK's schema", ours.Name(), f.Name, tag) {
			assert.Equalf(t, sdkType, rename.Replace(f.Type.String()), "%s.%s: input %q has another type in the SDK", ours.Name(), f.Name, tag)
		}
	}
}

// exprString prints a field type as reflect would.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.MapType:
		return "map[" + exprString(e.Key) + "]" + exprString(e.Value)
	case *ast.ArrayType:
		return "[]" + exprString(e.Elt)
	case *ast.InterfaceType:
		return "interface {}"
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}
