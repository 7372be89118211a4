// Package names owns the rules for the names the program gives AWS
// resources: how long a cluster name may be, the length limits of each
// resource type, and the default cluster name of a stack. Config
// validation, the components and the tests read them from here.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// AutonameSuffixLength is what pulumi-aws appends to a logical name when it
// names a resource: '-' and 7 random characters. It refuses a name whose
// logical name and suffix exceed the type's limit ("name '<logical>-' plus
// 7 random chars is longer than maximum length 64";
// pulumi-terraform-bridge pkg/tfbridge/info/autonaming.go).
const AutonameSuffixLength = 8

// MaxClusterNameLength is the longest clusterName the program accepts.
// Every child is named "<clusterName>-<role>", so the cluster name bounds
// every autoname; at this length the tightest fits are the interruption
// rules ("<clusterName>-karpenter-state-change-xxxxxxx", 63 of 64) and the
// Fargate pod execution role (62 of 64). A test registers a stack with a
// name this long and checks every name against AWS's limits
// (testkit/fakeaws NameLimits).
const MaxClusterNameLength = 32

// Autoname is the physical name pulumi-aws gives a resource named logical:
// the logical name with the suffix, which the check counts as x.
func Autoname(logical string) string {
	return logical + "-" + strings.Repeat("x", AutonameSuffixLength-1)
}

// DefaultClusterName is "<project>-<stack>", so that review stacks and
// copies of a stack file do not collide: characters EKS does not allow
// become '-', and a name longer than MaxClusterNameLength is cut and given
// a hash of the whole, so that two long stack names stay apart.
func DefaultClusterName(project, stack string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, project+"-"+stack)
	if len(name) <= MaxClusterNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:MaxClusterNameLength-9] + "-" + hex.EncodeToString(sum[:4])
}

// StackLabelKey marks the NodePools and EC2NodeClasses that a stack
// creates, with StackLabel as its value; the destroy cleanup deletes only
// pools and classes without it.
const StackLabelKey = "nodeless-eks/stack"

// StackLabel is the label value that names a stack: "<project>.<stack>",
// with characters a label value may not hold turned into '-', cut and given
// a hash when longer than a label value's 63 characters.
func StackLabel(project, stack string) string {
	value := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, project+"."+stack)
	if len(value) > 63 {
		sum := sha256.Sum256([]byte(value))
		value = value[:63-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return strings.Trim(value, "-_.")
}

// ClusterTagKey is the tag the program puts on its KMS key, naming its
// cluster: deploy/'s deployer policy lets a run touch only the keys tagged
// for its own clusters.
const ClusterTagKey = "nodeless-eks/cluster"

// KeptTagKey marks an EBS volume the destroy cleanup kept on purpose
// (reclaim policy Retain, or made by hand), its value the
// PersistentVolume's name: the leftover audit, in another process once
// the cluster is gone, passes it.
const KeptTagKey = "nodeless-eks/kept"

// DiscoveryTagKey is Karpenter's discovery tag. The program puts it, with
// the cluster name, on the node security group it creates (for people and
// tools; node classes select by ID), and deploy/'s policy lets a run change
// only the security groups that carry it for its own clusters.
const DiscoveryTagKey = "karpenter.sh/discovery"

// StackSelector is the label selector of what carries the stack's label.
func StackSelector(label string) string {
	return StackLabelKey + "=" + label
}
