package cleanup

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
)

// The environment the destroy-cleanup command reads. The program sets the
// NODELESS_EKS_ ones on the command; the skip switches come from the
// environment of `pulumi destroy` (pulumi-command runs a command with its
// own environment plus the resource's, provider/pkg/provider/local).
const (
	EnvKubeconfig = "NODELESS_EKS_KUBECONFIG"
	// EnvClusterArn and EnvClusterCreatedAt are the EKS cluster the
	// program created: EKS's "not found" counts only from its account and
	// region, and a cluster of its name created at another time is another.
	EnvClusterArn       = "NODELESS_EKS_CLUSTER_ARN"
	EnvClusterCreatedAt = "NODELESS_EKS_CLUSTER_CREATED_AT"
	EnvOwnLabel         = "NODELESS_EKS_OWN_LABEL" // "<key>=<value>"
	// EnvOwnNodePools and EnvOwnNodeClasses are the names of the stack's
	// own NodePools and EC2NodeClasses, comma-separated.
	EnvOwnNodePools        = "NODELESS_EKS_OWN_NODEPOOLS"
	EnvOwnNodeClasses      = "NODELESS_EKS_OWN_NODECLASSES"
	EnvLoadBalancerTimeout = "NODELESS_EKS_LB_TIMEOUT"
	EnvVolumeTimeout       = "NODELESS_EKS_VOLUME_TIMEOUT"
	EnvNodeTimeout         = "NODELESS_EKS_NODE_TIMEOUT"
	// EnvReport is the file the cleanup appends its report to, relative to
	// the project's directory (the delete runs there, where Pulumi.yaml
	// is, whatever directory `pulumi destroy` started in): its output reaches the terminal only as
	// Pulumi's ephemeral status, which the end of an interactive run drops.
	EnvReport = "NODELESS_EKS_CLEANUP_REPORT"
	// EnvSkip, set to "true", skips the cleanup entirely: the way out when
	// it cannot work and what it would remove is already gone or will be
	// removed by hand. The delete command reads it before it builds
	// anything (addons.DestroyCleanupCommand).
	EnvSkip = "NODELESS_EKS_SKIP_DESTROY_CLEANUP"
	// EnvPartial, set to "true", runs the cleanup although the Pulumi
	// command deleting it is not a whole `pulumi destroy`, or cannot be
	// shown to be one.
	EnvPartial = "NODELESS_EKS_DESTROY_CLEANUP_PARTIAL"
	// EnvStuckPodWait, a duration, overrides StuckTerminating: how long a
	// pod past its grace period may still be terminating before the
	// cleanup deletes it at once. The program does not set it.
	EnvStuckPodWait = "NODELESS_EKS_STUCK_POD_WAIT"
	// EnvDeleteUnreachable is pulumi-kubernetes' switch for clusters that
	// cannot be reached, on when it is exactly "true" (pulumi-kubernetes
	// provider/pkg/provider: os.Getenv(...) == "true"); the cleanup then
	// gives up on such a cluster at once.
	EnvDeleteUnreachable = "PULUMI_K8S_DELETE_UNREACHABLE"
)

// findPulumi is the Pulumi command among this process's ancestors; a
// variable so that tests can give another.
var findPulumi = func() (invocation, error) { return findInvocation(os.Getpid(), systemInfo()) }

// Timing of the command: how long the API server may take to answer, how
// often progress is checked and reported.
const (
	ReachTimeout = 2 * time.Minute
	interval     = 10 * time.Second
	reportEvery  = 30 * time.Second
	// settle is how long the cleanup watches for a load balancer that
	// something recreates, once those it deleted are gone: two polls.
	settle = 2 * interval
)

// Main runs the cleanup as the destroy-cleanup command does, reading its
// settings from getenv and writing to log, and to the report file the
// program names (EnvReport).
func Main(ctx context.Context, getenv func(string) string, log io.Writer) error {
	if report := getenv(EnvReport); report != "" {
		// A report that cannot be written (a read-only checkout) is no
		// reason to leave what workloads created: the cleanup runs, and its
		// lines stay in Pulumi's output.
		f, err := os.OpenFile(report, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(log, "cannot write the cleanup's report to %s (%v): its lines are only in this output; "+
				"copy them before the display ends\n", report, err)
			return finish(run(ctx, getenv, log), log)
		}
		defer f.Close()
		fmt.Fprintf(f, "\n=== destroy cleanup of %s, %s ===\n", getenv(EnvOwnLabel), time.Now().UTC().Format(time.RFC3339))
		defer fmt.Fprintf(log, "this report is also in %s\n", report)
		log = io.MultiWriter(log, f)
	}
	return finish(run(ctx, getenv, log), log)
}

// finish says a failure on the log as well as returning it.
func finish(err error, log io.Writer) error {
	if err != nil {
		fmt.Fprintf(log, "failed: %v\n", err)
	}
	return err
}

func run(ctx context.Context, getenv func(string) string, log io.Writer) error {
	if getenv(EnvSkip) == "true" {
		left := "Load balancers, EBS volumes and nodes that workloads created are"
		if getenv(EnvPhase) == PhaseNetwork {
			left = "Nothing audits what the cluster's controllers left in AWS, and network interfaces and security groups that its parts left in a VPC the stack made are"
		}
		fmt.Fprintf(log, "%s=true: skipping the destroy cleanup. %s left for you to remove\n", EnvSkip, left)
		return nil
	}
	if inv, err := findPulumi(); err != nil && getenv(EnvPartial) != "true" {
		return undecidedRefusal(err)
	} else if err == nil && !inv.whole() && getenv(EnvPartial) != "true" {
		return partialRefusal(inv)
	} else if err != nil || !inv.whole() {
		fmt.Fprintf(log, "%s=true: cleaning although nothing shows a whole `pulumi destroy` deletes the cleanup\n", EnvPartial)
	}
	if getenv(EnvPhase) == PhaseNetwork {
		return runNetwork(ctx, getenv, log)
	}
	key, value, ok := strings.Cut(getenv(EnvOwnLabel), "=")
	if !ok || key == "" || value == "" {
		return fmt.Errorf("%s is %q; the program sets it to <key>=<value>", EnvOwnLabel, getenv(EnvOwnLabel))
	}
	o := Options{
		OwnLabelKey: key, OwnLabelValue: value, OwnNodePools: list(getenv(EnvOwnNodePools)), OwnNodeClasses: list(getenv(EnvOwnNodeClasses)),
		ReachTimeout: ReachTimeout, Interval: interval, ReportEvery: reportEvery, Settle: settle, Log: log,
		DeleteUnreachable: getenv(EnvDeleteUnreachable) == "true",
	}
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{EnvLoadBalancerTimeout, &o.LoadBalancerTimeout}, {EnvVolumeTimeout, &o.VolumeTimeout}, {EnvNodeTimeout, &o.NodeTimeout}} {
		v, err := time.ParseDuration(getenv(d.env))
		if err != nil || v <= 0 {
			return fmt.Errorf("%s is %q; the program sets it to a duration", d.env, getenv(d.env))
		}
		*d.to = v
	}
	if v := getenv(EnvStuckPodWait); v != "" {
		wait, err := time.ParseDuration(v)
		if err != nil || wait <= 0 {
			return fmt.Errorf("%s is %q; want a duration such as 1m", EnvStuckPodWait, v)
		}
		o.StuckPodWait = wait
	}
	kubeconfig := getenv(EnvKubeconfig)
	if kubeconfig == "" {
		return fmt.Errorf("%s is empty; the program sets it from the cluster's kubeconfig", EnvKubeconfig)
	}
	api, err := kubeapi.New(kubeconfig)
	if err != nil {
		return err
	}
	if cluster, ok := eksClusterOf(kubeconfig); ok {
		cluster.Arn, cluster.CreatedAt = getenv(EnvClusterArn), getenv(EnvClusterCreatedAt)
		o.ClusterExists = cluster.exists
		o.MarkKept = cluster.markKept
	}
	// Its own deadline: a credential plugin that hangs (a login prompt)
	// must not outlast the delete timeout the program gives the command.
	ctx, cancel := context.WithTimeout(ctx, Budget(o.LoadBalancerTimeout, o.VolumeTimeout, o.NodeTimeout)-2*time.Minute)
	defer cancel()
	return Run(ctx, api, o)
}

// undecidedRefusal says why the cleanup does not run when nobody can tell
// which Pulumi command deletes it: a targeted destroy of a cluster that
// stays is then as likely as a whole one.
func undecidedRefusal(err error) error {
	return fmt.Errorf("cannot tell which Pulumi command deletes the destroy cleanup (%v), so nothing shows it is a whole `pulumi "+
		"destroy`: under a targeted destroy (--target with --target-dependents) it would delete every Ingress, Gateway and LoadBalancer "+
		"Service and every EBS volume with reclaim policy Delete that the workloads of a cluster that stays created. If this is a "+
		"whole destroy, set %s=true to clean anyway; set %s=true to let it go without cleaning (what the workloads created stays); "+
		"docs/operations.md, \"Destroying part of a stack\"", err, EnvPartial, EnvSkip)
}

// partialRefusal says why the cleanup does not run under a Pulumi command
// that is not a whole destroy, and what to do.
func partialRefusal(inv invocation) error {
	what := "`" + strings.Join(inv.Args, " ") + "`"
	why := "is a destroy of some resources only, and it reaches the destroy cleanup (through --target-dependents, or by naming it)"
	if inv.Undecided != "" {
		why = "has a flag the cleanup cannot read (" + inv.Undecided + "), so nothing shows it is a destroy of the whole stack"
	}
	if inv.Command != "destroy" {
		why = "is not a destroy, yet it deletes the destroy cleanup: the program no longer registers it under its name (renamed " +
			"without an alias, or removed)"
	}
	return fmt.Errorf("%s %s. The cleanup would delete every Ingress, Gateway and LoadBalancer Service and every EBS volume with "+
		"reclaim policy Delete that the workloads of a cluster that stays created. Set %s=true to let it go without cleaning "+
		"(what the workloads created stays), or %s=true to clean anyway; docs/operations.md, \"Destroying part of a stack\"",
		what, why, EnvSkip, EnvPartial)
}

// Budget is how long the whole command may take: every bound, plus the
// time `go run` needs to build it (seconds once the program is built; a
// minute at most on a cold 2-vCPU runner).
func Budget(loadBalancers, volumes, nodes time.Duration) time.Duration {
	// The load balancers' bound holds twice (the LB controller's own
	// objects are waited for after them), then the settle; the last look
	// at the end takes at most as long as reaching the API server.
	return ReachTimeout + 2*loadBalancers + settle + volumes + nodes + ReachTimeout + 2*time.Minute
}

// list splits a comma-separated list; "" is nil, as from the state of a
// version that did not set it.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
