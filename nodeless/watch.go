package nodeless

import (
	"context"
	"fmt"
	"sync"
	"time"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/karpenter"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Watch is how the bootstrap watch reads the cluster and reports; its
// zero value is the real watch. The fields are seams for tests.
type Watch struct {
	// API reads the cluster of a kubeconfig; nil is internal/kubeapi.
	API func(kubeconfig string) (bootwatch.API, error)
	// Log is where lines go; nil is ctx.Log.
	Log func(ctx *pulumi.Context) pulumi.Log
	// Running counts the watches in flight, when set; tests wait on it,
	// the program never does.
	Running *sync.WaitGroup
	// The watch reads the cluster every Interval and says why a pod,
	// class or pool is stuck once it has been for StuckAfter: a Fargate pod
	// normally has its node within 2 minutes, so a cause is said within 3
	// minutes of its first sign; a False condition, a failed launch,
	// Karpenter's FailedScheduling, an image that cannot be pulled or a
	// crash is said at the next read. Zero means those defaults: 10 s, 2 min.
	Interval, StuckAfter time.Duration
}

func (w Watch) withDefaults() Watch {
	if w.API == nil {
		w.API = func(kubeconfig string) (bootwatch.API, error) { return kubeapi.New(kubeconfig) }
	}
	if w.Log == nil {
		w.Log = func(ctx *pulumi.Context) pulumi.Log { return ctx.Log }
	}
	if w.Running == nil {
		w.Running = &sync.WaitGroup{}
	}
	if w.Interval == 0 {
		w.Interval = 10 * time.Second
	}
	if w.StuckAfter == 0 {
		w.StuckAfter = 2 * time.Minute
	}
	return w
}

// bootstrap is what the watch follows, in the order `pulumi up` creates it.
type bootstrap struct {
	kubeconfig pulumi.StringOutput
	// The controller step starts once the Fargate profile exists and ends
	// when the Karpenter release is created.
	fargateProfile, controller pulumi.CustomResource
	// The node step starts with the controller and ends when the CoreDNS
	// add-on is created.
	coreDNS pulumi.CustomResource
	// Lines go on the component that holds what they concern: Karpenter's
	// (the controller), the node pools' (classes, pools, NodeClaims) or the
	// add-ons' (CoreDNS). A log line names its resource by URN, which the
	// SDK learns only when the resource is done (pulumi sdk/go/pulumi/log.go
	// awaits it); a component's is known at once, a resource still being
	// created has none to give, and one that fails never will.
	karpenter, nodePools, addons pulumi.Resource
	ownLabel                     string
}

// watchBootstrap starts, during `pulumi up` only (a preview reads no
// cluster), a read-only watch of each bootstrap step that logs, on the
// resource it concerns, what Karpenter and Kubernetes report (see
// internal/bootwatch). A watch runs in a goroutine the program does not
// wait for: it ends when its step's resource is created, when its bound
// passes (the step's resource fails then too), or when the program exits,
// so it never keeps `pulumi up` waiting.
func watchBootstrap(ctx *pulumi.Context, w Watch, b bootstrap) {
	if ctx.DryRun() {
		return
	}
	w = w.withDefaults()
	log := w.Log(ctx)
	sink := resourceSink{log: log, b: b}
	opts := bootwatch.Options{
		// The chart's selector labels and container name (karpenter chart
		// templates/_helpers.tpl and deployment.yaml; test/kubecheck renders it).
		Namespace: karpenter.Namespace, Selector: "app.kubernetes.io/name=karpenter,app.kubernetes.io/instance=karpenter",
		Container: "controller", OwnLabel: b.ownLabel,
		Interval: w.Interval, StuckAfter: w.StuckAfter,
	}
	start := func(trigger pulumi.Output, until pulumi.CustomResource, bound time.Duration,
		run func(context.Context, bootwatch.API, bootwatch.Sink, bootwatch.Options, time.Duration)) {
		done := created(until)
		pulumi.All(b.kubeconfig, trigger).ApplyT(func(v []any) error {
			api, err := w.API(v[0].(string))
			if err != nil {
				_ = log.Warn(fmt.Sprintf("the bootstrap watch cannot read the cluster (%v); `pulumi up` goes on without it", err), nil)
				return nil
			}
			w.Running.Add(1)
			go func() {
				defer w.Running.Done()
				wctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					select {
					case <-done:
						cancel()
					case <-wctx.Done():
					}
				}()
				run(wctx, api, sink, opts, bound)
			}()
			return nil
		})
	}
	start(b.fargateProfile.ID().ToStringOutput(), b.controller, bounds.KarpenterController, bootwatch.Controller)
	start(b.controller.ID().ToStringOutput(), b.coreDNS, bounds.NodeClass+bounds.NodePool+bounds.FirstNode, bootwatch.Nodes)
}

// created is closed when r has been created (its ID is known).
func created(r pulumi.CustomResource) <-chan struct{} {
	ch := make(chan struct{})
	r.ID().ApplyT(func(pulumi.ID) error { close(ch); return nil })
	return ch
}

// resourceSink logs each line on the resource that stands for its subject.
type resourceSink struct {
	log pulumi.Log
	b   bootstrap
}

// A log line that fails to reach the engine is lost: the watch only
// informs, and `pulumi up` goes on either way.
func (s resourceSink) Info(subj bootwatch.Subject, msg string) {
	_ = s.log.Info(msg, &pulumi.LogArgs{Resource: s.resourceOf(subj)})
}

func (s resourceSink) Warn(subj bootwatch.Subject, msg string) {
	_ = s.log.Warn(msg, &pulumi.LogArgs{Resource: s.resourceOf(subj)})
}

// resourceOf is the component a line goes on; the line names the object.
func (s resourceSink) resourceOf(subj bootwatch.Subject) pulumi.Resource {
	switch subj.Kind {
	case bootwatch.KindController:
		return s.b.karpenter
	case bootwatch.KindEC2NodeClass, bootwatch.KindNodePool, bootwatch.KindNodeClaim:
		return s.b.nodePools
	}
	return s.b.addons
}
