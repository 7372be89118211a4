package main

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// yamlHostVersion is the pulumi-language-yaml that test/pulumicli/install.sh
// builds into the user's cache beside the CLI.
const yamlHostVersion = "v1.25.0"

// yamlHost is the directory of the YAML language host, or the test fails
// (under NODELESS_EKS_PULUMI_CLI_REQUIRED=required) or skips.
func yamlHost(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(filepath.Dir(realCLI(t))), "pulumi-language-yaml-"+yamlHostVersion)
	if _, err := os.Stat(filepath.Join(dir, "pulumi-language-yaml")); err != nil {
		if os.Getenv(envCLIRequired) == "required" {
			t.Fatalf("the YAML consumer tier needs %s: run test/pulumicli/install.sh", dir)
		}
		t.Skipf("no pulumi-language-yaml in %s: run test/pulumicli/install.sh", dir)
	}
	return dir
}

// consumer is a fresh machine of a package consumer: a PULUMI_HOME with no
// plugin, a file:// backend, PATH with the CLI and the YAML host and no go,
// the registry's resolution off (PULUMI_DISABLE_REGISTRY_RESOLVE,
// sdk/go/common/env/env.go at v3.276.0: a bare name then resolves to
// nothing, not to someone else's package), and the aws plugin's downloads
// pointed at a refused 127.0.0.1 port.
type consumer struct {
	home, path, dir string
	env             []string
}

func newConsumer(t *testing.T, project string) consumer {
	t.Helper()
	cli, host := realCLI(t), yamlHost(t)
	path := noGoPath(t, cli)
	require.NoError(t, os.Symlink(filepath.Join(host, "pulumi-language-yaml"), filepath.Join(path, "pulumi-language-yaml")))
	c := consumer{home: t.TempDir(), path: path, dir: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "Pulumi.yaml"), []byte(project), 0o644))
	return c
}

func (c consumer) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := pulumiCmd(t, c.home, c.path, args...)
	cmd.Dir = c.dir
	cmd.Env = append(append(cmd.Env, c.env...), "PULUMI_DISABLE_REGISTRY_RESOLVE=true",
		// Both places the CLI looks for a Pulumi plugin that names no URL
		// (sdk/go/common/workspace/plugins.go: GitHub's releases, then
		// get.pulumi.com), each matched against the override.
		`PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES=^github://api\.github\.com/pulumi=http://127.0.0.1:1/,^https://get\.pulumi\.com/=http://127.0.0.1:1/`)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// githubStandIn answers, over TLS on 127.0.0.1, as GitHub's API answers
// Pulumi's github:// plugin source (sdk/go/common/workspace/plugins.go,
// githubSource.downloadViaAPI at v3.276.0): the release of a tag lists
// its assets by name and URL, and an asset's URL serves its bytes. It
// returns its host, the PEM file of its certificate (for SSL_CERT_FILE,
// which Go's crypto/x509 reads on Linux, root_unix.go, and so the CLI)
// and what was asked of it.
func githubStandIn(t *testing.T, owner, repo string) (host, certFile string, asked func() []string) {
	dir, _ := releaseArchive(t)
	var mu sync.Mutex
	var paths []string
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if tag, ok := strings.CutPrefix(r.URL.Path, "/repos/"+owner+"/"+repo+"/releases/tags/"); ok {
			entries, _ := os.ReadDir(dir)
			var assets []map[string]string
			for _, e := range entries {
				assets = append(assets, map[string]string{"name": e.Name(), "url": srv.URL + "/assets/" + e.Name()})
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"tag_name": tag, "assets": assets})
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok && r.Header.Get("Accept") == "application/octet-stream" {
			http.ServeFile(w, r, filepath.Join(dir, filepath.Base(name)))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	certFile = filepath.Join(t.TempDir(), "stand-in.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	return strings.TrimPrefix(srv.URL, "https://"), certFile,
		func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), paths...) }
}

// TestAConsumerCannotPickUpAnotherPlugin: `pulumi install` on a fresh
// machine, in a project whose packages entry records the release's
// download URL, as provider/README.md's block (package add --server)
// records it (pulumi/pulumi package_add.go at v3.276.0), only its
// github:// host replaced by a TLS stand-in of GitHub's API on 127.0.0.1,
// installs the plugin from the release's assets; the bare name that the block it replaced recorded
// (plugin install, then package add with no --server) fails to install
// on another machine, asking the release nothing: with the registry's
// resolution off, nothing answers for it. The entries are written here,
// not by `package add`: pulumi-language-yaml v1.25.0 does not implement
// the Link that `package add` and `pulumi install` call after the plugin
// is installed ("method Link not implemented"), and no other language
// host is built here; a YAML program names the release in its resource
// options instead (TestAYAMLConsumerThroughTheRealEngine).
func TestAConsumerCannotPickUpAnotherPlugin(t *testing.T) {
	host, certFile, asked := githubStandIn(t, "OWNER", "nodeless-eks")
	archive := "/assets/pulumi-resource-nodeless-eks-v" + releasedVersion + "-" + runtimeOSArch() + ".tar.gz"

	recorded := newConsumer(t, "name: consumer\nruntime: yaml\npackages:\n  nodeless-eks:\n    source: nodeless-eks\n    version: "+
		releasedVersion+"\n    pluginDownloadURL: github://"+host+"/OWNER/nodeless-eks\n")
	recorded.env = []string{"SSL_CERT_FILE=" + certFile}
	before := len(asked())
	out, err := recorded.run(t, "install")
	if err != nil {
		// After the plugin is installed, the YAML host's limit.
		assert.Contains(t, out, "method Link not implemented", out)
	}
	assert.Equal(t, []string{"/repos/OWNER/nodeless-eks/releases/tags/v" + releasedVersion, archive}, asked()[before:],
		"the plugin came from the release")
	_, err = os.Stat(filepath.Join(recorded.home, "plugins", "resource-"+Name+"-v"+releasedVersion, "pulumi-resource-"+Name))
	require.NoError(t, err, "installed: %s", out)

	bare := newConsumer(t, "name: consumer\nruntime: yaml\npackages:\n  nodeless-eks: nodeless-eks@"+releasedVersion+"\n")
	bare.env = recorded.env
	before = len(asked())
	out, err = bare.run(t, "install")
	require.Error(t, err, "a bare name resolves to nothing here: %s", out)
	assert.Contains(t, out, "package nodeless-eks@"+releasedVersion+" not found")
	assert.NotContains(t, out, "Link", "it fails before any plugin is installed")
	assert.Empty(t, asked()[before:], "and nothing was asked of the release")
	_, err = os.Stat(filepath.Join(bare.home, "plugins", "resource-"+Name+"-v"+releasedVersion))
	assert.True(t, os.IsNotExist(err), "no plugin installed")
}

// TestAYAMLConsumerThroughTheRealEngine runs provider/README.md's YAML
// program on a fresh machine, its version the tier's release and the host
// of its github:// download URL a TLS stand-in of GitHub's API on
// 127.0.0.1: the engine installs the plugin by itself, from the release's
// assets, the Cluster's Construct runs in it, an input the Construct
// refuses is refused under the real engine with its path, and a good one
// goes on until the aws plugin is needed, whose download (pointed at a
// refused port) fails, saying so.
func TestAYAMLConsumerThroughTheRealEngine(t *testing.T) {
	host, certFile, asked := githubStandIn(t, "OWNER", "nodeless-eks")
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(name: platform\n.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "provider/README.md's YAML program")
	// The README's program, its version the tier's and only the host of
	// its github:// download URL replaced.
	program := strings.NewReplacer("version: 0.1.0", "version: "+releasedVersion,
		"github://api.github.com/", "github://"+host+"/").Replace(string(m[1]))
	require.Contains(t, program, "github://"+host+"/OWNER/nodeless-eks")

	up := func(t *testing.T, program string) string {
		c := newConsumer(t, program)
		c.env = []string{"SSL_CERT_FILE=" + certFile}
		out, err := c.run(t, "stack", "init", "dev")
		require.NoError(t, err, out)
		out, err = c.run(t, "config", "set", "aws:region", "eu-west-1")
		require.NoError(t, err, out)
		out, err = c.run(t, "up", "--yes", "--skip-preview")
		require.Error(t, err, "no aws plugin can be had: %s", out)
		return out
	}
	t.Run("a good input runs until the aws plugin is needed", func(t *testing.T) {
		before := len(asked())
		out := up(t, program)
		assert.Equal(t, []string{"/repos/OWNER/nodeless-eks/releases/tags/v" + releasedVersion,
			"/assets/pulumi-resource-nodeless-eks-v" + releasedVersion + "-" + runtimeOSArch() + ".tar.gz"}, asked()[before:],
			"the engine installed the plugin by itself, from the release's assets")
		assert.Regexp(t, `(?i)aws`, out)
		assert.Contains(t, out, "127.0.0.1:1", "the aws plugin's download, refused: %s", out)
	})
	t.Run("a CLI older than the program's range stops before any plugin", func(t *testing.T) {
		plugin, err := workspace.LoadPluginProject("PulumiPlugin.yaml")
		require.NoError(t, err)
		require.Contains(t, program, "requiredPulumiVersion: \""+plugin.RequiredPulumiVersion+"\"\n",
			"the README's program declares the plugin's range, which the CLI holds a release binary to nowhere else")
		before := len(asked())
		out := up(t, strings.Replace(program, plugin.RequiredPulumiVersion, ">=3.277.0", 1))
		assert.Contains(t, out, `Pulumi CLI version 3.276.0 does not satisfy the version range ">=3.277.0"`)
		assert.Empty(t, asked()[before:], "nothing installed")
	})
	t.Run("an input the Construct refuses is refused with its path", func(t *testing.T) {
		out := up(t, strings.Replace(program, "clusterName: platform", "clusterName: plat.form", 1))
		assert.Contains(t, out, `clusterName "plat.form": want`, out)
		assert.NotContains(t, out, "127.0.0.1:1", "refused before any aws call")
	})
}

// runtimeOSArch is this platform as release archives name it.
func runtimeOSArch() string { return runtime.GOOS + "-" + runtime.GOARCH }
