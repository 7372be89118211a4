package main

import (
	"encoding/json"
	"fmt"
)

// The schema as the provider serves it is infer's, made to tell the truth
// in two ways (truthful): every input of the Cluster and every field of
// its input types is plain, since Construct decides what to register from
// their values and refuses an output at any depth (unknownFields); and
// every output and nested field carries a description, the words of
// Pulumi.yaml's for the key it belongs to. A TypeScript consumer who passes
// `role.arn` where a plain string is due gets a compile error, not a
// refusal at preview (TestGeneratedSDKs).

// outputDocs describe the Cluster's outputs: the Go program's stack
// outputs (nodeless.Outputs), by the same names.
var outputDocs = map[string]string{
	"region":                        "The AWS region of the cluster (aws:region).",
	"clusterName":                   "The EKS cluster's name (clusterName, or \"<project>-<stack>\").",
	"clusterEndpoint":               "The Kubernetes API endpoint.",
	"kubeconfig":                    "A kubeconfig for the cluster that authenticates with `aws eks get-token` as the caller's AWS identity.",
	"oidcProviderArn":               "The ARN of the cluster's IAM OIDC provider (IRSA).",
	"oidcIssuer":                    "The cluster's OIDC issuer, without https://.",
	"clusterSecurityGroupId":        "The security group EKS created for the cluster.",
	"nodeSecurityGroupId":           "The security group of the nodes Karpenter launches.",
	"secretsKeyArn":                 "The KMS key that encrypts the cluster's Secrets (kmsKeyArn, or the one the Cluster created).",
	"logGroupName":                  "The control-plane log group, /aws/eks/<clusterName>/cluster.",
	"vpcId":                         "The VPC of the cluster (vpcName's, or the one the Cluster made).",
	"privateSubnetIds":              "The private subnets of the control plane, the Fargate profile and the nodes.",
	"podSubnetIds":                  "The pod subnets (secondary CIDR) by availability zone.",
	"controllerRoleArn":             "The Karpenter controller's IAM role (IRSA).",
	"nodeRoleName":                  "The IAM role of the nodes Karpenter launches.",
	"nodeRoleArn":                   "The ARN of the nodes' IAM role.",
	"interruptionQueueName":         "The SQS queue of Spot interruption and instance events Karpenter reads.",
	"karpenterVersion":              "The Karpenter chart version installed (karpenterVersion).",
	"nodePoolNames":                 "The Karpenter NodePools the stack created (nodePools).",
	"coreDnsVersion":                "The CoreDNS add-on version installed.",
	"loadBalancerControllerRoleArn": "The AWS Load Balancer Controller's IAM role (Pod Identity).",
	"argoCdNamespace":               "The namespace ArgoCD runs in, \"\" without argocd.",
}

// typeDocs describe the fields of the Cluster's input types, by type.
var typeDocs = map[string]map[string]string{
	"AccessEntry": {
		"principalArn": "The IAM role or user that may use the cluster (a role ARN may carry a path; an STS session ARN is rejected).",
		"policy":       "cluster-admin, admin, edit or view: the AmazonEKS*Policy access policy it gets.",
		"namespaces":   "Limits the policy to these namespaces (not for cluster-admin).",
	},
	"AddonVersions": {
		"vpcCni": "The vpc-cni add-on version.", "kubeProxy": "The kube-proxy add-on version.", "coredns": "The coredns add-on version.",
		"podIdentityAgent":    "The eks-pod-identity-agent add-on version.",
		"nodeMonitoringAgent": "The eks-node-monitoring-agent add-on version (with nodeRepair).",
		"ebsCsiDriver":        "The aws-ebs-csi-driver add-on version.", "metricsServer": "The metrics-server add-on version (with metricsServer).",
	},
	"ControllerResources": {
		"cpu":    "CPU of each Karpenter controller replica, request equal to limit, e.g. \"0.5\".",
		"memory": "Memory of each replica, e.g. \"1792Mi\": with Fargate's 256 MiB overhead, a size Fargate offers for that CPU.",
	},
	"NodeClass": {
		"amiAlias":   "The AMI alias, default bottlerocket@latest; pin e.g. bottlerocket@v1.66.0 for production.",
		"volumeSize": "The root volume's size, default 20Gi.", "volumeType": "The root volume's type, default gp3.",
		"tags":    "Tags of the instances and volumes Karpenter launches for this class.",
		"kubelet": "The nodes' kubelet settings (Karpenter's spec.kubelet); none by default.",
	},
	"Kubelet": {
		"maxPods":                     "The most pods a node runs.",
		"podsPerCore":                 "The most pods per vCPU (al2023 only: Karpenter does not pass it to Bottlerocket).",
		"systemReserved":              "cpu, memory, ephemeral-storage and pid reserved for the OS.",
		"kubeReserved":                "cpu, memory, ephemeral-storage and pid reserved for Kubernetes.",
		"evictionHard":                "Hard eviction thresholds by signal (e.g. memory.available: 5%).",
		"evictionSoft":                "Soft eviction thresholds by signal, each with its grace period.",
		"evictionSoftGracePeriod":     "The grace period of each soft eviction signal, e.g. 1m30s.",
		"evictionMaxPodGracePeriod":   "The longest grace period, in seconds, a pod gets on a soft eviction.",
		"imageGCHighThresholdPercent": "The disk use (0-100) at which image garbage collection starts; above the low one.",
		"imageGCLowThresholdPercent":  "The disk use (0-100) image garbage collection goes down to.",
		"cpuCFSQuota":                 "Whether CPU limits are enforced with CFS quota.",
	},
	"Pool": {
		"nodeClass":    "The node class, default \"default\".",
		"requirements": "What instances the pool may launch; unset fields take the general pool's defaults.",
		"limits":       "The pool's total cpu and memory, default cpu 50 / memory 128Gi.",
		"disruption":   "When Karpenter may replace the pool's nodes.",
		"expireAfter":  "How long a node lives before it is replaced, default 720h.",
		"terminationGracePeriod": "The longest a node's drain may take, default 1h; it bounds every drain, pulumi destroy's " +
			"included.",
		"weight": "Karpenter's preference among pools (higher first).",
		"labels": "Labels of the pool's nodes.",
		"taints": "Taints of the pool's nodes.",
	},
	"Requirements": {
		"arch":                  "CPU architectures: amd64, arm64 (default both).",
		"capacityTypes":         "spot, on-demand (default both).",
		"categories":            "Instance categories, default c, m, r.",
		"generationGreaterThan": "Instance generations above this, default 4.",
		"cpus":                  "Exact vCPU counts allowed.",
		"cpuGreaterThan":        "vCPUs above this, default 1.",
		"memoryMiBGreaterThan":  "Memory above this many MiB, default 2048.",
		"hypervisors":           "Hypervisors allowed, e.g. nitro.",
		"extra":                 "More requirements, as Karpenter's NodePool spec writes them.",
	},
	"Requirement": {
		"key": "A well-known or node label.", "operator": "In, NotIn, Exists, DoesNotExist, Gt or Lt.",
		"values": "The values the operator compares with.", "minValues": "The fewest distinct values Karpenter must consider.",
	},
	"Disruption": {
		"consolidationPolicy": "WhenEmptyOrUnderutilized (the default) or WhenEmpty.",
		"consolidateAfter":    "How long a node must be consolidatable before it is, default 1m.",
		"budgets":             "How many nodes may be disrupted at once, default 10%.",
	},
	"Budget": {
		"nodes": "A count or percentage of nodes.", "schedule": "A cron schedule during which the budget holds.",
		"duration": "How long the budget holds from each scheduled start.", "reasons": "Drifted, Underutilized or Empty.",
	},
	"Taint": {"key": "The taint's key.", "value": "The taint's value.", "effect": "NoSchedule, PreferNoSchedule or NoExecute."},
}

// truthful rewrites a schema as the package comment says. A field without
// a description is an error, so that a new one cannot go undescribed.
func truthful(raw string) (string, error) {
	var spec map[string]any
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return "", err
	}
	cluster, _ := spec["resources"].(map[string]any)[Name+":index:Cluster"].(map[string]any)
	if cluster == nil {
		return "", fmt.Errorf("the schema has no %s:index:Cluster", Name)
	}
	for _, prop := range cluster["inputProperties"].(map[string]any) {
		makePlain(prop)
	}
	for name, prop := range cluster["properties"].(map[string]any) {
		doc, ok := outputDocs[name]
		if !ok {
			return "", fmt.Errorf("the Cluster's output %s has no description (outputDocs)", name)
		}
		prop.(map[string]any)["description"] = doc
	}
	for token, t := range spec["types"].(map[string]any) {
		typ := token[len(Name+":index:"):]
		docs, ok := typeDocs[typ]
		if !ok {
			return "", fmt.Errorf("the type %s has no descriptions (typeDocs)", token)
		}
		for name, prop := range t.(map[string]any)["properties"].(map[string]any) {
			doc, ok := docs[name]
			if !ok {
				return "", fmt.Errorf("%s.%s has no description (typeDocs)", typ, name)
			}
			prop.(map[string]any)["description"] = doc
			makePlain(prop)
		}
	}
	out, err := json.Marshal(spec)
	return string(out), err
}

// makePlain marks a property, and the items or values it holds, plain.
func makePlain(prop any) {
	p, ok := prop.(map[string]any)
	if !ok {
		return
	}
	p["plain"] = true
	makePlain(p["items"])
	makePlain(p["additionalProperties"])
}
