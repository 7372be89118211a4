// Package eksaddon resolves EKS add-on versions.
package eksaddon

import (
	"fmt"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Version returns pinned, or else the version EKS marks as the default for
// the Kubernetes version. The default stays the same from run to run,
// where "most recent" would turn a routine `pulumi up` into an upgrade.
func Version(ctx *pulumi.Context, addon, pinned, kubernetesVersion string, opts ...pulumi.InvokeOption) (string, error) {
	if pinned != "" {
		return pinned, nil
	}
	res, err := awseks.GetAddonVersion(ctx, &awseks.GetAddonVersionArgs{
		AddonName:         addon,
		KubernetesVersion: kubernetesVersion,
		MostRecent:        pulumi.BoolRef(false),
	}, opts...)
	if err != nil {
		return "", fmt.Errorf("looking up the default %s version for Kubernetes %s: %w", addon, kubernetesVersion, err)
	}
	return res.Version, nil
}

// ResolveConflicts is how an add-on treats the fields of what it takes over
// (ResolveConflictsOnCreate and OnUpdate): EKS installs self-managed
// vpc-cni, kube-proxy and CoreDNS with every cluster it creates without
// bootstrapSelfManagedAddons: false (EKS user guide, eks-add-ons.html), and
// the add-on overwrites them rather than fail.
const ResolveConflicts = "OVERWRITE"
