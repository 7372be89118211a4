// Package versions pins what the program deploys by default and the
// calendars it is checked against: the Karpenter release and the
// Kubernetes range it supports, the EKS support calendar, and the first
// Bottlerocket release of each Kubernetes minor. It imports only the
// standard library, so the program and the chart/CRD tests (a module of
// their own) can share it.
package versions

// Karpenter is the default karpenter and karpenter-crd chart version. It
// equals the github.com/aws/karpenter-provider-aws module version in
// test/go.mod, whose chart and CRDs the tests validate against; a test
// keeps them equal.
const Karpenter = "1.14.3"

// Kubernetes minors that Karpenter 1.14 runs on (MinK8sVersion and
// MaxK8sVersion in its pkg/providers/version); a test ties them to the
// module. With no node groups, a controller that refuses to start leaves
// the cluster without any node.
const (
	MinKubernetesMinor = 26
	MaxKubernetesMinor = 36
)
