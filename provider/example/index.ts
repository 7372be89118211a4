// A TypeScript program that adds a nodeless EKS cluster: the same cluster
// the Go program at the repository's root creates, from the same settings.
// `pulumi package add` generated sdks/my-org-nodeless-eks (README: "Use it from
// TypeScript, Python or YAML"); provider/sdk_test.go type-checks this file
// against the SDK generated from provider/schema.json.
import * as nodeless from "@my-org/nodeless-eks";

// It names no VPC, so the cluster makes its own; set vpcName and the two
// subnet patterns to use an existing one.
const cluster = new nodeless.Cluster("platform", {
    clusterName: "platform",
    nodePools: {
        general: { requirements: { arch: ["arm64"], capacityTypes: ["spot", "on-demand"] } },
    },
    tags: { owner: "platform-team" },
});

export const clusterName = cluster.clusterName;
export const kubeconfig = cluster.kubeconfig;
