package versions

// FirstBottlerocket is, for each Kubernetes minor, the first Bottlerocket
// release that ships its aws-k8s-1.NN variant: bottlerocket-os/bottlerocket
// CHANGELOG.md, whose entries cite the pull requests that added them (1.30
// #3859 and #3936, 1.31 #4142, 1.33 #4507 and #4513, 1.34 #4631, 1.35
// #4735, 1.36 #4827) and, where the entry names none found here, the
// variant's tracking issue (1.32 #4318, 1.37 #4915).
// Karpenter resolves bottlerocket@v<X.Y.Z> to the SSM parameter
// /aws/service/bottlerocket/aws-k8s-1.NN/<arch>/<X.Y.Z>/image_id, which an
// older release never published: an EC2NodeClass pinned to it never turns
// Ready. Bottlerocket also stops building a variant when EKS ends its
// extended support (aws-k8s-1.30 is absent from v1.64.0 on, per the
// bottlerocket-os/bottlerocket release notes), which only
// the SSM check at preview can see.
var FirstBottlerocket = map[int]string{
	30: "1.20.0",
	31: "1.22.0",
	32: "1.30.0",
	33: "1.39.0",
	34: "1.47.0",
	35: "1.53.0",
	36: "1.61.0",
	37: "1.66.0",
}

// SuggestedBottlerocket is the Bottlerocket release that the docs and error
// messages suggest pinning on production stacks: the newest release seen
// (v1.66.0, validated 2026-09-22; its CHANGELOG entry came with
// bottlerocket-os/bottlerocket#4946). It is
// newer than the first release of every minor EKS supports today; whether
// it still ships an old minor's variant, the SSM check at preview tells.
const SuggestedBottlerocket = "1.66.0"
