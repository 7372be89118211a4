package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"testing"

	"nodeless-eks/testkit/fakeaws"

	"github.com/stretchr/testify/require"
)

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
// kept whole in registrations-dev.golden.json, so a change shows as a diff.
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
			regs[reg.Type+"::"+reg.Name] = reg.Canonical()
		}
		got.Resources = len(regs)
		doc, err := json.Marshal(map[string]any{"registrations": regs, "exports": run.exports, "error": got.Error})
		require.NoError(t, err)
		sum := sha256.Sum256(doc)
		got.Digest = hex.EncodeToString(sum[:])

		if want.Name == "dev" {
			requireGolden(t, "registrations-dev.golden.json", map[string]any{"registrations": regs, "exports": run.exports})
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
