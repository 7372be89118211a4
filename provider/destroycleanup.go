package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"nodeless-eks/addons"
	"nodeless-eks/internal/cleanup"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// destroyCleanupToken is DestroyCleanup's type.
const destroyCleanupToken = Name + ":index:DestroyCleanup"

// DestroyCleanup is the Cluster's destroy cleanup (addons.CleanupRegistrar):
// create and update only record its settings; its delete runs
// internal/cleanup in this provider's process, the code the Go program's
// `go run ./cmd/destroy-cleanup` runs, so that it needs neither `go run`
// nor this repository where `pulumi destroy` runs. The Cluster gives it the
// same dependencies, delete timeout and protection as the program gives
// its command: destroy deletes it first, and a targeted destroy that
// reaches it is refused by the cleanup unless told (internal/cleanup).
type DestroyCleanup struct{}

// DestroyCleanupArgs are the cleanup's settings, cleanup.Env* names to
// their values, as the program's command has them in its environment.
type DestroyCleanupArgs struct {
	Settings map[string]string `pulumi:"settings"`
}

// DestroyCleanupState is what the state keeps: the settings the delete reads.
type DestroyCleanupState struct {
	DestroyCleanupArgs
}

// Annotate names the token and says what the resource does.
func (d *DestroyCleanup) Annotate(a infer.Annotator) {
	a.SetToken("index", "DestroyCleanup")
	a.Describe(d, "The destroy cleanup of a Cluster, which creates it: deleting it removes what workloads created and the "+
		"stack does not know of (load balancers, EBS volumes, node pools and classes without the stack's label) before the "+
		"controllers that remove them go. Not for use on its own.")
}

func (a *DestroyCleanupArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Settings, "The cleanup's settings by their environment names (NODELESS_EKS_*).")
}

// Create records the settings; the cleanup runs only on delete.
func (DestroyCleanup) Create(_ context.Context, req infer.CreateRequest[DestroyCleanupArgs]) (infer.CreateResponse[DestroyCleanupState], error) {
	return infer.CreateResponse[DestroyCleanupState]{ID: req.Name, Output: DestroyCleanupState{req.Inputs}}, nil
}

// Update records new settings in place: a replacement would run the
// cleanup against the live cluster.
func (DestroyCleanup) Update(_ context.Context, req infer.UpdateRequest[DestroyCleanupArgs, DestroyCleanupState]) (infer.UpdateResponse[DestroyCleanupState], error) {
	return infer.UpdateResponse[DestroyCleanupState]{Output: DestroyCleanupState{req.Inputs}}, nil
}

// Delete runs the cleanup (cleanup.Main) with the recorded settings over
// this process's environment, where the skip and partial switches are
// read: the engine starts the plugin with the CLI's environment
// (sdk/go/common/resource/plugin/plugin.go newPlugin, at v3.256.0). A
// failed cleanup fails the delete, and the destroy stops before the
// controllers it needs.
func (DestroyCleanup) Delete(ctx context.Context, req infer.DeleteRequest[DestroyCleanupState]) (infer.DeleteResponse, error) {
	settings := resolveReport(req.State.Settings)
	log := logWriter(p.GetLogger(ctx))
	defer log.Close()
	return infer.DeleteResponse{}, cleanup.Main(ctx, getenvOver(settings), log)
}

// getenvOver reads settings first, then the process's environment.
func getenvOver(settings map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := settings[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
}

// resolveReport makes the report file's path absolute, against this
// process's working directory, so that the lines that name it name where
// it is: the consumer's project directory, where pulumi-language-go starts
// the plugin (sdk/go/pulumi-language-go/main.go RunPlugin: cmd.Dir =
// req.Pwd, the engine's ctx.Pwd, at v3.256.0).
func resolveReport(settings map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range settings {
		out[k] = v
	}
	if r := out[cleanup.EnvReport]; r != "" && !filepath.IsAbs(r) {
		if abs, err := filepath.Abs(r); err == nil {
			out[cleanup.EnvReport] = abs
		}
	}
	return out
}

// logWriter sends each line written to it to the engine as an info
// message, which stays in the output of `pulumi destroy`.
func logWriter(l p.Logger) io.WriteCloser { return lines(l.Info) }

// lines calls info with each line written to it. A line longer than the
// scanner takes ends the lines; what follows is read and dropped, so that
// the cleanup writing it never blocks on the pipe (its report file keeps
// every line).
func lines(info func(string)) io.WriteCloser {
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(r)
		for s.Scan() {
			info(s.Text())
		}
		if err := s.Err(); err != nil {
			info(fmt.Sprintf("the cleanup's further lines are only in its report (%v)", err))
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return &lineLog{w: w, done: done}
}

type lineLog struct {
	w    *io.PipeWriter
	done chan struct{}
}

func (l *lineLog) Write(b []byte) (int, error) { return l.w.Write(b) }

func (l *lineLog) Close() error {
	err := l.w.Close()
	<-l.done
	return err
}

// destroyCleanupResource is DestroyCleanup as the Cluster registers it.
type destroyCleanupResource struct {
	pulumi.CustomResourceState
}

// registerCleanup is the Cluster's addons.CleanupRegistrar: a
// DestroyCleanup, registered with no version and no download URL, so that
// the engine gives it the default provider of the Cluster itself: it fills
// both from the program's required plugins, the consumer's SDK of this
// package (normalizeProviderRequest, pkg/resource/deploy/default_providers.go
// at v3.276.0), which is what the SDK registered the Cluster with, whatever
// source and spelling `pulumi package add` was given.
func registerCleanup(ctx *pulumi.Context, name string, settings pulumi.StringMap, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	r := &destroyCleanupResource{}
	if err := ctx.RegisterResource(destroyCleanupToken, name, pulumi.Map{"settings": settings}, r, opts...); err != nil {
		return nil, err
	}
	return r, nil
}

var _ addons.CleanupRegistrar = registerCleanup
