// Package versions pins the Karpenter release that the program deploys by
// default and the Kubernetes range that release supports. It imports
// nothing, so both the program and the chart/CRD tests can share it.
package versions

// Karpenter is the default karpenter and karpenter-crd chart version. It
// equals the github.com/aws/karpenter-provider-aws module version in go.mod,
// whose chart and CRDs the tests validate against; a test keeps them equal.
const Karpenter = "1.14.1"

// Kubernetes minors that Karpenter 1.14.1 runs on (MinK8sVersion and
// MaxK8sVersion in its pkg/providers/version); a test ties them to the
// module. With no node groups, a controller that refuses to start leaves
// the cluster without any node.
const (
	MinKubernetesMinor = 26
	MaxKubernetesMinor = 36
)
