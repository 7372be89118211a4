package realapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	karpenterapis "github.com/aws/karpenter-provider-aws/pkg/apis"

	"nodeless-eks/test/kubecheck"
)

// The CRDs the tier installs come from pinned modules: Karpenter's from
// the karpenter-provider-aws module the test module requires (its
// pkg/apis embeds them), the Gateway API's at the version the LB
// controller v3.5.0 requires (its go.mod). The LB controller's own kinds
// (TargetGroupBinding, GlobalAccelerator and its gateway.k8s.aws
// configurations) are minimal CRDs written here
// (testdata/lb-controller-crds.yaml): the program applies the real ones
// from GitHub (addons.LoadBalancerControllerCRDs), which the tier cannot
// reach, and the Go module proxy refuses
// sigs.k8s.io/aws-load-balancer-controller/v3 v3.5.0 ("This module
// version is not available"). The cleanup reads only their metadata.
const (
	gatewayModule = "sigs.k8s.io/gateway-api"
	gatewayAPI    = "v1.6.0"
)

var (
	crdsOnce sync.Once
	crdsErr  error
)

// installCRDs installs the CRDs once for the package and waits until the
// API server serves them.
func installCRDs(t *testing.T, s *server) {
	t.Helper()
	crdsOnce.Do(func() { crdsErr = s.installCRDs() })
	if crdsErr != nil {
		t.Fatal(crdsErr)
	}
}

func (s *server) installCRDs() error {
	var docs [][]byte
	for _, crd := range karpenterapis.CRDs {
		c := crd.DeepCopy()
		c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		docs = append(docs, raw)
	}
	gateway, err := moduleDir(gatewayModule, gatewayAPI)
	if err != nil {
		return err
	}
	for _, file := range []string{
		filepath.Join(gateway, "config", "crd", "standard", "gateway.networking.k8s.io_gatewayclasses.yaml"),
		filepath.Join(gateway, "config", "crd", "standard", "gateway.networking.k8s.io_gateways.yaml"),
		filepath.Join(gateway, "config", "crd", "standard", "gateway.networking.k8s.io_httproutes.yaml"),
		filepath.Join(gateway, "config", "crd", "standard", "gateway.networking.k8s.io_grpcroutes.yaml"),
	} {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		objs, err := kubecheck.DecodeManifests(string(raw))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, obj := range objs {
			js, err := obj.MarshalJSON()
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			docs = append(docs, js)
		}
	}
	own, err := os.ReadFile(filepath.Join("testdata", "lb-controller-crds.yaml"))
	if err != nil {
		return err
	}
	objs, err := kubecheck.DecodeManifests(string(own))
	if err != nil {
		return fmt.Errorf("testdata/lb-controller-crds.yaml: %w", err)
	}
	for _, obj := range objs {
		js, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		docs = append(docs, js)
	}
	var names []string
	for _, doc := range docs {
		status, out, err := s.do(context.Background(), http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", doc)
		if err != nil || status != http.StatusCreated {
			return fmt.Errorf("creating a CRD: %v %d: %s", err, status, out)
		}
		var crd struct {
			Metadata struct{ Name string }
		}
		_ = json.Unmarshal(out, &crd)
		names = append(names, crd.Metadata.Name)
	}
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for {
			_, out, err := s.do(context.Background(), http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, "", nil)
			if err == nil && strings.Contains(string(out), `"type":"Established","status":"True"`) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not Established within a minute", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// moduleDir is a module's directory in the module cache, downloaded from
// the Go module proxy when it is not there yet. It runs outside any module
// so that nothing of the test module changes.
func moduleDir(path, version string) (string, error) {
	dir, err := os.MkdirTemp("", "realapi-mod-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	// The proxy answers within seconds; a minute bounds one that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("go mod download %s@%s: %w: %s%s (test/apiserver/install.sh fetches it into the module cache "+
			"while the Go module proxy can be reached)", path, version, err, stderr, out)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", path, version, m.Error)
	}
	return m.Dir, nil
}
