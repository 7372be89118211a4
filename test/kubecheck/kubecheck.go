// Package kubecheck renders Helm charts and validates custom resources
// in-process, the way Helm and the Kubernetes API server would, so that the
// tests can check what the program deploys without a cluster. It links
// helm and apiextensions-apiserver; the program never imports it.
package kubecheck

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// KarpenterModule is the module whose charts and CRDs the tests use.
const KarpenterModule = "github.com/aws/karpenter-provider-aws"

// Module is a module of the build, as `go list -m` reports it.
type Module struct {
	Path, Version, Dir string
}

// FindModuleAt fetches a version of a module into the module cache, as
// `go mod download` does, beside the build's own: the tests read the
// Karpenter release a stack may stay on (versions.KarpenterLTS) from it.
func FindModuleAt(path, version string) (Module, error) {
	out, err := exec.Command("go", "mod", "download", "-json", path+"@"+version).Output()
	var m struct {
		Path, Version, Dir, Error string
	}
	if jsonErr := json.Unmarshal(out, &m); jsonErr != nil || m.Error != "" || m.Dir == "" {
		return Module{}, fmt.Errorf("downloading module %s@%s: %v %s", path, version, err, m.Error)
	}
	return Module{Path: m.Path, Version: m.Version, Dir: m.Dir}, nil
}

// FindModule locates a module of the main module's build in the module
// cache (downloading it if needed).
func FindModule(path string) (Module, error) {
	out, err := exec.Command("go", "list", "-m", "-json", path).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return Module{}, fmt.Errorf("locating module %s with go list: %w: %s", path, err, stderr)
	}
	var m Module
	if err := json.Unmarshal(out, &m); err != nil {
		return Module{}, fmt.Errorf("reading go list output for %s: %w", path, err)
	}
	if m.Dir == "" {
		return Module{}, fmt.Errorf("module %s@%s is not in the module cache; run go mod download", path, m.Version)
	}
	return m, nil
}
