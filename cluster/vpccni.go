package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/eksaddon"
	"nodeless-eks/internal/names"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// newVpcCni manages the vpc-cni add-on with custom networking: pods take
// their addresses from the pod subnets (secondary CIDR) through one ENIConfig
// per AZ, and prefix delegation packs /28 prefixes onto each ENI. It waits
// for the cluster and the node security group only, so it is ACTIVE long
// before Karpenter launches the first EC2 node.
func newVpcCni(ctx *pulumi.Context, name string, args *Args, clusterName, nodeSG pulumi.StringOutput,
	parent pulumi.ResourceOrInvokeOption) (*awseks.Addon, error) {
	version, err := eksaddon.Version(ctx, "vpc-cni", args.VpcCniVersion, args.KubernetesVersion, parent)
	if err != nil {
		return nil, err
	}
	zones := slices.Sorted(maps.Keys(args.PodSubnetIDsByAZ))
	inputs := []any{nodeSG}
	for _, az := range zones {
		inputs = append(inputs, args.PodSubnetIDsByAZ[az])
	}
	configuration := pulumi.All(inputs...).ApplyT(func(v []any) (string, error) {
		pods := map[string]string{}
		for i, az := range zones {
			pods[az] = v[i+1].(string)
		}
		return VpcCniConfiguration(args.ClusterName, args.Region, pods, []string{v[0].(string)})
	}).(pulumi.StringOutput)
	addon, err := awseks.NewAddon(ctx, name+"-vpc-cni", &awseks.AddonArgs{
		ClusterName:              clusterName,
		AddonName:                pulumi.String("vpc-cni"),
		AddonVersion:             pulumi.String(version),
		ConfigurationValues:      configuration,
		ResolveConflictsOnCreate: pulumi.String(eksaddon.ResolveConflicts),
		ResolveConflictsOnUpdate: pulumi.String(eksaddon.ResolveConflicts),
		Tags:                     pulumi.ToStringMap(args.Tags),
	}, parent,
		// ACTIVE without any node; the bootstrap knows sooner than pulumi-aws's
		// default 20 minutes (see addons.addonTimeouts).
		pulumi.Timeouts(&pulumi.CustomTimeouts{Create: bounds.DaemonSetAddon.String(), Update: bounds.DaemonSetAddon.String()}))
	if err != nil {
		return nil, fmt.Errorf("creating vpc-cni add-on: %w", err)
	}
	return addon, nil
}

// VpcCniConfiguration is the vpc-cni add-on's configuration values (JSON,
// the schema of `aws eks describe-addon-configuration --addon-name vpc-cni`).
// The add-on creates one ENIConfig per AZ, named after the AZ, and nodes
// pick theirs by their topology.kubernetes.io/zone label. Every interface
// the CNI makes carries the cluster's tag (ADDITIONAL_ENI_TAGS, a JSON map:
// amazon-vpc-cni-k8s README), by which the destroy's sweep knows a
// detached one is this cluster's (internal/cleanup, network.go). The key
// is in a published dump of the add-on's schema (Env, whose
// additionalProperties is false); not checked against the pinned version.
func VpcCniConfiguration(clusterName, region string, podSubnetIDsByAZ map[string]string, securityGroupIDs []string) (string, error) {
	subnets := make(map[string]any, len(podSubnetIDsByAZ))
	for az, id := range podSubnetIDsByAZ {
		subnets[az] = map[string]any{"id": id, "securityGroups": securityGroupIDs}
	}
	eniTags, err := json.Marshal(map[string]string{names.ClusterTagKey: clusterName})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]any{
		"env": map[string]string{
			"ADDITIONAL_ENI_TAGS":                string(eniTags),
			"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
			"ENI_CONFIG_LABEL_DEF":               "topology.kubernetes.io/zone",
			"ENABLE_PREFIX_DELEGATION":           "true",
			"WARM_PREFIX_TARGET":                 "1",
		},
		"eniConfig": map[string]any{
			"create":  true,
			"region":  region,
			"subnets": subnets,
		},
	})
	if err != nil {
		return "", fmt.Errorf("encoding vpc-cni configuration: %w", err)
	}
	return string(b), nil
}
