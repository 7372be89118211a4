package mock

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
)

// exportLimit bounds the wait for a stack output; under mocks they resolve
// in milliseconds unless a registration failed.
const exportLimit = 20 * time.Second

// Result is the outcome of a program's run under a Recorder.
type Result struct {
	Err error
	// Exports holds each stack output's resolved value; SecretExports the
	// names of the secret ones.
	Exports       map[string]any
	SecretExports map[string]bool
}

// Run runs program against r with config as the stack's configuration
// (keys as in a stack file, "project:key"; objects and arrays as JSON), as
// `pulumi up` runs it or, with preview, as a preview does, and resolves
// every stack output before it returns.
func (r *Recorder) Run(t testing.TB, config map[string]string, preview bool, program pulumi.RunFunc) Result {
	t.Helper()
	raw, err := json.Marshal(config)
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(raw))

	var res Result
	res.Err = pulumi.RunErr(func(ctx *pulumi.Context) error {
		if err := program(ctx); err != nil {
			return err
		}
		res.Exports, res.SecretExports, err = resolveExports(ctx)
		return err
	}, pulumi.WithMocks(r.project, r.stack, r), func(info *pulumi.RunInfo) { info.DryRun = preview })
	return res
}

// resolveExports waits for every stack output: an output that no resource
// produced is not awaited by the run itself, and one that fails never
// calls its apply, hence the limit.
func resolveExports(ctx *pulumi.Context) (map[string]any, map[string]bool, error) {
	values, secret := map[string]any{}, map[string]bool{}
	var mu sync.Mutex
	pending := map[string]bool{}
	outputs := map[string]pulumi.Output{}
	for name, value := range ctx.GetCurrentExportMap() {
		out, ok := value.(pulumi.Output)
		if !ok {
			out = pulumi.ToOutput(value) // a plain value exported as it is
		}
		outputs[name] = out
		pending[name] = true
	}
	if len(pending) == 0 {
		return values, secret, nil
	}
	done := make(chan struct{})
	for name, out := range outputs {
		out.ApplyT(func(v any) any {
			mu.Lock()
			defer mu.Unlock()
			values[name] = v
			delete(pending, name)
			if len(pending) == 0 {
				close(done)
			}
			return v
		})
	}
	select {
	case <-done:
		// IsSecret waits for its output, so it is asked only once all
		// have resolved, within the limit.
		for name, out := range outputs {
			secret[name] = pulumi.IsSecret(out)
		}
		return values, secret, nil
	case <-time.After(exportLimit):
		mu.Lock()
		defer mu.Unlock()
		return nil, nil, fmt.Errorf("stack outputs never resolved: %v", slices.Sorted(maps.Keys(pending)))
	}
}
