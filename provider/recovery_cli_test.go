package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nodeless-eks/internal/recovery"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowFile is the test provider's resource (internal/slowfile).
const slowFile = "slowfile:index:File"

// TestARealUpKilledMidCreateIsRecovered runs the recovery's core with the
// real Pulumi CLI on a file:// backend: a real `pulumi up` is killed
// (SIGKILL to the CLI and its plugins, as a runner that dies) while the engine
// creates a resource whose object already exists; the recovery stops at
// the dead run's lock, which `pulumi cancel` removes; it reads the
// update's start from `pulumi stack history` and adopts no object made
// before it; then it exports, edits and imports the state and refreshes
// the import with the real CLI; and the next `pulumi up` converges with no
// change.
func TestARealUpKilledMidCreateIsRecovered(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kill finds the CLI's process through /proc")
	}
	cli := realCLI(t)
	home, root := t.TempDir(), t.TempDir()
	bin := filepath.Join(root, "bin") // the CLI and the test provider's plugin, which the engine finds on PATH
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.Symlink(cli, filepath.Join(bin, "pulumi")))
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "pulumi-resource-slowfile"), "./internal/slowfile")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	env := map[string]string{"HOME": home, "PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH"), "PULUMI_HOME": home,
		"PULUMI_SKIP_UPDATE_CHECK": "true", "PULUMI_CONFIG_PASSPHRASE": "test", "PULUMI_BACKEND_URL": "file://" + home}

	files := t.TempDir()
	first, slow := filepath.Join(files, "first"), filepath.Join(files, "slow")
	withSlow := false
	program := func(ctx *pulumi.Context) error {
		var r pulumi.CustomResourceState
		if err := ctx.RegisterResource(slowFile, "first", pulumi.Map{"path": pulumi.String(first)}, &r); err != nil {
			return err
		}
		if withSlow {
			// Its create writes the file, then waits ten minutes.
			return ctx.RegisterResource(slowFile, "slow", pulumi.Map{"path": pulumi.String(slow), "hold": pulumi.Int(600)}, &r)
		}
		return nil
	}
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root, SkipVersionCheck: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stack, err := auto.UpsertStackInlineSource(ctx, "dev", "recovery-tier", program, auto.Pulumi(cmd), auto.EnvVars(env))
	require.NoError(t, err)
	_, err = stack.Up(ctx)
	require.NoError(t, err, "the first update, which the history records")

	// The second update adds the slow file; it is killed once the file
	// exists, mid-create.
	withSlow = true
	upDone := make(chan error, 1)
	go func() {
		_, err := stack.Up(ctx)
		upDone <- err
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(slow); return err == nil }, 2*time.Minute, 100*time.Millisecond,
		"the slow create wrote its file")
	killPulumi(t)
	select {
	case err := <-upDone:
		require.Error(t, err, "the killed up fails")
	case <-time.After(time.Minute):
		t.Fatal("the killed up did not return")
	}
	urn := "urn:pulumi:dev::recovery-tier::" + slowFile + "::slow"
	require.Contains(t, pendingCreates(t, ctx, stack), urn, "the kill left a pending create")

	recovery.Inventory[slowFile] = recovery.Kind{Leaves: "yes: the file", ID: "its path",
		Find: func(_ context.Context, _ recovery.Lookups, t recovery.Target) (recovery.Found, error) {
			info, err := os.Stat(t.Input("path"))
			if os.IsNotExist(err) {
				return recovery.Found{}, nil
			}
			if err != nil {
				return recovery.Found{}, err
			}
			return recovery.Found{Exists: true, ID: t.Input("path"), Created: info.ModTime()}, nil
		}}
	defer delete(recovery.Inventory, slowFile)
	var log bytes.Buffer
	vars := make([]string, 0, len(env))
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	s := &recovery.Session{Dir: stack.Workspace().WorkDir(), Stack: "dev", Out: &log,
		Run: func(ctx context.Context, extra []string, name string, args ...string) ([]byte, string, error) {
			if name == "pulumi" {
				name = filepath.Join(bin, name) // exec finds a name on this process's PATH, not the one given
			}
			return recovery.Exec(ctx, append(vars, extra...), name, args...)
		}}

	_, err = s.Recover(ctx)
	require.Error(t, err, "the dead run's lock stops the recovery")
	assert.Contains(t, err.Error(), "stack dev is locked by")
	assert.Contains(t, err.Error(), "`pulumi cancel --stack dev --yes` removes the lock")
	require.Contains(t, pendingCreates(t, ctx, stack), urn, "nothing changed")
	require.NoError(t, stack.Cancel(ctx), "a person who knows the run is gone")

	// A file made before the interrupted update began may be an earlier
	// stack's: it is not adopted.
	stale := time.Now().Add(-24 * time.Hour)
	require.NoError(t, os.Chtimes(slow, stale, stale))
	_, err = s.Recover(ctx)
	require.ErrorIs(t, err, recovery.ErrUndecided)
	assert.Contains(t, log.String(), "before the interrupted update began")
	require.Contains(t, pendingCreates(t, ctx, stack), urn, "nothing changed")
	now := time.Now()
	require.NoError(t, os.Chtimes(slow, now, now))

	log.Reset()
	res, err := s.Recover(ctx)
	require.NoError(t, err, log.String())
	t.Log(log.String())
	assert.Equal(t, []string{urn}, res.Imported)
	assert.Contains(t, log.String(), "the interrupted update began at")
	assert.Contains(t, log.String(), "recover-pending: before the edit: creating "+urn)
	assert.Empty(t, pendingCreates(t, ctx, stack))

	found := false
	for _, r := range exportOf(t, ctx, stack).Resources {
		if r.URN == urn {
			found = true
			assert.Equal(t, slow, r.ID)
			assert.Empty(t, r.InitErrors, "the refresh read it and replaced the recovery's mark")
			assert.Equal(t, slow, r.Outputs["path"], "read as an import is")
		}
	}
	require.True(t, found, "the state holds the slow file")

	preview, err := stack.Preview(ctx)
	require.NoError(t, err)
	for op, n := range preview.ChangeSummary {
		if op != "same" {
			assert.Zero(t, n, "the next up %ss nothing: %v", op, preview.ChangeSummary)
		}
	}
	up, err := stack.Up(ctx)
	require.NoError(t, err, "the next up converges")
	assert.Equal(t, map[string]int{"same": 3}, *up.Summary.ResourceChanges, "the stack, its two files, no change")
}

// killPulumi kills, with SIGKILL, the pulumi CLI this test process
// started and every process under it (the plugins it started), as a runner
// that dies takes them. On Unix the automation API starts the CLI in the
// test's own process group (sdk/go/auto/cmd_other.go), so the tree is
// walked, not the group.
func killPulumi(t *testing.T) {
	t.Helper()
	type proc struct {
		pid, ppid int
		comm      string
	}
	var procs []proc
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		raw, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		text := string(raw)
		open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
		pid, _ := strconv.Atoi(strings.TrimSpace(text[:open]))
		fields := strings.Fields(text[end+2:])
		ppid, _ := strconv.Atoi(fields[1])
		procs = append(procs, proc{pid, ppid, text[open+1 : end]})
	}
	var tree []int
	for _, p := range procs {
		if p.comm == "pulumi" && p.ppid == os.Getpid() {
			tree = append(tree, p.pid)
		}
	}
	require.Len(t, tree, 1, "one pulumi process of this test runs")
	for i := 0; i < len(tree); i++ {
		for _, p := range procs {
			if p.ppid == tree[i] {
				tree = append(tree, p.pid)
			}
		}
	}
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// exportOf is the stack's state, read as the recovery reads it.
func exportOf(t *testing.T, ctx context.Context, stack auto.Stack) *recovery.Deployment {
	t.Helper()
	exported, err := stack.Export(ctx)
	require.NoError(t, err)
	raw, err := json.Marshal(exported)
	require.NoError(t, err)
	d, err := recovery.ParseExport(raw)
	require.NoError(t, err)
	return d
}

// pendingCreates are the URNs of the stack's pending creates.
func pendingCreates(t *testing.T, ctx context.Context, stack auto.Stack) []string {
	t.Helper()
	var out []string
	for _, op := range exportOf(t, ctx, stack).PendingOperations {
		if op.Type == recovery.Creating {
			out = append(out, op.Resource.URN)
		}
	}
	return out
}
