// Package k8ssdktest is what the tests of internal/helmrelease and
// internal/k8syaml share: a mock engine that records registrations, and
// the pulumi-kubernetes module whose Go SDK they are held to.
package k8ssdktest

import (
	"encoding/json"
	"os/exec"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
)

// Module is the pulumi-kubernetes Go SDK module.
const Module = "github.com/pulumi/pulumi-kubernetes/sdk/v4"

// Registered is what the mock engine saw of one registration.
type Registered struct {
	Type, Name, Version string
	Remote              bool
	Inputs              resource.PropertyMap
}

// Recorder is a pulumi.MockResourceMonitor that keeps every registration.
type Recorder struct {
	mu   sync.Mutex
	Regs []Registered
}

// NewResource records the registration; a custom resource gets an ID.
func (r *Recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Regs = append(r.Regs, Registered{args.TypeToken, args.Name, args.RegisterRPC.GetVersion(), args.RegisterRPC.GetRemote(), args.Inputs})
	id := ""
	if args.Custom {
		id = args.Name + "-id"
	}
	return id, args.Inputs, nil
}

// Call answers every invoke with nothing.
func (r *Recorder) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// ModuleDir is where the go command keeps the pulumi-kubernetes module of
// go.mod, and its version.
func ModuleDir(t *testing.T) (dir, version string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", Module).Output()
	require.NoError(t, err, "go list -m %s", Module)
	var m struct{ Dir, Version string }
	require.NoError(t, json.Unmarshal(out, &m))
	require.NotEmpty(t, m.Dir, "the module must be downloaded (go mod download)")
	return m.Dir, m.Version
}
