package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/cleanup"

	"github.com/pulumi/pulumi-go-provider/integration/fake"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestDestroyCleanupDeletesWithoutGoOrTheCheckout builds the provider as
// `pulumi package add` does and runs it as the engine runs a plugin: its
// own process, given the engine's address, answering gRPC on the port it
// prints. The delete runs with no Go on PATH and a working directory
// that is not this repository, as on a consumer's Deployments runner, and
// keeps the cleanup's properties: the skip switch, the report written
// where the delete runs, the refusal when nothing shows a whole `pulumi
// destroy` runs it (the guard against targeted destroys), and a real API
// client against a refused endpoint on 127.0.0.1.
func TestDestroyCleanupDeletesWithoutGoOrTheCheckout(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go to build the provider with")
	}
	bin := filepath.Join(t.TempDir(), "pulumi-resource-"+Name)
	build := exec.Command(goBin, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	engine := fake.NewEngineServer()
	engineAddr, _, err := fake.StartEngineServer(t.Context(), engine)
	require.NoError(t, err)
	noGo := t.TempDir() // PATH: nothing on it, go least of all

	// start runs the plugin in a directory of its own, with env over a
	// bare environment, and returns its client and that directory.
	start := func(t *testing.T, env ...string) (pulumirpc.ResourceProviderClient, string) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin, engineAddr)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=" + noGo, "HOME=" + dir}, env...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cancel(); _ = cmd.Wait() })
		port := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			port <- strings.TrimSpace(line)
		}()
		var p string
		select {
		case p = <-port:
		case <-time.After(30 * time.Second):
			t.Fatal("the provider printed no port within 30 s")
		}
		require.NotEmpty(t, p, "the provider printed no port")
		conn, err := grpc.NewClient("127.0.0.1:"+p, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		client := pulumirpc.NewResourceProviderClient(conn)
		_, err = client.Configure(t.Context(), &pulumirpc.ConfigureRequest{Args: &structpb.Struct{}, AcceptSecrets: true, AcceptResources: true})
		require.NoError(t, err)
		return client, dir
	}
	del := func(t *testing.T, client pulumirpc.ResourceProviderClient, settings map[string]string) error {
		m := map[string]any{}
		for k, v := range settings {
			m[k] = v
		}
		props, err := plugin.MarshalProperties(resource.NewPropertyMapFromMap(map[string]any{"settings": m}), plugin.MarshalOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		_, err = client.Delete(ctx, &pulumirpc.DeleteRequest{
			Id: "cleanup", Urn: "urn:pulumi:dev::consumer::" + destroyCleanupToken + "::cleanup", Properties: props,
		})
		return err
	}
	// The settings the Cluster gives it, the cluster's API server at a
	// port nothing listens on.
	settings := map[string]string{
		cleanup.EnvKubeconfig: `{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://127.0.0.1:1"}}],` +
			`"users":[{"name":"u","user":{"token":"t"}}],"contexts":[{"name":"c","context":{"cluster":"c","user":"u"}}],"current-context":"c"}`,
		cleanup.EnvOwnLabel:            "nodeless-eks/stack=consumer.dev",
		cleanup.EnvLoadBalancerTimeout: "15m0s",
		cleanup.EnvVolumeTimeout:       "15m0s",
		cleanup.EnvNodeTimeout:         "1h15m0s",
		cleanup.EnvReport:              "destroy-cleanup-consumer.dev.log",
	}
	report := func(t *testing.T, dir string) string {
		raw, err := os.ReadFile(filepath.Join(dir, settings[cleanup.EnvReport]))
		require.NoError(t, err, "the report is where the delete ran")
		return string(raw)
	}

	t.Run("the skip switch, from the environment of pulumi destroy", func(t *testing.T) {
		client, dir := start(t, cleanup.EnvSkip+"=true")
		require.NoError(t, del(t, client, settings))
		assert.Contains(t, report(t, dir), "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true: skipping the destroy cleanup")
		var logged bool
		for _, l := range engine.Logs() {
			logged = logged || strings.Contains(l.GetMessage(), "skipping the destroy cleanup")
		}
		assert.True(t, logged, "its lines reach the engine's output")
	})
	t.Run("not run by a whole pulumi destroy: refused, naming the switches", func(t *testing.T) {
		client, dir := start(t)
		err := del(t, client, settings)
		require.Error(t, err, "the delete fails, and the destroy stops before the controllers the cleanup needs")
		assert.Contains(t, err.Error(), "cannot tell which Pulumi command deletes the destroy cleanup")
		assert.Contains(t, err.Error(), "NODELESS_EKS_DESTROY_CLEANUP_PARTIAL=true")
		assert.Contains(t, report(t, dir), "cannot tell which Pulumi command deletes the destroy cleanup")
	})
	t.Run("told to go on, it asks the cluster, which does not answer", func(t *testing.T) {
		client, dir := start(t, cleanup.EnvPartial+"=true", cleanup.EnvDeleteUnreachable+"=true")
		require.NoError(t, del(t, client, settings), "PULUMI_K8S_DELETE_UNREACHABLE=true: unreachable for good, by the user's word")
		assert.Contains(t, report(t, dir), "PULUMI_K8S_DELETE_UNREACHABLE=true says it is unreachable for good")
	})
}

// TestLinesNeverBlockTheCleanup: a line longer than the scanner takes does
// not leave the cleanup's next write waiting on the pipe for ever.
func TestLinesNeverBlockTheCleanup(t *testing.T) {
	var got []string
	w := lines(func(s string) { got = append(got, s) })
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("first\n" + strings.Repeat("x", 1<<17) + "\nafter\n"))
		if err == nil {
			err = w.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a long line blocked the writer")
	}
	require.NotEmpty(t, got)
	assert.Equal(t, "first", got[0])
	assert.Contains(t, got[len(got)-1], "further lines are only in its report")
}
