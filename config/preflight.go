package config

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"nodeless-eks/cluster"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ssm"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// supportWarningDays is how long before the end of a minor's standard
// support preview starts to warn.
const supportWarningDays = 90

// preflight reads the account before anything is registered, so that a
// configuration AWS would refuse, or that would leave the cluster without
// nodes, changes nothing: whether the cluster exists and which minor it
// runs, whether the minor is within EKS support on day, and whether every
// pinned AMI is published. It adds what is valid but costly or soon to
// change to c.Warnings.
func preflight(ctx *pulumi.Context, c *Config, day time.Time) error {
	running, exists, err := runningCluster(ctx, c.ClusterName)
	if err != nil {
		return err
	}
	c.ClusterExists = exists
	var errs []error
	if exists {
		if err := checkUpgradeStep(c, running.Version); err != nil {
			errs = append(errs, err)
		}
		if err := c.checkServiceRole(running.RoleArn); err != nil {
			errs = append(errs, err)
		}
	}
	problems, warnings := checkSupport(c, day, exists)
	errs = append(errs, problems...)
	c.Warnings = append(c.Warnings, warnings...)
	errs = append(errs, checkAMIsPublished(ctx, c)...)
	if err := findSpotRole(ctx, c); err != nil {
		errs = append(errs, err)
	}
	if c.VpcName == "" {
		if err := preflightOwnVpc(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// spotRolePath is where the EC2 Spot service-linked role lives
// (AWSServiceRoleForEC2Spot, for spot.amazonaws.com).
const spotRolePath = "/aws-service-role/spot.amazonaws.com/"

// findSpotRole sets c.SpotRole when a pool allows spot capacity: the
// account's EC2 Spot service-linked role if it has one, which the stack
// adopts, or none, which the stack creates (karpenter.SpotRole).
func findSpotRole(ctx *pulumi.Context, c *Config) error {
	spot := false
	for _, p := range c.NodePools {
		if r := p.Requirements; r != nil && (len(r.CapacityTypes) == 0 || slices.Contains(r.CapacityTypes, "spot")) {
			spot = true
		}
	}
	if !spot {
		return nil
	}
	roles, err := iam.GetRoles(ctx, &iam.GetRolesArgs{PathPrefix: pulumi.StringRef(spotRolePath)})
	if err != nil {
		return fmt.Errorf("nodePools allow spot capacity: listing the roles under %s (iam:ListRoles), to find the account's EC2 Spot "+
			"service-linked role: %w", spotRolePath, err)
	}
	c.SpotRole = &karpenter.SpotRole{}
	if len(roles.Arns) > 0 {
		c.SpotRole.Arn = roles.Arns[0]
	}
	return nil
}

// runningCluster returns the cluster as EKS describes it (the Kubernetes
// version it runs, its service role), and whether it exists at all. It
// lists the account's clusters first, so that "no cluster yet" is an
// answer, not an error to recognise by its text.
func runningCluster(ctx *pulumi.Context, clusterName string) (*eks.LookupClusterResult, bool, error) {
	clusters, err := eks.GetClusters(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("listing the EKS clusters of the account (eks:ListClusters), to tell a new cluster %s from an upgrade: %w", clusterName, err)
	}
	if !slices.Contains(clusters.Names, clusterName) {
		return nil, false, nil
	}
	cl, err := eks.LookupCluster(ctx, &eks.LookupClusterArgs{Name: clusterName})
	if err != nil {
		return nil, false, fmt.Errorf("reading the version and service role of cluster %s: %w", clusterName, err)
	}
	return cl, true, nil
}

// checkUpgradeStep rejects a kubernetesVersion that EKS cannot reach in one
// step from the version the cluster runs: EKS upgrades the control plane
// one minor at a time (EKS user guide, update-cluster.html). A lower
// version is refused too. EKS can roll a control plane back one minor
// within 7 days of an in-place upgrade, with the same UpdateClusterVersion
// (EKS user guide, rollback-cluster.html), but not its add-ons, nodes or
// Fargate pods, and not a cluster created at its current version; the
// program would send add-on versions, AMIs and a Karpenter configuration
// chosen for the newer minor along with it. The rollback is an operation
// of its own (docs/upgrades.md), after which the running version is the
// one to set.
func checkUpgradeStep(c *Config, running string) error {
	from, errFrom := minor(running)
	to, errTo := minor(c.KubernetesVersion)
	switch {
	case errFrom != nil || errTo != nil:
		return nil // validated before; an unexpected running version is EKS's to judge
	case to < from:
		return fmt.Errorf("kubernetesVersion %q: cluster %s runs %s, and this program does not move a cluster to a lower "+
			"version: EKS rolls a control plane back one minor only within 7 days of an in-place upgrade, and not its add-ons, "+
			"nodes or Fargate pods (docs/upgrades.md says how, with aws eks update-cluster-version); set %q "+
			"(with supportType STANDARD, EKS upgrades a cluster itself when standard support ends)",
			c.KubernetesVersion, c.ClusterName, running, running)
	case to > from+1:
		steps := make([]string, 0, to-from)
		for m := from + 1; m <= to; m++ {
			steps = append(steps, fmt.Sprintf("%q", fmt.Sprintf("1.%d", m)))
		}
		return fmt.Errorf("kubernetesVersion %q: cluster %s runs %s, and EKS upgrades one minor version at a time: "+
			"set kubernetesVersion %s, running pulumi up after each (see docs/upgrades.md)",
			c.KubernetesVersion, c.ClusterName, running, strings.Join(steps, ", then "))
	}
	return nil
}

// checkSupport holds the configured minor to the EKS support calendar on
// day. A new cluster cannot start on a minor whose extended support has
// ended; STANDARD is refused for a minor past standard support (EKS accepts
// it only before); a production stack past standard support needs
// allowExtendedSupport. A minor within supportWarningDays of the end of
// standard support, or in extended support, gets a warning.
func checkSupport(c *Config, day time.Time, exists bool) (problems []error, warnings []string) {
	m, err := minor(c.KubernetesVersion)
	if err != nil {
		return nil, nil
	}
	rel, ok := versions.Kubernetes(m)
	if !ok {
		return nil, nil // Validate reported it
	}
	next := fmt.Sprintf("1.%d", m+1)
	endStandard := rel.EndOfStandardSupport.Format(time.DateOnly)
	endExtended := rel.EndOfExtendedSupport.Format(time.DateOnly)
	monthly := func(perHour float64) string { return fmt.Sprintf("$%.0f a month", perHour*730) }
	switch {
	case !rel.Supported(day):
		if !exists {
			problems = append(problems, fmt.Errorf("kubernetesVersion %q: EKS ended extended support on %s and creates no new cluster of it; "+
				"start at %q", c.KubernetesVersion, endExtended, defaultKubernetesVersion))
		} else {
			warnings = append(warnings, fmt.Sprintf("kubernetesVersion %q: EKS ended extended support on %s and upgrades the control plane "+
				"to %s at a time of its choosing; upgrade it yourself first (see docs/upgrades.md)", c.KubernetesVersion, endExtended, next))
		}
	case !rel.InStandardSupport(day):
		switch {
		case c.SupportType == cluster.SupportStandard:
			problems = append(problems, fmt.Errorf("supportType %q: kubernetesVersion %q left standard support on %s, and EKS accepts %s "+
				"only for a minor in standard support; upgrade to %q (one minor at a time), or set supportType %q (billed $%.2f an hour "+
				"instead of $%.2f)", c.SupportType, c.KubernetesVersion, endStandard, cluster.SupportStandard, next,
				cluster.SupportExtended, versions.ExtendedSupportUSDPerHour, versions.StandardSupportUSDPerHour))
		case c.Production && !c.AllowExtendedSupport:
			problems = append(problems, fmt.Errorf("kubernetesVersion %q: standard support ended on %s, and a production cluster in "+
				"extended support costs $%.2f an hour instead of $%.2f (%s instead of %s); upgrade to %q (one minor at a time), "+
				"or set allowExtendedSupport: true to accept the cost until %s", c.KubernetesVersion, endStandard,
				versions.ExtendedSupportUSDPerHour, versions.StandardSupportUSDPerHour, monthly(versions.ExtendedSupportUSDPerHour),
				monthly(versions.StandardSupportUSDPerHour), next, endExtended))
		default:
			warnings = append(warnings, fmt.Sprintf("kubernetesVersion %q: in extended support since %s, billed $%.2f an hour instead of "+
				"$%.2f; EKS upgrades the control plane itself after %s. Upgrade to %q (see docs/upgrades.md)", c.KubernetesVersion,
				endStandard, versions.ExtendedSupportUSDPerHour, versions.StandardSupportUSDPerHour, endExtended, next))
		}
	case !rel.InStandardSupport(day.AddDate(0, 0, supportWarningDays)):
		days := int(rel.EndOfStandardSupport.Sub(day).Hours() / 24)
		then := fmt.Sprintf("EKS upgrades the control plane to %s itself (supportType STANDARD)", next)
		if c.SupportType != cluster.SupportStandard {
			then = fmt.Sprintf("the cluster is billed $%.2f an hour instead of $%.2f (supportType %s)",
				versions.ExtendedSupportUSDPerHour, versions.StandardSupportUSDPerHour, c.SupportType)
		}
		warnings = append(warnings, fmt.Sprintf("kubernetesVersion %q: standard support ends on %s, in %d days; then %s. "+
			"Upgrade to %q before then (see docs/upgrades.md)", c.KubernetesVersion, endStandard, days, then, next))
	}
	return problems, warnings
}

// checkAMIsPublished looks up, for every pinned AMI alias and every
// architecture that the pools using its class allow, the SSM parameter
// Karpenter will read. A missing one means the class would never turn
// Ready (Karpenter only logs the error), and an existing class would keep
// the AMIs of the previous minor after an upgrade.
func checkAMIsPublished(ctx *pulumi.Context, c *Config) []error {
	m, err := minor(c.KubernetesVersion)
	if err != nil {
		return nil
	}
	var errs []error
	published := map[string][]string{} // parameters by directory
	for _, name := range spec.SortedNames(c.NodeClasses) {
		alias := c.NodeClasses[name].AMIAlias
		for _, arch := range spec.Architectures(name, c.NodePools) {
			param := spec.AMIParameter(alias, m, arch)
			if param == "" {
				continue
			}
			dir := path.Dir(param)
			names, seen := published[dir]
			if !seen {
				found, err := ssm.GetParametersByPath(ctx, &ssm.GetParametersByPathArgs{Path: dir})
				if err != nil {
					errs = append(errs, fmt.Errorf("nodeClasses.%s.amiAlias %q: reading the SSM parameters under %s (ssm:GetParametersByPath): %w",
						name, alias, dir, err))
					published[dir] = nil
					continue
				}
				names = found.Names
				published[dir] = names
			}
			if !slices.Contains(names, param) {
				errs = append(errs, fmt.Errorf("nodeClasses.%s.amiAlias %q: no %s image for Kubernetes %s: the SSM parameter %s that "+
					"Karpenter reads does not exist in %s, so the node class would never turn Ready and no %s node would start. "+
					"Pin a release that ships Kubernetes %s for %s",
					name, alias, arch, c.KubernetesVersion, param, c.Region, arch, c.KubernetesVersion, arch))
			}
		}
	}
	return errs
}

// minor is NN of "1.NN".
func minor(version string) (int, error) {
	major, m, ok := strings.Cut(version, ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("version %q is not 1.NN", version)
	}
	return strconv.Atoi(m)
}
