package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nodeless-eks/testkit/fakeaws"

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

// registrationRun is one stack the tests run, as testdata/registrations.golden.json
// records it: its configuration (a shipped stack file with keys set or unset),
// the account it meets, and a digest of every registration the engine received.
type registrationRun struct {
	Name string `json:"name"`
	// Base is the stack file the configuration starts from, "" for none.
	Base  string            `json:"base,omitempty"`
	Set   map[string]string `json:"set,omitempty"`
	Unset []string          `json:"unset,omitempty"`
	// Vpc is the fake account's VPC, nil for devVpc.
	Vpc        *fakeaws.Vpc `json:"vpc,omitempty"`
	Running    string       `json:"running,omitempty"`
	Preview    bool         `json:"preview,omitempty"`
	NoSpotRole bool         `json:"noSpotRole,omitempty"`

	Error     string `json:"error,omitempty"`
	Resources int    `json:"resources"`
	Digest    string `json:"digest"`
}

const registrationsGolden = "testdata/registrations.golden.json"

// TestRegistrationsGolden replays every stack configuration the tests ran
// when the file was written and compares what the program registers (types,
// names, inputs, dependencies, providers and every resource option) and
// exports with the digest recorded then. The dev stack's registrations are
// kept whole in registrations-dev.golden.json, and the own-VPC dev and
// production stacks' in registrations-minimal and
// registrations-own-vpc-production, so a change shows as a diff.
// A change to the program that changes registrations must come with
// `go test . -run TestRegistrationsGolden -update` and a reviewed diff.
func TestRegistrationsGolden(t *testing.T) {
	raw, err := os.ReadFile(registrationsGolden)
	require.NoError(t, err)
	var runs []registrationRun
	require.NoError(t, json.Unmarshal(raw, &runs))
	require.NotEmpty(t, runs)

	for i := range runs {
		want := &runs[i]
		cfg := map[string]string{}
		if want.Base != "" {
			cfg = stackConfig(t, want.Base)
		}
		maps.Copy(cfg, want.Set)
		for _, k := range want.Unset {
			delete(cfg, k)
		}
		vpc := fakeaws.DevVpc()
		if want.Vpc != nil {
			vpc = *want.Vpc
		}
		rec := newRecorder(&fakeaws.Account{Vpc: vpc, ClusterName: cfg[testProject+":clusterName"],
			RunningVersion: want.Running, NoSpotRole: want.NoSpotRole})
		run := runStack(t, cfg, rec, want.Preview)

		got := *want
		got.Error = ""
		if run.err != nil {
			got.Error = run.err.Error()
		}
		regs := map[string]json.RawMessage{}
		for _, reg := range programRegistrations(rec) {
			key := reg.Type + "::" + reg.Name
			require.NotContains(t, regs, key, "two registrations share a type and name; the golden keys them by both")
			regs[key] = reg.Canonical()
		}
		got.Resources = len(regs)
		doc, err := json.Marshal(map[string]any{"registrations": regs, "exports": run.exports, "error": got.Error})
		require.NoError(t, err)
		if dir := os.Getenv("REGISTRATIONS_DUMP_DIR"); dir != "" {
			// Each run's registrations as JSON, named by run and digest,
			// to diff what changed (or what differs from run to run).
			sum := sha256.Sum256(doc)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, strings.ReplaceAll(want.Name, "/", "_")+"-"+hex.EncodeToString(sum[:4])+".json"), doc, 0o644))
		}
		sum := sha256.Sum256(doc)
		got.Digest = hex.EncodeToString(sum[:])

		// The stack in a VPC it names, and the stacks that make their own,
		// a dev and a production one.
		if want.Name == "dev" || want.Name == "minimal" || want.Name == "own-vpc-production" {
			requireGolden(t, "registrations-"+want.Name+".golden.json", map[string]any{"registrations": regs, "exports": run.exports})
		}
		if *update {
			*want = got
			continue
		}
		require.Equalf(t, *want, got, "stack %s registers something else than when %s was written", want.Name, registrationsGolden)
	}
	if *update {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", " ")
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(runs))
		require.NoError(t, os.WriteFile(registrationsGolden, buf.Bytes(), 0o644))
	}
}
