// Package versions pins what the program deploys by default and the
// calendars it is checked against: the Karpenter release and the
// Kubernetes range it supports, the EKS support calendar, and the first
// Bottlerocket release of each Kubernetes minor. It imports only the
// standard library, so the program and the chart/CRD tests (a module of
// their own) can share it.
package versions

import (
	"strconv"
	"strings"
)

// Karpenter is the default karpenter and karpenter-crd chart version. It
// equals the github.com/aws/karpenter-provider-aws module version in
// test/go.mod, whose chart, CRDs and kubelet validation the tests
// validate against; a test keeps them equal.
const Karpenter = "1.15.2"

// Kubernetes minors that Karpenter 1.15 runs on (MinK8sVersion and
// MaxK8sVersion in its pkg/providers/version); a test ties them to the
// module. With no node groups, a controller that refuses to start leaves
// the cluster without any node.
const (
	MinKubernetesMinor = 26
	MaxKubernetesMinor = 37
)

// KarpenterLTS is the long-term-support release a stack may stay on with
// karpenterVersion (supported to July 2027: its release notes; the
// policy is SUPPORT.md of the v1.15.2 module), and LTSMaxKubernetesMinor
// the newest minor it runs on. The tests validate its CRDs and Kubernetes
// range from its module too, fetched into the module cache beside the
// pinned one; its chart is not rendered.
const (
	KarpenterLTS          = "1.14.3"
	LTSMaxKubernetesMinor = 36
)

// KarpenterMinor is the minor of a Karpenter version "1.N.P" (0 for a
// malformed one, which the config refuses on its own): the rules of 1.14
// apply to older versions too, those of 1.15 to newer ones.
func KarpenterMinor(version string) int {
	major, rest, _ := strings.Cut(version, ".")
	n, _, _ := strings.Cut(rest, ".")
	ma, majorErr := strconv.Atoi(major)
	mi, minorErr := strconv.Atoi(n)
	switch {
	case majorErr != nil || minorErr != nil:
		return 0
	case ma > 1:
		return 1 << 30
	}
	return mi
}
