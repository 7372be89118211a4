package cleanup

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
)

// The environment the destroy-cleanup command reads. The program sets the
// NODELESS_EKS_ ones on the command; the skip switches come from the
// environment of `pulumi destroy` (pulumi-command runs a command with its
// own environment plus the resource's, provider/pkg/provider/local).
const (
	EnvKubeconfig          = "NODELESS_EKS_KUBECONFIG"
	EnvOwnLabel            = "NODELESS_EKS_OWN_LABEL" // "<key>=<value>"
	EnvLoadBalancerTimeout = "NODELESS_EKS_LB_TIMEOUT"
	EnvVolumeTimeout       = "NODELESS_EKS_VOLUME_TIMEOUT"
	EnvNodeTimeout         = "NODELESS_EKS_NODE_TIMEOUT"
	// EnvSkip skips the cleanup entirely: the way out when it cannot work
	// and what it would remove is already gone or will be removed by hand.
	EnvSkip = "NODELESS_EKS_SKIP_DESTROY_CLEANUP"
	// EnvDeleteUnreachable is pulumi-kubernetes' switch for clusters that
	// cannot be reached; the cleanup then gives up on such a cluster at once.
	EnvDeleteUnreachable = "PULUMI_K8S_DELETE_UNREACHABLE"
)

// Timing of the command: how long the API server may take to answer, how
// often progress is checked and reported.
const (
	ReachTimeout = 2 * time.Minute
	interval     = 10 * time.Second
	reportEvery  = 30 * time.Second
)

// Main runs the cleanup as the destroy-cleanup command does, reading its
// settings from getenv and writing to log.
func Main(ctx context.Context, getenv func(string) string, log io.Writer) error {
	if on, _ := strconv.ParseBool(getenv(EnvSkip)); on {
		fmt.Fprintf(log, "%s is set: skipping the destroy cleanup. Load balancers, EBS volumes and nodes that workloads "+
			"created are left for you to remove\n", EnvSkip)
		return nil
	}
	key, value, ok := strings.Cut(getenv(EnvOwnLabel), "=")
	if !ok || key == "" || value == "" {
		return fmt.Errorf("%s is %q; the program sets it to <key>=<value>", EnvOwnLabel, getenv(EnvOwnLabel))
	}
	o := Options{
		OwnLabelKey: key, OwnLabelValue: value,
		ReachTimeout: ReachTimeout, Interval: interval, ReportEvery: reportEvery, Log: log,
	}
	o.DeleteUnreachable, _ = strconv.ParseBool(getenv(EnvDeleteUnreachable))
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
	kubeconfig := getenv(EnvKubeconfig)
	if kubeconfig == "" {
		return fmt.Errorf("%s is empty; the program sets it from the cluster's kubeconfig", EnvKubeconfig)
	}
	api, err := kubeapi.New(kubeconfig)
	if err != nil {
		return err
	}
	// Its own deadline: a credential plugin that hangs (a login prompt)
	// must not outlast the delete timeout the program gives the command.
	ctx, cancel := context.WithTimeout(ctx, Budget(o.LoadBalancerTimeout, o.VolumeTimeout, o.NodeTimeout)-2*time.Minute)
	defer cancel()
	return Run(ctx, api, o)
}

// Budget is how long the whole command may take: every bound, plus the
// time `go run` needs to build it (seconds once the program is built; a
// minute at most on a cold 2-vCPU runner).
func Budget(loadBalancers, volumes, nodes time.Duration) time.Duration {
	return ReachTimeout + loadBalancers + volumes + nodes + 2*time.Minute
}
