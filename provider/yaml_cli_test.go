package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

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
// the registry's resolution off (as on a machine that cannot reach it: a
// bare name then resolves to nothing, not to someone else's package), and
// every aws plugin download pointed at a refused 127.0.0.1 port.
type consumer struct {
	home, path, dir string
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
	cmd.Env = append(cmd.Env, "PULUMI_DISABLE_REGISTRY_RESOLVE=true",
		// Both places the CLI looks for a Pulumi plugin that names no URL
		// (sdk/go/common/workspace/plugins.go: GitHub's releases, then
		// get.pulumi.com), each matched against the override.
		`PULUMI_PLUGIN_DOWNLOAD_URL_OVERRIDES=^github://api\.github\.com/pulumi=http://127.0.0.1:1/,^https://get\.pulumi\.com/=http://127.0.0.1:1/`)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// releaseServer serves the tier's release archive from 127.0.0.1 and
// records what is asked of it.
func releaseServer(t *testing.T) (url string, asked func() []string) {
	dir, _ := releaseArchive(t)
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), paths...) }
}

// TestAConsumerCannotPickUpAnotherPlugin: `pulumi install` on a fresh
// machine, in a project whose packages entry records the release's
// download URL, as provider/README.md's block (package add --server)
// records it (pulumi/pulumi package_add.go at v3.276.0), its server's
// host replaced by a 127.0.0.1 stand-in (an http source: a github:// one
// needs a TLS stand-in of GitHub's API, not built), installs the plugin
// from the release; the bare name that the block it replaced recorded
// (plugin install, then package add with no --server) fails to install
// on another machine, asking the release nothing: with the registry's
// resolution off, nothing answers for it. The entries are written here,
// not by `package add`: pulumi-language-yaml v1.25.0 does not implement
// the Link that `package add` and `pulumi install` call after the plugin
// is installed ("method Link not implemented"), and no other language
// host is built here; a YAML program names the release in its resource
// options instead (TestAYAMLConsumerThroughTheRealEngine).
func TestAConsumerCannotPickUpAnotherPlugin(t *testing.T) {
	server, asked := releaseServer(t)
	archive := "/pulumi-resource-nodeless-eks-v" + releasedVersion + "-" + runtimeOSArch() + ".tar.gz"

	recorded := newConsumer(t, "name: consumer\nruntime: yaml\npackages:\n  nodeless-eks:\n    source: nodeless-eks\n    version: "+
		releasedVersion+"\n    pluginDownloadURL: "+server+"\n")
	before := len(asked())
	out, err := recorded.run(t, "install")
	if err != nil {
		// After the plugin is installed, the YAML host's limit.
		assert.Contains(t, out, "method Link not implemented", out)
	}
	assert.Equal(t, []string{archive}, asked()[before:], "the plugin came from the release")
	_, err = os.Stat(filepath.Join(recorded.home, "plugins", "resource-"+Name+"-v"+releasedVersion, "pulumi-resource-"+Name))
	require.NoError(t, err, "installed: %s", out)

	bare := newConsumer(t, "name: consumer\nruntime: yaml\npackages:\n  nodeless-eks: nodeless-eks@"+releasedVersion+"\n")
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
// program on a fresh machine, its version the tier's release and its
// download URL the 127.0.0.1 stand-in: the engine installs the plugin by
// itself, the Cluster's Construct runs in it, an input the Construct
// refuses is refused under the real engine with its path, and a good one
// goes on until the aws plugin is needed, whose download (pointed at a
// refused port) fails, saying so.
func TestAYAMLConsumerThroughTheRealEngine(t *testing.T) {
	server, asked := releaseServer(t)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(name: platform\n.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "provider/README.md's YAML program")
	program := strings.NewReplacer("version: 0.1.0", "version: "+releasedVersion,
		"github://api.github.com/OWNER/nodeless-eks", server).Replace(string(m[1]))
	require.Contains(t, program, server)

	up := func(t *testing.T, program string) string {
		c := newConsumer(t, program)
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
		assert.Contains(t, asked()[before:], "/pulumi-resource-nodeless-eks-v"+releasedVersion+"-"+runtimeOSArch()+".tar.gz",
			"the engine installed the plugin by itself")
		assert.Regexp(t, `(?i)aws`, out)
		assert.Contains(t, out, "127.0.0.1:1", "the aws plugin's download, refused: %s", out)
	})
	t.Run("an input the Construct refuses is refused with its path", func(t *testing.T) {
		out := up(t, strings.Replace(program, "clusterName: platform", "clusterName: plat.form", 1))
		assert.Contains(t, out, `clusterName "plat.form": want`, out)
		assert.NotContains(t, out, "127.0.0.1:1", "refused before any aws call")
	})
}

// runtimeOSArch is this platform as release archives name it.
func runtimeOSArch() string { return runtime.GOOS + "-" + runtime.GOARCH }
