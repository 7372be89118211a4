// Package versions pins what the program deploys by default and the
// calendars it is checked against: the Karpenter release and the
// Kubernetes range it supports, the EKS support calendar, and the first
// Bottlerocket release of each Kubernetes minor. It imports only the
// standard library, so the program and the chart/CRD tests (a module of
// their own) can share it.
package versions

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
