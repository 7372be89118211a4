package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// checkUpgradeStep rejects a kubernetesVersion that EKS cannot reach in one
// step from the version the cluster runs: EKS upgrades the control plane
// one minor at a time and never downgrades. A cluster that does not exist
// yet may start at any supported version. Runs before anything is
// registered, so a refused upgrade changes nothing.
func checkUpgradeStep(ctx *pulumi.Context, c *Config) error {
	running, err := eks.LookupCluster(ctx, &eks.LookupClusterArgs{Name: c.ClusterName})
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading the version cluster %s runs, to check the step to kubernetesVersion %q: %w", c.ClusterName, c.KubernetesVersion, err)
	}
	from, errFrom := minor(running.Version)
	to, errTo := minor(c.KubernetesVersion)
	switch {
	case errFrom != nil || errTo != nil:
		return nil // validated before; an unexpected running version is EKS's to judge
	case to < from:
		return fmt.Errorf("kubernetesVersion %q: cluster %s runs %s, and EKS cannot downgrade a cluster; keep %q",
			c.KubernetesVersion, c.ClusterName, running.Version, running.Version)
	case to > from+1:
		return fmt.Errorf("kubernetesVersion %q: cluster %s runs %s, and EKS upgrades one minor version at a time; "+
			"set \"1.%d\", run pulumi up, then go on (see the README's Upgrades section)",
			c.KubernetesVersion, c.ClusterName, running.Version, from+1)
	}
	return nil
}

// isNotFound reports the AWS provider's answer for a cluster that does not exist.
func isNotFound(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "couldn't find resource") || strings.Contains(msg, "ResourceNotFoundException")
}

// minor is NN of "1.NN".
func minor(version string) (int, error) {
	_, m, ok := strings.Cut(version, ".")
	if !ok {
		return 0, fmt.Errorf("version %q is not 1.NN", version)
	}
	return strconv.Atoi(m)
}
