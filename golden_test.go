package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files from what the program registers")

// requireGolden compares v, as indented JSON, with testdata/name; with
// -update it rewrites the file instead. The files are also the input of the
// chart and CRD tests in internal/kubecheck, which must not link the Pulumi
// SDKs: this is how they see exactly what the program registers.
func requireGolden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test . -run %s -update", t.Name())
	if got := buf.String(); got != string(want) {
		t.Fatalf("%s differs from what the program registers (%s); review and run go test . -update",
			path, firstDifference(string(want), got))
	}
}

// firstDifference names the first line where two texts differ.
func firstDifference(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, strings.TrimSpace(w), strings.TrimSpace(g))
		}
	}
	return "no difference"
}

// jsonValue decodes a JSON document into plain Go values.
func jsonValue(t *testing.T, doc string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(doc), &v), "not JSON: %s", doc)
	return v
}
