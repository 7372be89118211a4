package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/names"
	"nodeless-eks/karpenter"
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/badpools"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/stackfile"
	"nodeless-eks/versions"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testToday is the day the tests read the EKS support calendar against, so
// that they do not change as real days pass.
var testToday = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

const testProject = "nodeless-eks"

// loaded is the outcome of Load under the mock engine.
type loaded struct {
	cfg *Config
	rec *mock.Recorder
	err error
}

// load runs Load with cfg as the dev stack's configuration against the
// fake account, whose cluster already runs running ("" for none).
func load(t *testing.T, cfg map[string]string, running string) loaded {
	t.Helper()
	return loadIn(t, cfg, &fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"], RunningVersion: running})
}

func loadIn(t *testing.T, cfg map[string]string, acct *fakeaws.Account) loaded {
	t.Helper()
	var got loaded
	got.rec = acct.Recorder(testProject, "dev")
	got.err = got.rec.Run(t, cfg, false, func(ctx *pulumi.Context) error {
		var err error
		got.cfg, err = Load(ctx, testToday)
		return err
	}).Err
	return got
}

// stackConfig reads one of the project's stack files the way `pulumi up`
// hands it to the program (testkit/stackfile).
func stackConfig(t *testing.T, stackFile string) map[string]string {
	t.Helper()
	cfg, err := stackfile.Load("../Pulumi.yaml", "../"+stackFile)
	require.NoError(t, err, "the Pulumi CLI would refuse %s", stackFile)
	return cfg
}

// declaredKeys lists the project keys that Pulumi.yaml declares.
func declaredKeys(proj *workspace.Project) []string {
	return slices.Sorted(maps.Keys(proj.Config))
}

// encodeConfig renders values as the engine passes them to a program.
func encodeConfig(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	out, err := stackfile.Encode(values)
	require.NoError(t, err)
	return out
}

// TestTheKeyTableIsPulumiYaml: the program reads exactly the keys the
// project declares, each once, and aws:region.
func TestTheKeyTableIsPulumiYaml(t *testing.T) {
	var read []string
	for _, k := range defaults(testProject, "dev").keys(new(map[string]spec.Pool), new(map[string]spec.NodeClass)) {
		if k.name == "aws:region" {
			continue
		}
		assert.NotContains(t, read, k.name, "read twice")
		read = append(read, k.name)
	}
	assert.ElementsMatch(t, declaredKeys(loadProject(t)), read)
}

// loadProject loads Pulumi.yaml with the CLI's own loader.
func loadProject(t *testing.T) *workspace.Project {
	t.Helper()
	proj, err := workspace.LoadProject("../Pulumi.yaml")
	require.NoError(t, err, "Pulumi.yaml must pass Pulumi's project schema")
	return proj
}

func TestConfigRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		key  string // the project key under test ("" for aws:region)
		set  map[string]string
		want string // the error must contain this
	}{
		{"cluster name with a dot", "clusterName", map[string]string{"clusterName": "eks.demo"}, `clusterName "eks.demo": want 1-32 letters`},
		{"cluster name starting with a dash", "clusterName", map[string]string{"clusterName": "-eks"}, `clusterName "-eks"`},
		{"cluster name too long for AWS's name limits", "clusterName", map[string]string{"clusterName": strings.Repeat("c", 33)}, `clusterName "` + strings.Repeat("c", 33) + `": 33 characters, at most 32: every AWS name the stack creates starts with it`},
		{"karpenter version newer than the validated one", "karpenterVersion", map[string]string{"karpenterVersion": "1.16.0"}, `karpenterVersion "1.16.0": newer than 1.15.2, whose controller policy and CRDs this program is validated against`},
		{"karpenter version with a v", "karpenterVersion", map[string]string{"karpenterVersion": "v1.15.2"}, `karpenterVersion "v1.15.2": want a chart version such as "1.15.2"`},
		{"kubernetes version with a patch", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.34.2"}, `kubernetesVersion "1.34.2": want "1.NN"`},
		{"kubernetes version with a v", "kubernetesVersion", map[string]string{"kubernetesVersion": "v1.34"}, `kubernetesVersion "v1.34"`},
		{"kubernetes version below karpenter's range", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.25"}, `kubernetesVersion "1.25": karpenterVersion "1.15.2" supports 1.26-1.37`},
		{"kubernetes version above karpenter's range", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.38"}, `kubernetesVersion "1.38": karpenterVersion "1.15.2" supports 1.26-1.37`},
		{"kubernetes version above every karpenter's range, on the LTS one", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.38", "karpenterVersion": "1.14.3"},
			`kubernetesVersion "1.38": karpenterVersion "1.14.3" supports 1.26-1.36 (1.14's range, which older versions are held to)`},
		{"kubernetes version above the LTS karpenter's range", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.37", "karpenterVersion": "1.14.3"},
			`kubernetesVersion "1.37": karpenterVersion "1.14.3" supports 1.26-1.36 (1.14's range, which older versions are held to); Karpenter 1.15.2 supports up to 1.37: move karpenterVersion first, in an ` + "`up`" + ` of its own`},
		{"kubernetes version Karpenter runs and EKS has no row of", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.37"},
			`kubernetesVersion "1.37": not in the EKS support calendar this program knows (1.29-1.36, versions/kubernetes.go): EKS ended its support before that, or has not released it, or its dates could not be cited yet`},
		{"kubernetes version EKS no longer knows", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.28"}, `kubernetesVersion "1.28": not in the EKS support calendar this program knows (1.29-1.36`},
		{"a new cluster on a minor past extended support", "kubernetesVersion", map[string]string{"kubernetesVersion": "1.31"}, `kubernetesVersion "1.31": EKS ended extended support on 2026-11-26 and creates no new cluster of it; start at "1.36"`},
		{"STANDARD on a minor past standard support", "supportType", map[string]string{"kubernetesVersion": "1.33"}, `supportType "STANDARD": kubernetesVersion "1.33" left standard support on 2026-07-29, and EKS accepts STANDARD only for a minor in standard support; upgrade to "1.34"`},
		{"support type EKS does not know", "supportType", map[string]string{"supportType": "standard"}, `supportType "standard": want "STANDARD" or "EXTENDED"`},
		{"production without a support type", "supportType", map[string]string{"production": "true", "corednsReplicas": "2", "publicAccessCidrs": `["81.2.69.0/24"]`, "nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.66.0"}}`}, `supportType: production stacks choose the cluster's upgrade policy: "STANDARD"`},
		{"production past standard support without acknowledgement", "allowExtendedSupport", map[string]string{"production": "true", "supportType": "EXTENDED", "kubernetesVersion": "1.33", "corednsReplicas": "2", "publicAccessCidrs": `["81.2.69.0/24"]`, "nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.66.0"}}`}, `kubernetesVersion "1.33": standard support ended on 2026-07-29, and a production cluster in extended support costs $0.60 an hour instead of $0.10 ($438 a month instead of $73 a month); upgrade to "1.34"`},
		{"extended support acknowledgement not a bool", "allowExtendedSupport", map[string]string{"allowExtendedSupport": "sure"}, `allowExtendedSupport: "sure": want true or false`},
		{"an AMI pin older than the minor's first bottlerocket", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.47.0"}}`}, `nodeClasses.default.amiAlias "bottlerocket@v1.47.0": Bottlerocket ships Kubernetes 1.36 from v1.61.0 on, so /aws/service/bottlerocket/aws-k8s-1.36/x86_64/1.47.0/image_id was never published`},
		{"an AMI pin SSM does not have", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.62.0"}}`}, `nodeClasses.default.amiAlias "bottlerocket@v1.62.0": no amd64 image for Kubernetes 1.36: the SSM parameter /aws/service/bottlerocket/aws-k8s-1.36/x86_64/1.62.0/image_id that Karpenter reads does not exist in eu-west-1`},
		{"an AMI pin without an image for an allowed architecture", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.64.0"}}`}, `nodeClasses.default.amiAlias "bottlerocket@v1.64.0": no arm64 image for Kubernetes 1.36: the SSM parameter /aws/service/bottlerocket/aws-k8s-1.36/arm64/1.64.0/image_id`},
		{"an al2023 pin without its v", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"amiAlias":"al2023@20261120"}}`}, `nodeClasses.default.amiAlias "al2023@20261120": want bottlerocket@latest, bottlerocket@vX.Y.Z`},
		{"a blank vpc name", "vpcName", map[string]string{"vpcName": " "}, `vpcName " ": want the Name tag of an existing VPC, or leave it unset`},
		{"empty private subnet pattern", "privateSubnetNamePattern", map[string]string{"privateSubnetNamePattern": " "}, "privateSubnetNamePattern: required with vpcName"},
		{"empty pod subnet pattern", "podSubnetNamePattern", map[string]string{"podSubnetNamePattern": ""}, "podSubnetNamePattern: required with vpcName"},
		{"a pattern without a vpc name", "privateSubnetNamePattern", map[string]string{"vpcName": "", "podSubnetNamePattern": ""}, `privateSubnetNamePattern "eks-demo-vpc-private-*": set only with vpcName; without vpcName the stack makes its VPC`},
		{"a NAT layout for a VPC the stack does not make", "natGateways", map[string]string{"natGateways": "perAz"}, `natGateways "perAz": shapes only a VPC the stack makes, and vpcName names an existing one`},
		{"a NAT layout that does not exist", "natGateways", ownVpc(map[string]string{"natGateways": "perZone"}), `natGateways "perZone": want "single" (one NAT gateway for every zone, about $36.50 a month with its address) or "perAz"`},
		{"a CIDR for a VPC the stack does not make", "vpcCidrBlock", map[string]string{"vpcCidrBlock": "10.1.0.0/16"}, `vpcCidrBlock "10.1.0.0/16": shapes only a VPC the stack makes`},
		{"a VPC CIDR larger than AWS allows", "vpcCidrBlock", ownVpc(map[string]string{"vpcCidrBlock": "10.0.0.0/8"}), `vpcCidrBlock "10.0.0.0/8": want /16 to /20: AWS refuses a VPC block larger than /16`},
		{"a VPC CIDR with host bits", "vpcCidrBlock", ownVpc(map[string]string{"vpcCidrBlock": "10.0.0.1/16"}), `vpcCidrBlock "10.0.0.1/16": want an IPv4 network in CIDR form`},
		{"a VPC CIDR over the pod CIDR", "vpcCidrBlock", ownVpc(map[string]string{"vpcCidrBlock": "100.64.0.0/16"}), `vpcCidrBlock "100.64.0.0/16": overlaps 100.64.0.0/16, the VPC's pod CIDR`},
		{"a VPC in a region without the room", "vpcName", ownVpc(map[string]string{"clusterName": "full-region"}), `vpcName unset: the stack would make a VPC in eu-west-1, where the account uses 5 of its quota "VPCs per Region" (L-F678F1CE) of 5`},
		{"pod pattern equal to private pattern", "podSubnetNamePattern", map[string]string{"podSubnetNamePattern": "eks-demo-vpc-private-*"}, `podSubnetNamePattern "eks-demo-vpc-private-*": must differ`},
		{"public access not a bool", "endpointPublicAccess", map[string]string{"endpointPublicAccess": "yes please"}, `endpointPublicAccess: "yes please": want true or false`},
		{"private access not a bool", "endpointPrivateAccess", map[string]string{"endpointPrivateAccess": "1.5"}, `endpointPrivateAccess: "1.5": want true or false`},
		{"both endpoints off", "endpointPrivateAccess", map[string]string{"endpointPublicAccess": "false", "endpointPrivateAccess": "false"}, "endpointPublicAccess and endpointPrivateAccess: at least one must be true"},
		{"malformed cidr", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `["81.2.69.0/33"]`}, `publicAccessCidrs[0] "81.2.69.0/33": want an IPv4 network`},
		{"cidr with host bits", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `["81.2.69.7/24"]`}, `publicAccessCidrs[0] "81.2.69.7/24"`},
		{"cidrs not a list", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `"81.2.69.0/24"`}, "publicAccessCidrs: want a list of CIDR strings"},
		{"a documentation range", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `["81.2.69.0/24","203.0.113.0/24"]`}, `publicAccessCidrs[1] "203.0.113.0/24": 203.0.113.0/24 is a documentation range (RFC 5737) that no deployer has`},
		{"a host in a documentation range", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `["198.51.100.7/32"]`}, "198.51.100.0/24 is a documentation range"},
		{"no cidr with a public endpoint", "publicAccessCidrs", map[string]string{"publicAccessCidrs": `[]`}, "publicAccessCidrs: at least one CIDR"},
		{"unknown add-on key", "addonVersions", map[string]string{"addonVersions": `{"vpc-cni":"v1.19.5-eksbuild.3"}`}, `addonVersions: want an object with the keys vpcCni, kubeProxy, coredns, podIdentityAgent, nodeMonitoringAgent, ebsCsiDriver, metricsServer: json: unknown field "vpc-cni"`},
		{"metrics-server version not an eks build", "addonVersions", map[string]string{"addonVersions": `{"metricsServer":"0.8"}`}, `addonVersions.metricsServer "0.8"`},
		{"metrics-server not a bool", "metricsServer", map[string]string{"metricsServer": "maybe"}, `metricsServer: "maybe": want true or false`},
		{"flow logs not a bool", "vpcFlowLogs", ownVpc(map[string]string{"vpcFlowLogs": "on"}), `vpcFlowLogs: "on": want true or false`},
		{"an S3 endpoint not a bool", "vpcS3Endpoint", ownVpc(map[string]string{"vpcS3Endpoint": "yes"}), `vpcS3Endpoint: "yes": want true or false`},
		{"an empty default group not a bool", "vpcEmptyDefaultSecurityGroup", ownVpc(map[string]string{"vpcEmptyDefaultSecurityGroup": "1x"}), `vpcEmptyDefaultSecurityGroup: "1x": want true or false`},
		{"ebs csi driver version not an eks build", "addonVersions", map[string]string{"addonVersions": `{"ebsCsiDriver":"latest"}`}, `addonVersions.ebsCsiDriver "latest"`},
		{"node monitoring agent version not an eks build", "addonVersions", map[string]string{"addonVersions": `{"nodeMonitoringAgent":"1.4"}`}, `addonVersions.nodeMonitoringAgent "1.4"`},
		{"node repair not a bool", "nodeRepair", map[string]string{"nodeRepair": "sometimes"}, `nodeRepair: "sometimes": want true or false`},
		{"add-on version not an eks build", "addonVersions", map[string]string{"addonVersions": `{"vpcCni":"latest"}`}, `addonVersions.vpcCni "latest"`},
		{"coredns version not an eks build", "addonVersions", map[string]string{"addonVersions": `{"coredns":"1.11"}`}, `addonVersions.coredns "1.11"`},
		{"coredns replicas not a number", "corednsReplicas", map[string]string{"corednsReplicas": "two"}, `corednsReplicas "two": want a whole number`},
		{"no coredns replica", "corednsReplicas", map[string]string{"corednsReplicas": "0"}, "corednsReplicas 0: want 1-10"},
		{"one coredns replica in production", "corednsReplicas", map[string]string{"corednsReplicas": "1", "production": "true"}, "corednsReplicas 1: production stacks run at least 2"},
		{"lb controller version with a v", "loadBalancerControllerVersion", map[string]string{"loadBalancerControllerVersion": "v2.14.0"}, `loadBalancerControllerVersion "v2.14.0": want a chart version`},
		{"lb controller chart of the 2.x controllers", "loadBalancerControllerVersion", map[string]string{"loadBalancerControllerVersion": "1.14.0"}, `loadBalancerControllerVersion "1.14.0": want chart 3.2.0 or later (e.g. "3.5.0"): from 3.0.0 the chart's version is the controller's`},
		{"lb controller chart without the webhook's namespace selectors", "loadBalancerControllerVersion", map[string]string{"loadBalancerControllerVersion": "3.1.0"}, `loadBalancerControllerVersion "3.1.0": want chart 3.2.0 or later`},
		{"argocd not a bool", "argocd", map[string]string{"argocd": "on"}, `argocd: "on": want true or false`},
		{"argocd version empty-ish", "argocdVersion", map[string]string{"argocdVersion": "latest"}, `argocdVersion "latest": want a chart version`},
		{"tags not string values", "tags", map[string]string{"tags": `{"team":7}`}, "tags.team: want a string, not 7"},
		{"reserved tag prefix", "tags", map[string]string{"tags": `{"aws:owner":"me"}`}, `tags key "aws:owner": the aws: prefix is reserved`},
		{"a tag the program sets", "tags", map[string]string{"tags": `{"karpenter.sh/discovery":"other"}`}, `tags key "karpenter.sh/discovery": the program sets it to the cluster's name`},
		{"production not a bool", "production", map[string]string{"production": "maybe"}, `production: "maybe": want true or false`},
		{"unknown key in a pool", "nodePools", map[string]string{"nodePools": `{"general":{"capacityType":["spot"]}}`}, `nodePools: want an object of pools by name (see Pulumi.yaml): json: unknown field "capacityType"`},
		{"unknown key in a node class", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"ami":"bottlerocket@latest"}}`}, `nodeClasses: want an object of node classes by name (see Pulumi.yaml): json: unknown field "ami"`},
		// The EC2NodeClass CRD would prune the unknown key and take the
		// class without it (test/kubecheck: TestKubeletKeysTheCRDPrunes).
		{"unknown kubelet key", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"kubelet":{"maxPod":110}}}`}, `nodeClasses: want an object of node classes by name (see Pulumi.yaml): json: unknown field "maxPod"`},
		{"kubelet value of a wrong type", "nodeClasses", map[string]string{"nodeClasses": `{"default":{"kubelet":{"maxPods":"110"}}}`}, `kubelet.maxPods of type int`},
		{"access entry with an STS session", "accessEntries", map[string]string{"accessEntries": `{"me":{"principalArn":"arn:aws:sts::123456789012:assumed-role/admin/me","policy":"view"}}`}, `accessEntries.me.principalArn "arn:aws:sts::123456789012:assumed-role/admin/me": an STS session is not a principal EKS accepts; use the role's ARN`},
		{"access entry with a malformed arn", "accessEntries", map[string]string{"accessEntries": `{"ops":{"principalArn":"platform-admins","policy":"view"}}`}, `accessEntries.ops.principalArn "platform-admins": want an IAM role or user ARN`},
		{"access entry with an unknown policy", "accessEntries", map[string]string{"accessEntries": `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"owner"}}`}, `accessEntries.ops.policy "owner": want one of admin, cluster-admin, edit, view`},
		{"cluster-admin on namespaces", "accessEntries", map[string]string{"accessEntries": `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"cluster-admin","namespaces":["ops"]}}`}, "accessEntries.ops.namespaces: cluster-admin is cluster-wide"},
		{"access entry on a bad namespace", "accessEntries", map[string]string{"accessEntries": `{"ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"edit","namespaces":["Team_A"]}}`}, `accessEntries.ops.namespaces[0] "Team_A": want a Kubernetes namespace name`},
		{"one principal in two entries", "accessEntries", map[string]string{"accessEntries": `{"a":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"view"},"b":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"edit"}}`}, "already granted by accessEntries.a; EKS allows one entry per principal"},
		{"access entry with an unknown key", "accessEntries", map[string]string{"accessEntries": `{"ops":{"arn":"arn:aws:iam::123456789012:role/ops","policy":"view"}}`}, `accessEntries: want an object of entries by name, each {principalArn, policy, namespaces}: json: unknown field "arn"`},
		{"access entry name with capitals", "accessEntries", map[string]string{"accessEntries": `{"Ops":{"principalArn":"arn:aws:iam::123456789012:role/ops","policy":"view"}}`}, `accessEntries "Ops": want an entry name`},
		{"unknown log type", "clusterLogTypes", map[string]string{"clusterLogTypes": `["api","kubelet"]`}, `clusterLogTypes[1] "kubelet": want some of api, audit, authenticator, controllerManager, scheduler`},
		{"log types not a list", "clusterLogTypes", map[string]string{"clusterLogTypes": `"api"`}, "clusterLogTypes: want a list of log types"},
		{"retention CloudWatch does not offer", "logRetentionDays", map[string]string{"logRetentionDays": "10"}, "logRetentionDays 10: want a retention CloudWatch accepts: 1 3 5 7 14"},
		{"retention not a number", "logRetentionDays", map[string]string{"logRetentionDays": "90d"}, `logRetentionDays "90d": want a whole number of days`},
		{"kms key given as an alias", "kmsKeyArn", map[string]string{"kmsKeyArn": "alias/eks"}, `kmsKeyArn "alias/eks": want a KMS key ARN`},
		{"kms key in another region", "kmsKeyArn", map[string]string{"kmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, "EKS needs a key in the cluster's region eu-west-1"},
		{"production api open to the internet", "allowPublicEndpointFromInternet", map[string]string{"production": "true", "supportType": "STANDARD", "corednsReplicas": "2", "publicAccessCidrs": `["0.0.0.0/0"]`, "nodeClasses": `{"default":{"amiAlias":"bottlerocket@v1.66.0"}}`}, `publicAccessCidrs[0] "0.0.0.0/0": a production stack would expose its Kubernetes API to the whole internet`},
		{"acknowledgement not a bool", "allowPublicEndpointFromInternet", map[string]string{"allowPublicEndpointFromInternet": "ok"}, `allowPublicEndpointFromInternet: "ok": want true or false`},
		{"iam path without slashes", "iamPath", map[string]string{"iamPath": "eks"}, `iamPath "eks": want "/" or a path that starts and ends with '/'`},
		{"boundary not a policy arn", "iamPermissionsBoundary", map[string]string{"iamPermissionsBoundary": "org-boundary"}, `iamPermissionsBoundary "org-boundary": want a managed policy ARN`},
		{"controller size that pays for unused memory", "controllerResources", map[string]string{"controllerResources": `{"cpu":"1","memory":"1Gi"}`}, `controllerResources: cpu "1" and memory "1Gi" are billed as Fargate's 1 vCPU / 2 GB size and leave part of it unused; ask for cpu "1" and memory 1792Mi`},
		{"controller size with only cpu", "controllerResources", map[string]string{"controllerResources": `{"cpu":"1"}`}, "controllerResources: set both cpu and memory"},
		{"controller size with an unknown key", "controllerResources", map[string]string{"controllerResources": `{"cpu":"1","mem":"1792Mi"}`}, `controllerResources: want an object {"cpu": "250m", "memory": "768Mi"}: json: unknown field "mem"`},
		{"controller memory below the floor", "controllerResources", map[string]string{"controllerResources": `{"cpu":"250m","memory":"256Mi"}`}, "controllerResources: memory \"256Mi\": the controller needs at least 512Mi"},
		{"missing region", "", map[string]string{"aws:region": ""}, `aws:region "": want an AWS region`},
	}

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.key] = true
		t.Run(tt.name, func(t *testing.T) {
			cfg := stackConfig(t, "Pulumi.dev.yaml")
			for k, v := range tt.set {
				if !strings.Contains(k, ":") {
					k = testProject + ":" + k
				}
				cfg[k] = v
			}
			acct := &fakeaws.Account{Vpc: fakeaws.DevVpc(), ClusterName: cfg[testProject+":clusterName"]}
			if tt.set["clusterName"] == "full-region" {
				acct.VpcsInRegion = fakeaws.DefaultQuota - 1 // and DevVpc
			}
			run := loadIn(t, cfg, acct)
			require.Error(t, run.err, "the program must reject %v", tt.set)
			assert.Contains(t, run.err.Error(), tt.want, "the error must name the key and what is allowed")
		})
	}

	t.Run("every declared key has a bad-input row", func(t *testing.T) {
		for _, key := range declaredKeys(loadProject(t)) {
			assert.Truef(t, covered[key], "config key %s has no bad-input row in this table", key)
		}
	})
}

func TestProductionPublicEndpointAcknowledged(t *testing.T) {
	cfg := stackConfig(t, "testdata/stack-multipool.yaml")
	cfg[testProject+":publicAccessCidrs"] = `["0.0.0.0/0"]`
	cfg[testProject+":allowPublicEndpointFromInternet"] = "true"
	run := load(t, cfg, "")
	require.NoError(t, run.err, "an explicit acknowledgement lets a production stack keep a public endpoint open to all")
	assert.Equal(t, []string{"0.0.0.0/0"}, run.cfg.PublicAccessCidrs)

	cfg[testProject+":endpointPublicAccess"] = "false"
	cfg[testProject+":allowPublicEndpointFromInternet"] = "false"
	require.NoError(t, load(t, cfg, "").err, "without a public endpoint its CIDRs expose nothing")
}

func TestConfigAcceptsABlockHoldingADocumentationRange(t *testing.T) {
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	cfg[testProject+":publicAccessCidrs"] = `["203.0.0.0/16"]`
	require.NoError(t, load(t, cfg, "").err, "203.0.0.0/16 is real address space around 203.0.113.0/24")
}

func TestDefaultClusterName(t *testing.T) {
	long := strings.Repeat("review", 12)
	tests := []struct {
		name, project, stack, want string
	}{
		{"project and stack", "nodeless-eks", "prod", "nodeless-eks-prod"},
		{"characters EKS refuses become dashes", "nodeless-eks", "team.a/pr 7", "nodeless-eks-team-a-pr-7"},
		{"a long name is cut with a hash", "nodeless-eks", long, ""},
		{"a region-named stack fits whole", "nodeless-eks", "staging-eu-west-1", "nodeless-eks-staging-eu-west-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names.DefaultClusterName(tt.project, tt.stack)
			if tt.want != "" {
				assert.Equal(t, tt.want, got)
			}
			assert.LessOrEqual(t, len(got), names.MaxClusterNameLength, "every name the stack creates must fit")
			assert.Regexp(t, clusterNameRe, got)
		})
	}
	a, b := names.DefaultClusterName("nodeless-eks", long+"-a"), names.DefaultClusterName("nodeless-eks", long+"-b")
	assert.NotEqual(t, a, b, "two long stack names must not share a cluster name")

	t.Run("a stack without clusterName gets the project and stack name", func(t *testing.T) {
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		delete(cfg, testProject+":clusterName")
		run := load(t, cfg, "")
		require.NoError(t, run.err)
		assert.Equal(t, "nodeless-eks-dev", run.cfg.ClusterName)
	})
}

func TestConfigReportsEveryProblemAtOnce(t *testing.T) {
	cfg := stackConfig(t, "Pulumi.dev.yaml")
	cfg[testProject+":clusterName"] = "bad name"
	cfg[testProject+":kubernetesVersion"] = "1.99"
	cfg[testProject+":publicAccessCidrs"] = `["nope"]`
	cfg[testProject+":addonVersions"] = `{"coredns":"v1"}`

	run := load(t, cfg, "")
	require.Error(t, run.err)
	for _, key := range []string{"clusterName", "kubernetesVersion", "publicAccessCidrs[0]", "addonVersions"} {
		assert.Contains(t, run.err.Error(), key, "all problems are reported together")
	}
}

func TestConfigDefaultsMatchPulumiYaml(t *testing.T) {
	required := map[string]string{"aws:region": "eu-west-1"}
	withDefaults := map[string]any{}
	for k, v := range required {
		withDefaults[k] = v
	}
	for name, decl := range loadProject(t).Config {
		if decl.Default != nil {
			withDefaults[testProject+":"+name] = decl.Default
		}
	}

	codeDefaults := loadConfigUnderMocks(t, required)
	declaredDefaults := loadConfigUnderMocks(t, encodeConfig(t, withDefaults))
	assert.Equal(t, declaredDefaults, codeDefaults,
		"a stack that omits optional keys must behave the same with and without Pulumi.yaml's defaults")
}

// loadConfigUnderMocks loads cfg over nothing but what it sets.
func loadConfigUnderMocks(t *testing.T, cfg map[string]string) *Config {
	t.Helper()
	got := load(t, cfg, "")
	require.NoError(t, got.err)
	return got.cfg
}

func TestConfigRejectsBadNodePools(t *testing.T) {
	// Shared with test/kubecheck, which checks that the API server would
	// have rejected each row too.
	rows, err := badpools.Rows()
	require.NoError(t, err)
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			cfg := stackConfig(t, "Pulumi.dev.yaml")
			if row.NodePools != nil {
				cfg[testProject+":nodePools"] = string(row.NodePools)
			}
			if row.NodeClasses != nil {
				cfg[testProject+":nodeClasses"] = string(row.NodeClasses)
			}
			if row.Production {
				cfg[testProject+":production"] = "true"
			}
			if row.KarpenterVersion != "" {
				require.NoError(t, load(t, cfg, "").err, "the row is refused only on Karpenter %s: the default takes it", row.KarpenterVersion)
				cfg[testProject+":karpenterVersion"] = row.KarpenterVersion
			}
			run := load(t, cfg, "")
			require.Error(t, run.err, "the program must reject %s", row.Name)
			assert.Contains(t, run.err.Error(), row.Key, "the error must name the key")
		})
	}
}

func TestUpgradeStep(t *testing.T) {
	tests := []struct {
		name, running, want string
		wantErr             string
	}{
		{"a new cluster may start at any supported version", "", "1.36", ""},
		{"the same version", "1.36", "1.36", ""},
		{"one minor up", "1.35", "1.36", ""},
		{"two minors up at once", "1.34", "1.36", `kubernetesVersion "1.36": cluster eks-demo runs 1.34, and EKS upgrades one minor version at a time: set kubernetesVersion "1.35", then "1.36", running pulumi up after each`},
		{"a downgrade", "1.36", "1.35", `kubernetesVersion "1.35": cluster eks-demo runs 1.36, and this program does not move a cluster to a lower version: EKS rolls a control plane back one minor only within 7 days of an in-place upgrade`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := stackConfig(t, "Pulumi.dev.yaml")
			cfg[testProject+":kubernetesVersion"] = tt.want
			run := load(t, cfg, tt.running)
			if tt.wantErr == "" {
				require.NoError(t, run.err)
				return
			}
			require.Error(t, run.err)
			assert.Contains(t, run.err.Error(), tt.wantErr)
		})
	}
	t.Run("the cluster is looked up only when the account lists it", func(t *testing.T) {
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		run := load(t, cfg, "")
		require.NoError(t, run.err)
		for _, inv := range run.rec.Invocations() {
			assert.NotEqual(t, "aws:eks/getCluster:getCluster", inv.Token, "a new cluster is known from the list, not from a failed read")
		}
	})
}

// TestSupportCalendar holds the configured minor to the EKS calendar on
// chosen days, for new and existing clusters and both stack classes.
func TestSupportCalendar(t *testing.T) {
	day := func(s string) time.Time { return mustParseDay(t, s) }
	tests := []struct {
		name       string
		cfg        Config
		day        string
		exists     bool
		wantErr    []string
		wantWarn   []string
		wantNoWarn bool
	}{
		{name: "in standard support, far from its end", cfg: Config{KubernetesVersion: "1.36", SupportType: "STANDARD"}, day: "2026-12-01", wantNoWarn: true},
		{name: "91 days before the end of standard support", cfg: Config{KubernetesVersion: "1.35", SupportType: "STANDARD"}, day: "2026-12-26", wantNoWarn: true},
		{name: "90 days before the end of standard support, STANDARD", cfg: Config{KubernetesVersion: "1.35", SupportType: "STANDARD"}, day: "2026-12-27",
			wantWarn: []string{`kubernetesVersion "1.35": standard support ends on 2027-03-27, in 90 days; then EKS upgrades the control plane to 1.36 itself (supportType STANDARD). Upgrade to "1.36" before then`}},
		{name: "the day before the end of standard support, EXTENDED", cfg: Config{KubernetesVersion: "1.34", SupportType: "EXTENDED"}, day: "2026-12-01",
			wantWarn: []string{`kubernetesVersion "1.34": standard support ends on 2026-12-02, in 1 days; then the cluster is billed $0.60 an hour instead of $0.10 (supportType EXTENDED)`}},
		{name: "extended support on a dev stack", cfg: Config{KubernetesVersion: "1.33", SupportType: "EXTENDED"}, day: "2026-12-01",
			wantWarn: []string{`kubernetesVersion "1.33": in extended support since 2026-07-29, billed $0.60 an hour instead of $0.10; EKS upgrades the control plane itself after 2027-07-29. Upgrade to "1.34"`}},
		{name: "extended support on production, acknowledged", cfg: Config{KubernetesVersion: "1.33", SupportType: "EXTENDED", Production: true, AllowExtendedSupport: true}, day: "2026-12-01",
			wantWarn: []string{`kubernetesVersion "1.33": in extended support since 2026-07-29`}},
		{name: "extended support on production", cfg: Config{KubernetesVersion: "1.33", SupportType: "EXTENDED", Production: true}, day: "2026-12-01",
			wantErr: []string{`kubernetesVersion "1.33": standard support ended on 2026-07-29, and a production cluster in extended support costs $0.60 an hour`}},
		{name: "STANDARD after standard support", cfg: Config{KubernetesVersion: "1.34", SupportType: "STANDARD"}, day: "2026-12-02",
			wantErr: []string{`supportType "STANDARD": kubernetesVersion "1.34" left standard support on 2026-12-02`}},
		{name: "a new cluster past extended support", cfg: Config{KubernetesVersion: "1.32", SupportType: "EXTENDED"}, day: "2027-03-23",
			wantErr: []string{`kubernetesVersion "1.32": EKS ended extended support on 2027-03-23 and creates no new cluster of it`}},
		{name: "an existing cluster past extended support", cfg: Config{KubernetesVersion: "1.32", SupportType: "EXTENDED"}, day: "2027-03-23", exists: true,
			wantWarn: []string{`kubernetesVersion "1.32": EKS ended extended support on 2027-03-23 and upgrades the control plane to 1.33 at a time of its choosing`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, warnings := checkSupport(&tt.cfg, day(tt.day), tt.exists)
			require.Len(t, problems, len(tt.wantErr), "problems: %v", problems)
			for i, want := range tt.wantErr {
				assert.Contains(t, problems[i].Error(), want)
			}
			if tt.wantNoWarn {
				assert.Empty(t, warnings)
			}
			require.Len(t, warnings, len(tt.wantWarn), "warnings: %v", warnings)
			for i, want := range tt.wantWarn {
				assert.Contains(t, warnings[i], want)
			}
		})
	}

	t.Run("preview carries the warning of a stack near the end of standard support", func(t *testing.T) {
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		cfg[testProject+":kubernetesVersion"] = "1.34"
		got := loadConfigUnderMocks(t, cfg)
		require.Len(t, got.Warnings, 1)
		assert.Contains(t, got.Warnings[0], `kubernetesVersion "1.34": standard support ends on 2026-12-02, in 1 days`)
	})
	t.Run("the default minor is the newest that EKS has released and Karpenter supports", func(t *testing.T) {
		newest := 0
		for _, r := range versions.EKSCalendar {
			if !r.Released.After(testToday) && r.Minor <= versions.MaxKubernetesMinor {
				newest = max(newest, r.Minor)
			}
		}
		assert.Equal(t, newest, versions.DefaultKubernetesMinor)
		assert.Equal(t, fmt.Sprintf("1.%d", newest), defaultKubernetesVersion)
	})
	t.Run("the calendar covers a contiguous run of minors inside Karpenter's range", func(t *testing.T) {
		for i, r := range versions.EKSCalendar {
			assert.GreaterOrEqual(t, r.Minor, versions.MinKubernetesMinor)
			assert.LessOrEqual(t, r.Minor, versions.MaxKubernetesMinor)
			if i > 0 {
				assert.Equal(t, versions.EKSCalendar[i-1].Minor+1, r.Minor, "no gap in the calendar")
			}
			assert.True(t, r.Released.Before(r.EndOfStandardSupport) && r.EndOfStandardSupport.Before(r.EndOfExtendedSupport),
				"1.%d: released, end of standard, end of extended, in that order", r.Minor)
			assert.Equal(t, r.EndOfStandardSupport.AddDate(1, 0, 0), r.EndOfExtendedSupport, "1.%d: extended support is 12 months", r.Minor)
			assert.NotEmpty(t, r.Source)
		}
	})
	t.Run("every minor a new cluster may start on has a first Bottlerocket release", func(t *testing.T) {
		for _, r := range versions.EKSCalendar {
			if r.Supported(testToday) {
				assert.Containsf(t, versions.FirstBottlerocket, r.Minor, "1.%d has no entry in versions.FirstBottlerocket", r.Minor)
			}
		}
	})
}

// TestSpotServiceLinkedRole: a stack whose pools allow spot ensures the
// account's EC2 Spot service-linked role, adopting the one there by its
// ARN; a stack without a spot pool needs none.
func TestSpotServiceLinkedRole(t *testing.T) {
	spotRole := func(t *testing.T, set map[string]string, noSpotRole bool) *karpenter.SpotRole {
		t.Helper()
		cfg := stackConfig(t, "Pulumi.dev.yaml")
		for k, v := range set {
			cfg[testProject+":"+k] = v
		}
		got := loadIn(t, cfg, &fakeaws.Account{Vpc: fakeaws.DevVpc(), NoSpotRole: noSpotRole})
		require.NoError(t, got.err)
		assert.Empty(t, got.cfg.Warnings, "nothing to warn of: the stack ensures the role")
		return got.cfg.SpotRole
	}
	assert.Equal(t, &karpenter.SpotRole{}, spotRole(t, nil, true), "an account without the role: the stack creates it")
	assert.Equal(t, &karpenter.SpotRole{Arn: "arn:aws:iam::" + fakeaws.AccountID + ":role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"},
		spotRole(t, nil, false), "an account with the role: the stack adopts it")
	assert.Nil(t, spotRole(t, map[string]string{"nodePools": `{"general":{"requirements":{"capacityTypes":["on-demand"]}}}`}, true),
		"no pool allows spot: no role")
}

// ownVpc is set over a stack file that names no VPC.
func ownVpc(set map[string]string) map[string]string {
	out := map[string]string{"vpcName": "", "privateSubnetNamePattern": "", "podSubnetNamePattern": ""}
	for k, v := range set {
		out[k] = v
	}
	return out
}

func mustParseDay(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	require.NoError(t, err)
	return d
}

func TestSupportTypeDefault(t *testing.T) {
	dev := load(t, stackConfig(t, "Pulumi.dev.yaml"), "")
	require.NoError(t, dev.err)
	assert.Equal(t, "STANDARD", dev.cfg.SupportType, "a dev stack that does not choose gets STANDARD")

	prod := stackConfig(t, "testdata/stack-multipool.yaml")
	prod[testProject+":supportType"] = "EXTENDED"
	got := load(t, prod, "")
	require.NoError(t, got.err)
	assert.Equal(t, "EXTENDED", got.cfg.SupportType, "a production stack gets what it chose")
	assert.True(t, got.cfg.Production)
}

// TestAStackThatNamesNoVpcMakesOne: the preflight chooses the zones EKS
// accepts and the NAT layout by stack class, and refuses, naming the
// quota, a region whose VPC or Elastic IP quota the new VPC would exceed;
// a stack whose VPC exists already is not counted twice.
func TestAStackThatNamesNoVpcMakesOne(t *testing.T) {
	run := func(t *testing.T, set map[string]string, acct *fakeaws.Account) loaded {
		t.Helper()
		cfg := map[string]string{"aws:region": fakeaws.Region}
		for k, v := range set {
			cfg[testProject+":"+k] = v
		}
		acct.Vpc = fakeaws.Vpc{}
		acct.ClusterName = "nodeless-eks-dev"
		return loadIn(t, cfg, acct)
	}
	t.Run("defaults: three zones by name, one NAT gateway, 10.0.0.0/16", func(t *testing.T) {
		got := run(t, nil, &fakeaws.Account{})
		require.NoError(t, got.err)
		assert.Equal(t, []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, got.cfg.Zones)
		assert.Equal(t, "single", got.cfg.NatGateways)
		assert.Equal(t, "10.0.0.0/16", got.cfg.VpcCidrBlock)
	})
	t.Run("a production stack gets a NAT gateway per zone", func(t *testing.T) {
		cfg := stackConfig(t, "testdata/stack-multipool.yaml")
		for _, k := range []string{"vpcName", "privateSubnetNamePattern", "podSubnetNamePattern"} {
			delete(cfg, testProject+":"+k)
		}
		got := loadIn(t, cfg, &fakeaws.Account{ClusterName: cfg[testProject+":clusterName"]})
		require.NoError(t, got.err)
		assert.Equal(t, "perAz", got.cfg.NatGateways)
	})
	t.Run("no room for the NAT gateways' addresses", func(t *testing.T) {
		got := run(t, map[string]string{"natGateways": "perAz"}, &fakeaws.Account{EipsInRegion: 3})
		require.Error(t, got.err)
		assert.Contains(t, got.err.Error(), `vpcName unset: the stack would make 3 Elastic IP address(es) for its NAT gateway(s) in eu-west-1, `+
			`where the account uses 3 of its quota "EC2-VPC Elastic IPs" (L-0263D0A3) of 5: AWS would refuse it seconds into `+"`pulumi up`")
		assert.Contains(t, got.err.Error(), "aws service-quotas request-service-quota-increase --region eu-west-1 --service-code ec2 --quota-code L-0263D0A3 --desired-value 6")
		assert.Contains(t, got.err.Error(), `set natGateways "single" (one address)`)
		assert.Empty(t, got.rec.All(), "refused before anything is registered")
	})
	t.Run("a quota the caller may not read is a warning, not a refusal", func(t *testing.T) {
		got := run(t, map[string]string{"natGateways": "perAz"}, &fakeaws.Account{VpcsInRegion: 5, EipsInRegion: 3, QuotasRefused: true})
		require.NoError(t, got.err, "AWS itself refuses seconds in")
		require.Len(t, got.cfg.Warnings, 2)
		assert.Contains(t, got.cfg.Warnings[0], `vpcName unset: the quota "VPCs per Region" (L-F678F1CE) of eu-west-1 was not checked: `+
			`reading it was refused (servicequotas:GetServiceQuota and GetAWSDefaultServiceQuota). The stack would make a VPC, where the account uses 5`)
		assert.Contains(t, got.cfg.Warnings[1], `the quota "EC2-VPC Elastic IPs" (L-0263D0A3)`)
	})
	t.Run("a raised quota is the account's", func(t *testing.T) {
		got := run(t, nil, &fakeaws.Account{VpcsInRegion: 9, Quotas: map[string]float64{"L-F678F1CE": 10}})
		require.NoError(t, got.err)
	})
	// The VPC an earlier up made, in zones a, b and d (d was the third
	// when it was made; c appeared since, and sorts before it).
	own := func() fakeaws.Vpc {
		v := fakeaws.Vpc{ID: "vpc-own", Name: "nodeless-eks-dev-vpc", Tags: map[string]string{names.ClusterTagKey: "nodeless-eks-dev"}}
		for _, az := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1d"} {
			v.Subnets = append(v.Subnets, fakeaws.Subnet{ID: "subnet-" + az, AZ: az, Name: "nodeless-eks-dev-private-" + az},
				fakeaws.Subnet{ID: "subnet-pods-" + az, AZ: az, Name: "nodeless-eks-dev-pods-" + az})
		}
		return v
	}
	t.Run("the stack's own VPC, made by an earlier up, is not counted again, and keeps its zones", func(t *testing.T) {
		got := run(t, nil, &fakeaws.Account{VpcsInRegion: 4, OtherVpcs: []fakeaws.Vpc{own()}})
		require.NoError(t, got.err, "5 of 5 VPCs, one of them this stack's")
		assert.Equal(t, []string{"eu-west-1a", "eu-west-1b", "eu-west-1d"}, got.cfg.Zones, "the zones its subnets are in, not the first three by name now")
	})
	t.Run("its CIDR cannot change", func(t *testing.T) {
		got := run(t, map[string]string{"vpcCidrBlock": "10.8.0.0/16"}, &fakeaws.Account{OtherVpcs: []fakeaws.Vpc{own()}})
		require.Error(t, got.err)
		assert.Contains(t, got.err.Error(), `vpcCidrBlock "10.8.0.0/16": the VPC vpc-own this stack made has 10.0.0.0/16, and a VPC's primary CIDR cannot change`)
	})
	t.Run("more NAT gateways need room for their addresses only", func(t *testing.T) {
		acct := &fakeaws.Account{OtherVpcs: []fakeaws.Vpc{own()}, EipsInRegion: 4, OwnEips: 1}
		got := run(t, map[string]string{"natGateways": "perAz"}, acct)
		require.Error(t, got.err, "4 used, 2 more for 3 gateways, 5 allowed")
		assert.Contains(t, got.err.Error(), `the stack would make 2 Elastic IP address(es) for its NAT gateway(s) in eu-west-1, where the account uses 4`)
		acct.EipsInRegion = 3
		require.NoError(t, run(t, map[string]string{"natGateways": "perAz"}, acct).err, "3 used and 2 more fit in 5")
	})
}
