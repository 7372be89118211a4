package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"nodeless-eks/internal/cleanup"
	"nodeless-eks/testkit/apiserver"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real Pulumi CLI tier: the Pulumi CLI v3.276.0, built from the module
// proxy by test/pulumicli/install.sh into the user's cache, or the binary
// $NODELESS_EKS_PULUMI_CLI names. Without it these tests skip, unless
// NODELESS_EKS_PULUMI_CLI_REQUIRED is "required" (.ci/run sets it).
const (
	envCLI         = "NODELESS_EKS_PULUMI_CLI"
	envCLIRequired = "NODELESS_EKS_PULUMI_CLI_REQUIRED"
	cliVersion     = "v3.276.0"
)

// TestCLIVersionIsTheBuiltOne: the tier looks for the CLI at the version
// test/pulumicli builds (its go.mod), or it would keep asking for an
// install.sh that builds another.
func TestCLIVersionIsTheBuiltOne(t *testing.T) {
	raw, err := os.ReadFile("../test/pulumicli/go.mod")
	require.NoError(t, err)
	assert.Contains(t, string(raw), "github.com/pulumi/pulumi/pkg/v3 "+cliVersion+"\n")
}

// realCLI is the CLI's path.
func realCLI(t *testing.T) string {
	return apiserver.Cached(t, envCLI, envCLIRequired, filepath.Join("pulumi-"+cliVersion, "pulumi"), "test/pulumicli/install.sh")
}

// release is this platform's release archive of the fixture release
// (fixtureRepository), built once per test binary with release.sh, as the
// release workflow builds every platform's.
var release struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

func releaseArchive(t *testing.T) (dir, name string) {
	t.Helper()
	release.once.Do(func() {
		release.dir, release.err = os.MkdirTemp("", "nodeless-eks-release-")
		if release.err != nil {
			return
		}
		cgo, _ := exec.Command("go", "env", "CGO_ENABLED").Output()
		cmd := exec.Command("./release.sh", "v"+releasedVersion, runtime.GOOS+"/"+runtime.GOARCH)
		// The build cache's CGO_ENABLED, so that it links what `go test`
		// compiled with .ci/run's -trimpath (without it, this compiles
		// the plugin anew).
		cmd.Env = append(os.Environ(), "OUT="+release.dir, "GITHUB_REPOSITORY="+fixtureRepository,
			"CGO_ENABLED="+strings.TrimSpace(string(cgo)), "GOFLAGS=", "GOTOOLCHAIN=local")
		release.out, release.err = cmd.CombinedOutput()
	})
	require.NoError(t, release.err, "release.sh: %s", release.out)
	return release.dir, "pulumi-resource-nodeless-eks-v" + releasedVersion + "-" + runtime.GOOS + "-" + runtime.GOARCH + ".tar.gz"
}

// releasedVersion is the tier's release: not the source's default
// (version), so that a build whose stamp does not take (a -X flag dropped,
// or naming a symbol the linker ignores) reports the default and fails.
const releasedVersion = "0.2.0-tier.1"

// noGoPath is a PATH with the CLI and nothing else: no go.
func noGoPath(t *testing.T, cli string) string {
	t.Helper()
	bin := t.TempDir()
	require.NoError(t, os.Symlink(cli, filepath.Join(bin, "pulumi")))
	return bin
}

// installed is a PULUMI_HOME whose plugin the CLI installed from the
// release archive, served from 127.0.0.1 through its own download path
// (--server, an http source: "<server>/<archive name>", plugins.go
// httpSource.Download), with no go on PATH.
func installed(t *testing.T) (home, path string) {
	t.Helper()
	cli := realCLI(t)
	dir, name := releaseArchive(t)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	home, path = t.TempDir(), noGoPath(t, cli)
	// The checksum the release publishes (SHA256SUMS), which the CLI
	// checks (plugin_install.go, --checksum at v3.276.0): a wrong one is
	// refused, the published one installs.
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err, "release.sh writes SHA256SUMS")
	archive, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	sum := fmt.Sprintf("%x", sha256.Sum256(archive))
	require.Contains(t, string(sums), sum+"  "+name+"\n")
	out, err := pulumiCmd(t, home, path, "plugin", "install", "resource", Name, releasedVersion, "--server", srv.URL,
		"--checksum", strings.Repeat("0", 64)).CombinedOutput()
	require.Error(t, err, "a wrong checksum is refused: %s", out)
	out, err = pulumiCmd(t, home, path, "plugin", "install", "resource", Name, releasedVersion, "--server", srv.URL, "--checksum", sum).CombinedOutput()
	require.NoError(t, err, "%s", out)
	mu.Lock()
	assert.Equal(t, []string{"/" + name, "/" + name}, asked, "the installer asked for the archive by the name release.sh gives it")
	mu.Unlock()
	_, err = os.Stat(filepath.Join(home, "plugins", "resource-"+Name+"-v"+releasedVersion, "pulumi-resource-"+Name))
	require.NoError(t, err, "the binary, unpacked where the engine looks")
	return home, path
}

func pulumiCmd(t *testing.T, home, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(path, "pulumi"), args...)
	for k, v := range engineEnv(home, path) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// engineEnv is what every real-CLI run of the tiers gets: its own home
// and file:// backend, no update check, PATH as given.
func engineEnv(home, path string) map[string]string {
	return map[string]string{"HOME": home, "PATH": path, "PULUMI_HOME": home, "PULUMI_SKIP_UPDATE_CHECK": "true",
		"PULUMI_CONFIG_PASSPHRASE": "test", "PULUMI_BACKEND_URL": "file://" + home}
}

// inlineStack is stack dev of project, an automation-API program run by
// the CLI in path (installed's) with engineEnv.
func inlineStack(t *testing.T, ctx context.Context, home, path, project string, program pulumi.RunFunc) auto.Stack {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(path, "pulumi"), filepath.Join(root, "bin", "pulumi")))
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root, SkipVersionCheck: true})
	require.NoError(t, err)
	stack, err := auto.UpsertStackInlineSource(ctx, "dev", project, program, auto.Pulumi(cmd), auto.EnvVars(engineEnv(home, path)))
	require.NoError(t, err)
	return stack
}

// TestReleaseArchiveThroughTheRealCLI builds this platform's release
// archive as the release does, installs it with the real CLI from
// 127.0.0.1 with no go on PATH, and reads the package's schema from the
// installed binary: the release's version and its download URL, which a
// consumer's SDK registers the Cluster with. The other platforms' names
// are the installer's format (standardAssetName).
func TestReleaseArchiveThroughTheRealCLI(t *testing.T) {
	home, path := installed(t)
	out, err := pulumiCmd(t, home, path, "package", "get-schema", Name+"@"+releasedVersion).Output()
	require.NoError(t, err)
	var schema struct {
		Name, Version, PluginDownloadURL, Namespace string
		Language                                    struct {
			Go struct{ ImportBasePath string } `json:"go"`
		}
	}
	require.NoError(t, json.Unmarshal(out, &schema))
	assert.Equal(t, "github.com/"+fixtureRepository+"/sdk/go/nodeless-eks", schema.Language.Go.ImportBasePath, "a Go module path, not a URL")
	assert.Equal(t, Name, schema.Name)
	assert.Equal(t, releasedVersion, schema.Version, "the release's stamp, not the source's default %s", version)
	assert.Equal(t, "github://api.github.com/"+fixtureRepository, schema.PluginDownloadURL)
	assert.Equal(t, "my-org", schema.Namespace)

	names, err := exec.Command("./release.sh", "--names", "v1.2.3").Output()
	require.NoError(t, err)
	var want []string
	for _, p := range []string{"linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64", "windows-amd64"} {
		// standardAssetName: "pulumi-%s-%s-v%s-%s-%s.tar.gz" of kind,
		// name, version, os, arch.
		want = append(want, "pulumi-resource-nodeless-eks-v1.2.3-"+p+".tar.gz")
	}
	assert.Equal(t, want, strings.Fields(string(names)))

	// The archive's binary runs the leftover audit without a stack.
	audit := exec.Command(filepath.Join(home, "plugins", "resource-"+Name+"-v"+releasedVersion, "pulumi-resource-"+Name), "audit-leftovers")
	out, err = audit.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "audit-leftovers: --cluster and --region are required")
}

// lbStandIn plays the LB controller for one Service: when the Service is
// being deleted, it removes its finalizer, as the controller does once
// the load balancer is gone.
func lbStandIn(t *testing.T, s *apiserver.Server, path string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			status, body, err := s.Do(ctx, http.MethodGet, path, "", nil)
			var obj struct {
				Metadata struct {
					DeletionTimestamp string   `json:"deletionTimestamp"`
					Finalizers        []string `json:"finalizers"`
				} `json:"metadata"`
			}
			if err == nil && status == http.StatusOK && json.Unmarshal(body, &obj) == nil &&
				obj.Metadata.DeletionTimestamp != "" && len(obj.Metadata.Finalizers) > 0 {
				_, _, _ = s.Do(ctx, http.MethodPatch, path, "application/merge-patch+json", map[string]any{"metadata": map[string]any{"finalizers": nil}})
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// TestDestroyUnderTheRealCLI runs, with the real CLI and the release's
// plugin, an engine `up` that creates a DestroyCleanup (with the release's
// version and download URL; the Cluster's Construct registers it with
// neither, which needs the aws provider to run) in a state on
// a file:// backend, then: a targeted destroy that reaches it, which the
// cleanup's guard refuses from the real process tree; a whole `pulumi
// destroy`, whose Delete runs the cleanup in the plugin against the real
// API server (the LoadBalancer Service goes, the report is written); and,
// for a stack whose plugin cannot start, the way out that provider/README.md
// gives (the package's resources out of the state, and out of the
// dependencies of a consumer's resource that depends on them, then
// destroy), with the plugin uninstalled. What it cannot cover: the Cluster's own
// children, whose aws provider cannot be had here.
func TestDestroyUnderTheRealCLI(t *testing.T) {
	home, path := installed(t)
	s := apiserver.Need(t)
	s.Must(t, http.MethodPost, "/api/v1/namespaces", "", map[string]any{"metadata": map[string]any{"name": "shop"}})
	svc := "/api/v1/namespaces/shop/services/public"
	s.Must(t, http.MethodPost, "/api/v1/namespaces/shop/services", "", map[string]any{
		"metadata": map[string]any{"name": "public", "finalizers": []string{"service.k8s.aws/resources"}},
		"spec":     map[string]any{"type": "LoadBalancer", "ports": []map[string]any{{"port": 80}}}})
	stop := lbStandIn(t, s, svc)
	defer stop()

	report := filepath.Join(t.TempDir(), "destroy-cleanup.log")
	settings := map[string]string{cleanup.EnvKubeconfig: s.Kubeconfig(""), cleanup.EnvOwnLabel: "nodeless-eks/stack=cli",
		cleanup.EnvLoadBalancerTimeout: "1m", cleanup.EnvVolumeTimeout: "1m", cleanup.EnvNodeTimeout: "1m", cleanup.EnvReport: report}
	program := func(ctx *pulumi.Context) error {
		var r pulumi.CustomResourceState
		if err := ctx.RegisterResource(destroyCleanupToken, "cluster-cleanup", pulumi.Map{"settings": pulumi.ToStringMap(settings)}, &r,
			pulumi.Version(releasedVersion), pulumi.PluginDownloadURL("github://api.github.com/"+fixtureRepository)); err != nil {
			return err
		}
		// A resource of the consumer that depends on the package's, as the
		// EKS cluster depends on the network sweep.
		var c pulumi.ResourceState
		return ctx.RegisterComponentResource("consumer:index:Network", "network", &c, pulumi.DependsOn([]pulumi.Resource{&r}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stack := inlineStack(t, ctx, home, path, "cli-tier", program)
	up := func() {
		t.Helper()
		_, err := stack.Up(ctx)
		require.NoError(t, err)
	}
	up()
	urn := "urn:pulumi:dev::cli-tier::" + destroyCleanupToken + "::cluster-cleanup"

	_, err := stack.Destroy(ctx, optdestroy.Target([]string{urn}), optdestroy.TargetDependents())
	require.Error(t, err, "a targeted destroy that reaches the cleanup")
	assert.Contains(t, err.Error(), "is a destroy of some resources only")
	status, _, err := s.Do(ctx, http.MethodGet, svc, "", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, "the workloads' load balancer stays under a targeted destroy")

	res, err := stack.Destroy(ctx)
	require.NoError(t, err)
	status, _, err = s.Do(ctx, http.MethodGet, svc, "", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, status, "the whole destroy's cleanup deleted the LoadBalancer Service")
	raw, err := os.ReadFile(report)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "deleting Service shop/public")
	assert.Contains(t, string(raw), "destroy cleanup done")
	assert.Contains(t, res.StdOut, "deleting Service shop/public", "the cleanup's lines reach the destroy's output")

	// A plugin that cannot start: the provider's state entry goes with its
	// dependents, and the destroy finishes without it.
	up()
	out, err := pulumiCmd(t, home, path, "plugin", "rm", "resource", Name, "--yes").CombinedOutput()
	require.NoError(t, err, "%s", out)
	// provider/README.md's way out, its code block run as written but
	// for its last line, the destroy, which the test runs below.
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "**When the plugin cannot start**")
	require.True(t, ok)
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	script, last, _ := strings.Cut(strings.TrimSpace(block), "\npulumi destroy")
	require.Empty(t, last, "the block ends with the destroy")
	escape := exec.CommandContext(ctx, "sh", "-ec", script)
	escape.Env = append(pulumiCmd(t, home, path).Env, "PATH="+path+":/usr/bin:/bin") // jq from the system; still no go
	escape.Dir = stack.Workspace().WorkDir()
	out, err = escape.CombinedOutput()
	require.NoError(t, err, "%s", out)
	exported, err := stack.Export(ctx)
	require.NoError(t, err)
	var deployment struct{ Resources []struct{ URN, Type string } }
	require.NoError(t, json.Unmarshal(exported.Deployment, &deployment))
	var types []string
	for _, r := range deployment.Resources {
		types = append(types, r.Type)
	}
	assert.NotContains(t, types, "pulumi:providers:"+Name, "the package's provider is out of the state")
	assert.NotContains(t, types, destroyCleanupToken, "and its cleanup")
	assert.Contains(t, types, "consumer:index:Network", "what depends on them stays, for the destroy to delete")
	_, err = stack.Destroy(ctx)
	require.NoError(t, err, "the destroy finishes without the plugin")
}

// TestReleaseIsTheSameFromAnotherCheckout builds the release as the
// workflow does (release.sh, which builds with -trimpath) from two clones
// of this commit at paths of different lengths, each into its own
// directory: the archives and SHA256SUMS are byte for byte the same, so
// neither the checkout's path nor the owner, time or name of the build is
// in the binary, the tar or the gzip header (without -trimpath the paths
// of the sources are). .ci/run compiles with -trimpath too: each release
// costs a link.
func TestReleaseIsTheSameFromAnotherCheckout(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		if os.Getenv(envCLIRequired) == "required" {
			t.Fatalf("the release tier needs a git checkout to clone: %v", err)
		}
		t.Skipf("not a git checkout: %v", err)
	}
	cgo, _ := exec.Command("go", "env", "CGO_ENABLED").Output()
	var sums []string
	for _, dir := range []string{filepath.Join(t.TempDir(), "c"), filepath.Join(t.TempDir(), "a", "longer", "path", "to", "the", "checkout")} {
		out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
		cmd := exec.Command(filepath.Join(dir, "provider", "release.sh"), "v"+releasedVersion, runtime.GOOS+"/"+runtime.GOARCH)
		cmd.Env = append(os.Environ(), "OUT="+filepath.Join(dir, "dist"), "GITHUB_REPOSITORY="+fixtureRepository,
			"CGO_ENABLED="+strings.TrimSpace(string(cgo)), "GOFLAGS=", "GOTOOLCHAIN=local")
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		sum, err := os.ReadFile(filepath.Join(dir, "dist", "SHA256SUMS"))
		require.NoError(t, err)
		sums = append(sums, string(sum))
	}
	assert.Equal(t, sums[0], sums[1], "the release differs between two checkouts")
}
