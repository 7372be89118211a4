// Command nodeless-eks is a Pulumi program that bootstraps an EKS cluster
// with no node groups: one Fargate profile runs the Karpenter controller, and
// Karpenter launches every EC2 node. One `pulumi up` converges. It is one
// consumer of package nodeless; the Cluster component (provider/) is the
// other.
package main

import (
	"sync"
	"time"

	"nodeless-eks/config"
	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/nodeless"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error { return program(ctx, time.Now().UTC()) })
}

// Seams for the tests: the cluster the bootstrap watch reads, where its
// lines go, the watches in flight, and how often it reads (nodeless.Watch);
// how long a new cluster's Karpenter waits on its ACTIVE Fargate profile
// (nodeless.Options).
var (
	bootAPI             func(kubeconfig string) (bootwatch.API, error)
	bootLog             func(ctx *pulumi.Context) pulumi.Log
	bootWatches         sync.WaitGroup
	bootWatchInterval   time.Duration
	bootWatchStuckAfter time.Duration
	fargateSettle       time.Duration
)

// program is the whole stack: the stack's configuration, read and checked
// (today is the day the EKS support calendar is read against), deployed
// at the root of the stack, its outputs exported.
func program(ctx *pulumi.Context, today time.Time) error {
	cfg, err := config.Load(ctx, today)
	if err != nil {
		return err
	}
	out, err := nodeless.Deploy(ctx, cfg, nodeless.Options{FargateSettle: fargateSettle, Watch: nodeless.Watch{
		API: bootAPI, Log: bootLog, Running: &bootWatches,
		Interval: bootWatchInterval, StuckAfter: bootWatchStuckAfter,
	}})
	if err != nil {
		return err
	}
	for name, v := range out.Map() {
		ctx.Export(name, v)
	}
	return nil
}
