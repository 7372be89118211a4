package spec

import (
	"errors"
	"fmt"
	"strings"

	"nodeless-eks/versions"
)

// Architectures Karpenter resolves AMIs for, by the kubernetes.io/arch
// value a pool requires and the name SSM parameters use.
var amiArchitectures = map[string]string{"amd64": "x86_64", "arm64": "arm64"}

// amiVersion is the version of a pinned alias ("v1.66.0" of
// "bottlerocket@v1.66.0"), or "" for "@latest".
func amiVersion(alias string) string {
	_, v, _ := strings.Cut(alias, "@")
	if v == "latest" {
		return ""
	}
	return v
}

// AMIParameter is the SSM parameter that Karpenter reads for the standard
// variant of a pinned alias on Kubernetes 1.minor and architecture arch
// (amd64 or arm64), or "" for "@latest" and unknown families
// (pkg/providers/amifamily/bottlerocket.go and al2023.go of
// karpenter-provider-aws v1.14.3 and v1.15.2, the same paths: Bottlerocket's path drops a leading "v",
// AL2023's keeps the version as written). When no parameter of an alias
// resolves, the EC2NodeClass never turns Ready.
func AMIParameter(alias string, minor int, arch string) string {
	version, ssmArch := amiVersion(alias), amiArchitectures[arch]
	if version == "" || ssmArch == "" {
		return ""
	}
	switch Family(alias) {
	case "bottlerocket":
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-1.%d/%s/%s/image_id", minor, ssmArch, strings.TrimPrefix(version, "v"))
	case "al2023":
		return fmt.Sprintf("/aws/service/eks/optimized-ami/1.%d/amazon-linux-2023/%s/standard/amazon-eks-node-al2023-%s-standard-1.%d-%s/image_id",
			minor, ssmArch, ssmArch, minor, version)
	}
	return ""
}

// Architectures are the kubernetes.io/arch values of the pools that use
// class, sorted; a class no pool uses, or a pool without an arch
// requirement, counts as both.
func Architectures(class string, pools map[string]Pool) []string {
	seen := map[string]bool{}
	used := false
	for _, name := range SortedNames(pools) {
		p := pools[name]
		if p.NodeClass != class {
			continue
		}
		used = true
		allowed := archs // a pool without an arch requirement allows both
		if p.Requirements != nil && len(p.Requirements.Arch) > 0 {
			allowed = p.Requirements.Arch
		}
		for _, a := range allowed {
			seen[a] = true
		}
	}
	if !used {
		for _, a := range archs {
			seen[a] = true
		}
	}
	return SortedNames(seen)
}

// CheckAMIPins rejects a pinned Bottlerocket alias older than the first
// release that ships Kubernetes 1.minor (versions.FirstBottlerocket): its
// AMI was never published, so the node class would never turn Ready and
// no node would start. Aliases that do not parse are reported by Validate.
func CheckAMIPins(classes map[string]NodeClass, minor int) error {
	var errs []error
	for _, name := range SortedNames(classes) {
		alias := classes[name].AMIAlias
		version := amiVersion(alias)
		if Family(alias) != "bottlerocket" || version == "" || !aliasRe.MatchString(alias) {
			continue
		}
		first, known := versions.FirstBottlerocket[minor]
		order, err := versions.Compare(strings.TrimPrefix(version, "v"), first)
		if !known || err != nil || order >= 0 {
			continue
		}
		errs = append(errs, fmt.Errorf("nodeClasses.%s.amiAlias %q: Bottlerocket ships Kubernetes 1.%d from v%s on, so %s was never "+
			"published for it; the node class would never turn Ready and no node would start. Pin v%s or later, e.g. %q",
			name, alias, minor, first, AMIParameter(alias, minor, "amd64"), first, "bottlerocket@v"+versions.SuggestedBottlerocket))
	}
	return errors.Join(errs...)
}
