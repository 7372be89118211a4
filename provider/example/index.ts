// A TypeScript program that adds a nodeless EKS cluster: the same cluster
// the Go program at the repository's root creates, from the same settings.
// `pulumi package add` generated sdks/my-org-nodeless-eks (README: "Use it from
// TypeScript, Python or YAML"); provider/sdk_test.go type-checks this file
// against the SDK generated from provider/schema.json.
import * as nodeless from "@my-org/nodeless-eks";

const cluster = new nodeless.Cluster("platform", {
    vpcName: "platform-vpc",
    privateSubnetNamePattern: "platform-private-*",
    podSubnetNamePattern: "platform-pods-*",
    publicAccessCidrs: ["203.0.113.0/24"],
    nodePools: {
        general: { requirements: { arch: ["arm64"], capacityTypes: ["spot", "on-demand"] } },
    },
    tags: { owner: "platform-team" },
});

export const clusterName = cluster.clusterName;
export const kubeconfig = cluster.kubeconfig;
