package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"nodeless-eks/cluster"
	"nodeless-eks/internal/iamopts"
	"nodeless-eks/internal/names"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"
)

// key is one configuration key: the field its value goes into, and what a
// value must look like when it is not a string or a bool.
type key struct {
	// name is the project key, or "namespace:key" for another namespace.
	name string
	// into is a *string, *bool or *int, or what a JSON value decodes into
	// (unknown object keys refused).
	into any
	want string
}

// defaults is the configuration of a stack that sets no optional key.
func defaults(project, stack string) *Config {
	return &Config{
		ClusterName:                   names.DefaultClusterName(project, stack),
		KubernetesVersion:             defaultKubernetesVersion,
		KarpenterVersion:              versions.Karpenter,
		LoadBalancerControllerVersion: defaultLoadBalancerControllerVersion,
		ArgoCDVersion:                 defaultArgoCDVersion,
		// Copies: decoding into a shared default would overwrite it.
		PublicAccessCidrs:     append([]string(nil), defaultPublicAccessCidrs...),
		ClusterLogTypes:       append([]string(nil), defaultClusterLogTypes...),
		Tags:                  map[string]string{},
		AccessEntries:         map[string]cluster.AccessEntry{},
		IAM:                   iamopts.Options{Path: "/"},
		EndpointPublicAccess:  true,
		EndpointPrivateAccess: true,
		CoreDNSReplicas:       defaultCoreDNSReplicas,
		LogRetentionDays:      defaultLogRetentionDays,
		MetricsServer:         true,
		NodeRepair:            true,
		// A security review's asks of a VPC (Security Hub EC2.6 and EC2.2).
		VpcFlowLogs:                  true,
		VpcS3Endpoint:                true,
		VpcEmptyDefaultSecurityGroup: true,
	}
}

// keys is the table of every key the program reads, in the order their
// problems are reported. pools and classes receive the node pools and
// classes as written, before spec.Resolve applies their defaults.
func (c *Config) keys(pools *map[string]spec.Pool, classes *map[string]spec.NodeClass) []key {
	return []key{
		{name: "clusterName", into: &c.ClusterName},
		{name: "kubernetesVersion", into: &c.KubernetesVersion},
		{name: "aws:region", into: &c.Region},
		{name: "vpcName", into: &c.VpcName},
		{name: "privateSubnetNamePattern", into: &c.PrivateSubnetNamePattern},
		{name: "podSubnetNamePattern", into: &c.PodSubnetNamePattern},
		{name: "natGateways", into: &c.NatGateways},
		{name: "vpcCidrBlock", into: &c.VpcCidrBlock},
		{name: "vpcFlowLogs", into: &c.VpcFlowLogs},
		{name: "vpcS3Endpoint", into: &c.VpcS3Endpoint},
		{name: "vpcEmptyDefaultSecurityGroup", into: &c.VpcEmptyDefaultSecurityGroup},
		{name: "karpenterVersion", into: &c.KarpenterVersion},
		{name: "loadBalancerControllerVersion", into: &c.LoadBalancerControllerVersion},
		{name: "argocdVersion", into: &c.ArgoCDVersion},
		{name: "kmsKeyArn", into: &c.KmsKeyArn},
		{name: "supportType", into: &c.SupportType},
		{name: "iamPath", into: &c.IAM.Path},
		{name: "iamPermissionsBoundary", into: &c.IAM.PermissionsBoundary},
		{name: "endpointPublicAccess", into: &c.EndpointPublicAccess},
		{name: "endpointPrivateAccess", into: &c.EndpointPrivateAccess},
		{name: "publicAccessCidrs", into: &c.PublicAccessCidrs, want: "a list of CIDR strings"},
		{name: "addonVersions", into: &c.AddonVersions, want: "an object with the keys vpcCni, kubeProxy, coredns, podIdentityAgent, nodeMonitoringAgent, ebsCsiDriver, metricsServer"},
		{name: "tags", into: &c.Tags, want: "an object of string values"},
		{name: "production", into: &c.Production},
		{name: "allowExtendedSupport", into: &c.AllowExtendedSupport},
		{name: "argocd", into: &c.ArgoCD},
		{name: "corednsReplicas", into: &c.CoreDNSReplicas, want: "a whole number"},
		{name: "accessEntries", into: &c.AccessEntries, want: "an object of entries by name, each {principalArn, policy, namespaces}"},
		{name: "clusterLogTypes", into: &c.ClusterLogTypes, want: "a list of log types"},
		{name: "logRetentionDays", into: &c.LogRetentionDays, want: "a whole number of days"},
		{name: "metricsServer", into: &c.MetricsServer},
		{name: "nodeRepair", into: &c.NodeRepair},
		{name: "allowPublicEndpointFromInternet", into: &c.AllowPublicEndpointFromInternet},
		{name: "controllerResources", into: &c.ControllerResources, want: `an object {"cpu": "250m", "memory": "768Mi"}`},
		{name: "nodePools", into: pools, want: "an object of pools by name (see Pulumi.yaml)"},
		{name: "nodeClasses", into: classes, want: "an object of node classes by name (see Pulumi.yaml)"},
	}
}

// readKeys reads every key that is set into its field, leaving the default
// where a key is unset or empty, and returns one error per value that does
// not parse, so that every problem is reported at once.
func readKeys(get func(name string) string, keys []key) []error {
	var errs []error
	for _, k := range keys {
		raw := get(k.name)
		if raw == "" {
			continue
		}
		if err := k.read(raw); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (k key) read(raw string) error {
	switch into := k.into.(type) {
	case *string:
		*into = raw
	case *bool:
		b, err := strconv.ParseBool(raw)
		*into = b
		if err != nil {
			return fmt.Errorf("%s: %q: want true or false", k.name, raw)
		}
	case *int:
		n, err := strconv.Atoi(raw)
		*into = n
		if err != nil {
			return fmt.Errorf("%s %q: want %s", k.name, raw, k.want)
		}
	case *map[string]string:
		// Decoded by hand, so that a value of another type is named by its
		// key in words of this program's own, whatever Go's encoding/json
		// says of it (its wording changes between releases).
		var values map[string]any
		if err := decodeStrict(raw, &values); err != nil {
			return fmt.Errorf("%s: want %s: %w", k.name, k.want, err)
		}
		*into = map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(values)) {
			v, ok := values[name].(string)
			if !ok {
				return fmt.Errorf("%s.%s: want a string, not %s", k.name, name, strings.TrimSpace(mustJSON(values[name])))
			}
			(*into)[name] = v
		}
	default:
		if err := decodeStrict(raw, into); err != nil {
			return fmt.Errorf("%s: want %s: %w", k.name, k.want, err)
		}
	}
	return nil
}

// decodeStrict decodes a JSON config value and rejects unknown object keys,
// so a typo in an object value fails instead of silently meaning "default".
func decodeStrict(raw string, out any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the value")
	}
	return nil
}

// mustJSON is v as JSON (a decoded JSON value always encodes).
func mustJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
