package realapi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/testkit/apiserver"
)

// The package's API server, started by the first test that needs it
// (testkit/apiserver).
var (
	startOnce sync.Once
	srv       *server
	startErr  error
)

// server is the tier's API server, with the requests the tests make.
type server struct {
	*apiserver.Server
	client *kubeapi.Client
}

func (s *server) do(ctx context.Context, method, path, contentType string, body any) (int, []byte, error) {
	return s.Do(ctx, method, path, contentType, body)
}

func (s *server) must(t *testing.T, method, path, contentType string, body any) map[string]any {
	t.Helper()
	return s.Must(t, method, path, contentType, body)
}

func TestMain(m *testing.M) {
	if script, ok := os.LookupEnv(envAsPulumi); ok {
		os.Exit(asPulumi(script))
	}
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	if cleanupBin != "" {
		os.RemoveAll(filepath.Dir(cleanupBin))
	}
	os.Exit(code)
}

// ctxT is the context of the tests' requests, which the client bounds.
func ctxT() context.Context { return context.Background() }

// need starts the server once; it skips the test when etcd or
// kube-apiserver is missing, unless the tier is required, and fails it
// when they do not start.
func need(t *testing.T) *server {
	t.Helper()
	startOnce.Do(func() {
		var s *apiserver.Server
		if s, startErr = apiserver.Start(); startErr == nil {
			srv = &server{Server: s, client: s.Client}
		}
	})
	switch {
	case errors.Is(startErr, apiserver.ErrMissing) && os.Getenv(apiserver.EnvRequired) != "required":
		t.Skip(startErr.Error())
	case startErr != nil:
		t.Fatal(startErr)
	}
	return srv
}

func execPlugin(t *testing.T) string { return apiserver.ExecPlugin(t) }

// TestTheTierPinsOneVersionOfEach: the server install.sh builds and the
// module it prefetches are the ones the tier looks for; otherwise the tier
// would call a freshly installed server missing, or read CRDs the proxy
// was never asked for.
func TestTheTierPinsOneVersionOfEach(t *testing.T) {
	goMod, err := os.ReadFile("../apiserver/server/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	install, err := os.ReadFile("../apiserver/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	minor := strings.Split(apiserver.Version, ".")[1]
	for _, c := range []struct {
		file       []byte
		what, want string
	}{
		{goMod, "server/go.mod requires k8s.io/kubernetes at " + apiserver.Version, "\tk8s.io/kubernetes " + apiserver.Version + "\n"},
		{install, "install.sh builds " + apiserver.Version, "\nversion=" + apiserver.Version + "\n"},
		{install, "install.sh stamps minor " + minor, "gitMinor=" + minor + " "},
		{install, "install.sh prefetches the Gateway API CRDs' module", gatewayModule + "@" + gatewayAPI + ")"},
	} {
		if !strings.Contains(string(c.file), c.want) {
			t.Errorf("%s: it does not hold %q", c.what, c.want)
		}
	}
}
