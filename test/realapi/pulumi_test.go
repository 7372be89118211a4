package realapi

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envAsPulumi makes the test binary play the Pulumi CLI: run as
// .../pulumi <args>, it runs the variable's script with sh -c and exits
// with its status, as the CLI runs pulumi-command's provider, which runs
// the delete command with sh -c (pulumi-command v1.1.0
// provider/pkg/provider/local). The destroy cleanup's guard then finds a
// real process named pulumi, with those arguments, among its ancestors.
const envAsPulumi = "REALAPI_AS_PULUMI"

func asPulumi(script string) int {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envAsPulumi+"=") })
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		os.Stderr.WriteString("pulumi stand-in: " + err.Error() + "\n")
		return 127
	}
	return 0
}

// underPulumi is a command that runs bin as the delete command of a
// `pulumi <args>`: a process named pulumi (this test binary, through a
// link of that name) runs sh -c, which runs bin. asPID1 runs that pulumi
// as PID 1 of a PID namespace of its own, as a container whose entrypoint
// it is (the pulumi/pulumi image), through unshare(1).
func underPulumi(ctx context.Context, t *testing.T, bin string, asPID1 bool, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "pulumi")
	require.NoError(t, os.Symlink(self, link))
	var cmd *exec.Cmd
	if asPID1 {
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"--pid", "--fork", "--mount-proc", link}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, link, args...)
	}
	cmd.Env = append(os.Environ(), envAsPulumi+"="+shellQuote(bin))
	return cmd
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// canBePID1 says whether unshare can give a process a PID namespace of
// its own here (it needs CAP_SYS_ADMIN, or user namespaces), and why not.
func canBePID1() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo $$").CombinedOutput()
	if err != nil {
		return false, "unshare --pid --fork --mount-proc: " + err.Error() + ": " + strings.TrimSpace(string(out))
	}
	if strings.TrimSpace(string(out)) != "1" {
		return false, "unshare's child is not PID 1: " + string(out)
	}
	return true, ""
}

var (
	cleanupOnce sync.Once
	cleanupBin  string
	cleanupErr  error
)

// destroyCleanup builds cmd/destroy-cleanup once for the package.
func destroyCleanup(t *testing.T) string {
	t.Helper()
	cleanupOnce.Do(func() {
		dir, err := os.MkdirTemp("", "realapi-cleanup-")
		if err != nil {
			cleanupErr = err
			return
		}
		cleanupBin = filepath.Join(dir, "destroy-cleanup")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-o", cleanupBin, "./cmd/destroy-cleanup")
		build.Dir = "../.." // the root module
		if out, err := build.CombinedOutput(); err != nil {
			cleanupErr = errors.New("building cmd/destroy-cleanup (within 5 minutes): " + err.Error() + ": " + string(out))
		}
	})
	if cleanupErr != nil {
		t.Fatal(cleanupErr)
	}
	return cleanupBin
}
