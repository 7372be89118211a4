package addons

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDestroyCleanupCommand runs the delete step's script with /bin/sh, as
// pulumi-command does, where `go run` could not start: the skip switch
// still works, and what is missing is said, in the report file too.
func TestDestroyCleanupCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	checkout := t.TempDir() // the project directory, with or without the command
	require.NoError(t, os.MkdirAll(filepath.Join(checkout, "cmd", "destroy-cleanup"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(checkout, "cmd", "destroy-cleanup", "main.go"), []byte("package main\n"), 0o644))
	bin := t.TempDir() // a PATH with the shell's tools and no go
	for _, tool := range []string{"tee", "pwd"} {
		if p, err := exec.LookPath(tool); err == nil {
			require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
		}
	}
	run := func(dir string, env ...string) (string, string, error) {
		cmd := exec.Command(sh, "-c", DestroyCleanupCommand)
		cmd.Dir = dir
		report := filepath.Join(t.TempDir(), "report.log")
		cmd.Env = append([]string{"PATH=" + bin, "NODELESS_EKS_CLEANUP_REPORT=" + report}, env...)
		out, err := cmd.CombinedOutput()
		written, _ := os.ReadFile(report)
		return string(out), string(written), err
	}

	t.Run("the skip switch works without Go", func(t *testing.T) {
		out, report, err := run(checkout, "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true")
		require.NoError(t, err, out)
		assert.Contains(t, out, "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true: skipping the destroy cleanup")
		assert.Contains(t, report, "skipping the destroy cleanup", "and says so in the report")
	})
	t.Run("the skip switch works outside the checkout", func(t *testing.T) {
		out, _, err := run(t.TempDir(), "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true")
		require.NoError(t, err, out)
	})
	t.Run("only true skips", func(t *testing.T) {
		out, _, err := run(checkout, "NODELESS_EKS_SKIP_DESTROY_CLEANUP=1")
		require.Error(t, err)
		assert.Contains(t, out, "no go on PATH")
	})
	t.Run("no Go: said, with the way out", func(t *testing.T) {
		out, report, err := run(checkout)
		require.Error(t, err)
		assert.Contains(t, out, "destroy-cleanup: no go on PATH")
		assert.Contains(t, out, "set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to destroy without the cleanup")
		assert.Contains(t, report, "no go on PATH")
	})
	t.Run("outside the checkout, or an old one: said, with the way out", func(t *testing.T) {
		elsewhere := t.TempDir()
		out, _, err := run(elsewhere)
		require.Error(t, err)
		assert.Contains(t, out, "destroy-cleanup: "+elsewhere+" holds no cmd/destroy-cleanup")
	})
	t.Run("with Go and the checkout it builds and runs the command", func(t *testing.T) {
		goBin := filepath.Join(bin, "go")
		require.NoError(t, os.WriteFile(goBin, []byte("#!"+sh+"\necho \"go $*\"\n"), 0o755))
		defer os.Remove(goBin)
		out, _, err := run(checkout)
		require.NoError(t, err, out)
		assert.Equal(t, "go run ./cmd/destroy-cleanup", strings.TrimSpace(out))
	})
}
