package addons

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/internal/awsaccount"
	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/names"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	storagev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/storage/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The EBS CSI driver's controller runs as this service account; its Pod
// Identity association and role trust name it.
const (
	EBSCSINamespace      = "kube-system"
	EBSCSIServiceAccount = "ebs-csi-controller-sa"
	// DefaultStorageClass is the class a PersistentVolumeClaim without a
	// storageClassName gets.
	DefaultStorageClass = "gp3"
)

// newEBSCSIDriver installs the aws-ebs-csi-driver add-on with its own Pod
// Identity role (AWS's AmazonEBSCSIDriverPolicy) and makes an encrypted
// gp3 class the cluster's default. Its controller is a Deployment, so the
// add-on waits for the NodePools like CoreDNS, beside it rather than behind
// it: its pods only retry their AWS calls until CoreDNS answers.
func newEBSCSIDriver(ctx *pulumi.Context, name string, args *Args, account awsaccount.Account,
	podIdentityAgent pulumi.Resource, parent pulumi.ResourceOrInvokeOption) (*awseks.Addon, pulumi.Resource, error) {
	tags := pulumi.ToStringMap(args.Tags)
	trust, err := PodIdentityTrustPolicy(clusterArn(account, args), EBSCSINamespace, EBSCSIServiceAccount)
	if err != nil {
		return nil, nil, err
	}
	role, err := iam.NewRole(ctx, name+"-ebs-csi", args.IAM.Role(&iam.RoleArgs{
		Description:      pulumi.Sprintf("EBS CSI driver (Pod Identity) of EKS cluster %s", args.ClusterName),
		AssumeRolePolicy: pulumi.String(trust),
		Tags:             tags,
	}), parent)
	if err != nil {
		return nil, nil, fmt.Errorf("creating EBS CSI driver role: %w", err)
	}
	attachment, err := iam.NewRolePolicyAttachment(ctx, name+"-ebs-csi", &iam.RolePolicyAttachmentArgs{
		Role:      role.Name,
		PolicyArn: pulumi.Sprintf("arn:%s:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy", account.Partition),
	}, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("attaching AmazonEBSCSIDriverPolicy: %w", err)
	}
	// Every volume the driver makes, of any class, carries the cluster's
	// tag (its extraTags: aws-ebs-csi-driver docs/tagging.md), by which the
	// leftover audit finds one left after the cluster is gone
	// (internal/cleanup, audit.go). controller.extraVolumeTags is in the
	// add-on's configuration schema (a dump of it in
	// turbot/steampipe-plugin-aws#1514); not checked against the pinned
	// version, which no schema here holds.
	configuration, err := json.Marshal(map[string]any{"controller": map[string]any{
		"extraVolumeTags": map[string]string{names.ClusterTagKey: args.ClusterName}}})
	if err != nil {
		return nil, nil, err
	}
	addon, err := newAddon(ctx, name, args, addonSpec{
		addon: "aws-ebs-csi-driver", pinned: args.Versions.EBSCSIDriver, configuration: string(configuration),
		// EKS creates the association with the add-on.
		associations: awseks.AddonPodIdentityAssociationArray{awseks.AddonPodIdentityAssociationArgs{
			RoleArn: role.Arn, ServiceAccount: pulumi.String(EBSCSIServiceAccount),
		}},
		// The controller needs nodes (the pools), its credentials (the agent
		// and the role's permissions) to turn ACTIVE.
		dependsOn: append([]pulumi.Resource{podIdentityAgent, attachment}, args.NodePools...),
	}, parent)
	if err != nil {
		return nil, nil, err
	}

	// An API object: it needs no node, so it waits only for the cluster.
	// Kubernetes 1.26 and later give a claim the newest of several default
	// classes, so this one wins over an EKS-created gp2 default.
	class, err := storagev1.NewStorageClass(ctx, name+"-"+DefaultStorageClass, &storagev1.StorageClassArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name:        pulumi.String(DefaultStorageClass),
			Annotations: pulumi.StringMap{"storageclass.kubernetes.io/is-default-class": pulumi.String("true")},
		},
		Provisioner: pulumi.String(cleanup.EBSCSIDriver),
		Parameters: pulumi.StringMap{"type": pulumi.String("gp3"), "encrypted": pulumi.String("true"),
			// The driver tags each volume of this class with it (its
			// StorageClass parameters, tagSpecification_<n>: docs/tagging.md
			// of kubernetes-sigs/aws-ebs-csi-driver): its own tags
			// (ebs.csi.aws.com/cluster=true, CSIVolumeName) are every
			// cluster's, so a volume left behind is found by this one.
			"tagSpecification_1": pulumi.String(names.ClusterTagKey + "=" + args.ClusterName)},
		// Create the volume in the zone the pod is scheduled to.
		VolumeBindingMode:    pulumi.String("WaitForFirstConsumer"),
		AllowVolumeExpansion: pulumi.Bool(true),
		ReclaimPolicy:        pulumi.String("Delete"),
	}, parent, pulumi.Provider(args.Provider))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the %s StorageClass: %w", DefaultStorageClass, err)
	}
	return addon, class, nil
}

// clusterArn is the cluster's ARN, known before the cluster exists.
func clusterArn(account awsaccount.Account, args *Args) string {
	return account.ClusterARN(args.Region, args.ClusterName)
}
