package main

// The acceptance test: one run takes a uniquely named stack from nothing to
// a verified cluster and back to nothing, and fails on anything Karpenter
// left behind. It needs a real AWS account, so it runs only when asked to:
//
//	NODELESS_EKS_ACC=1 \
//	NODELESS_EKS_REGION=eu-west-1 NODELESS_EKS_VPC_NAME=eks-demo-vpc \
//	NODELESS_EKS_PRIVATE_SUBNET_PATTERN='eks-demo-vpc-private-*' \
//	NODELESS_EKS_POD_SUBNET_PATTERN='eks-demo-vpc-podsubnet-*' \
//	go test -run TestAccNodelessStack -timeout 120m -v .

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/poll"
	"nodeless-eks/testkit/verify"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// accOptIn must be "1" for the acceptance test to run.
const accOptIn = "NODELESS_EKS_ACC"

// accSettings are the environment variables the acceptance test reads,
// with the stack config key each one sets.
var accSettings = []struct{ env, key string }{
	{"NODELESS_EKS_REGION", "aws:region"},
	{"NODELESS_EKS_VPC_NAME", testProject + ":vpcName"},
	{"NODELESS_EKS_PRIVATE_SUBNET_PATTERN", testProject + ":privateSubnetNamePattern"},
	{"NODELESS_EKS_POD_SUBNET_PATTERN", testProject + ":podSubnetNamePattern"},
}

// accSkipReason says what the acceptance test is missing, or "" when it
// can run. Cheap checks come first, so a machine without the opt-in never
// touches the network.
func accSkipReason(getenv func(string) string, lookPath func(string) (string, error), credentials func() error) string {
	if getenv(accOptIn) != "1" {
		return fmt.Sprintf("acceptance test skipped: set %s=1 to create and destroy a real EKS cluster (about 30 minutes, billed to your AWS account)", accOptIn)
	}
	for _, tool := range []string{"pulumi", "aws"} {
		if _, err := lookPath(tool); err != nil {
			return fmt.Sprintf("acceptance test skipped: the %s CLI is not on PATH", tool)
		}
	}
	var missing []string
	for _, s := range accSettings {
		if getenv(s.env) == "" {
			missing = append(missing, s.env)
		}
	}
	if len(missing) > 0 {
		return "acceptance test skipped: set " + strings.Join(missing, ", ")
	}
	if err := credentials(); err != nil {
		return fmt.Sprintf("acceptance test skipped: no usable AWS credentials: %v", err)
	}
	return ""
}

// awsCredentials checks that the default credential chain yields credentials.
func awsCredentials() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	_, err = cfg.Credentials.Retrieve(ctx)
	return err
}

func TestAccSkipsWithoutOptIn(t *testing.T) {
	env := map[string]string{}
	found := func(string) (string, error) { return "/usr/bin/true", nil }
	noCreds := func() error { return fmt.Errorf("no credentials") }

	reason := accSkipReason(func(k string) string { return env[k] }, found, noCreds)
	assert.Contains(t, reason, accOptIn+"=1", "the skip names the opt-in variable")

	env[accOptIn] = "1"
	reason = accSkipReason(func(k string) string { return env[k] },
		func(tool string) (string, error) { return "", fmt.Errorf("%s: not found", tool) }, noCreds)
	assert.Contains(t, reason, "the pulumi CLI is not on PATH")

	reason = accSkipReason(func(k string) string { return env[k] }, found, noCreds)
	assert.Contains(t, reason, "NODELESS_EKS_REGION, NODELESS_EKS_VPC_NAME")

	for _, s := range accSettings {
		env[s.env] = "x"
	}
	reason = accSkipReason(func(k string) string { return env[k] }, found, noCreds)
	assert.Contains(t, reason, "no usable AWS credentials")

	assert.Empty(t, accSkipReason(func(k string) string { return env[k] }, found, func() error { return nil }))
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// accStack is a new stack of the program for an acceptance test, or a
// skip when the test cannot run here. Its context ends a reserve below go
// test -timeout, so that a slow run still reaches destroy (in t.Cleanup,
// on a context of its own) and leaks no cluster.
func accStack(t *testing.T) (ctx context.Context, stack auto.Stack, name, region string, awsCfg aws.Config) {
	t.Helper()
	if reason := accSkipReason(os.Getenv, exec.LookPath, awsCredentials); reason != "" {
		t.Skip(reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-accDestroyReserve))
	}
	t.Cleanup(cancel)
	// The stack file auto writes (Pulumi.acc-*.yaml) is git-ignored.
	name = "acc-" + randomSuffix(t)
	region = os.Getenv("NODELESS_EKS_REGION")
	stack, err := auto.UpsertStackLocalSource(ctx, name, ".")
	require.NoError(t, err, "creating stack %s", name)
	awsCfg, err = awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	require.NoError(t, err)
	return ctx, stack, name, region, awsCfg
}

func TestAccNodelessStack(t *testing.T) {
	ctx, stack, name, region, awsCfg := accStack(t)

	// What the run leaves for destroy to clean: the PersistentVolumes of
	// the claims it binds (a Delete one must go, a Retain one must stay and
	// be reported), filled in by the subtests below.
	var deleteVolumes []string
	var retainVolumeID string

	// Destroy and sweep run even when a check fails half-way.
	t.Cleanup(func() {
		ctx := context.Background()
		var out strings.Builder
		if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout, &out)); err != nil {
			t.Errorf("destroying stack %s (remove what is left by hand): %v", name, err)
			return
		}
		ec2c, iamc, elbc := ec2.NewFromConfig(awsCfg), iam.NewFromConfig(awsCfg), elb.NewFromConfig(awsCfg)
		err := poll.Until(ctx, 10*time.Minute, 20*time.Second, func(ctx context.Context) (bool, string, error) {
			orphans, err := verify.FindOrphans(ctx, ec2c, iamc, region, name)
			if err != nil {
				return false, "", err
			}
			workloads, err := verify.FindWorkloadOrphans(ctx, ec2c, elbc, name, deleteVolumes)
			return orphans.Empty() && workloads.Empty(), "left behind: " + orphans.String() + "; " + workloads.String(), err
		})
		if err != nil {
			t.Errorf("after destroy of %s: %v", name, err)
		}
		if retainVolumeID != "" {
			assert.Contains(t, out.String(), "keeping EBS volume "+retainVolumeID, "destroy lists the volume it keeps")
			_, err := ec2c.DeleteVolume(ctx, &ec2.DeleteVolumeInput{VolumeId: aws.String(retainVolumeID)})
			assert.NoError(t, err, "the Retain volume %s outlives the cluster, and the test removes it", retainVolumeID)
		}
		if err != nil {
			return
		}
		if err := stack.Workspace().RemoveStack(ctx, name); err != nil {
			t.Errorf("removing stack %s: %v", name, err)
		}
	})

	cfg := auto.ConfigMap{
		testProject + ":clusterName": {Value: name},
		testProject + ":argocd":      {Value: "true"},
	}
	for _, s := range accSettings {
		cfg[s.key] = auto.ConfigValue{Value: os.Getenv(s.env)}
	}
	require.NoError(t, stack.SetAllConfig(ctx, cfg))

	_, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout))
	require.NoError(t, err, "one pulumi up must converge")

	outputs, err := stack.Outputs(ctx)
	require.NoError(t, err)
	kubeconfig, ok := outputs["kubeconfig"].Value.(string)
	require.True(t, ok, "the kubeconfig output is a string")
	assert.True(t, outputs["kubeconfig"].Secret, "the kubeconfig output is secret")
	restCfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(restCfg)
	require.NoError(t, err)

	require.NoError(t, poll.Until(ctx, 10*time.Minute, 15*time.Second, func(ctx context.Context) (bool, string, error) {
		err := verify.CheckPlacement(ctx, kube, dyn, verify.DefaultPlacement)
		return err == nil, fmt.Sprint(err), nil
	}), "Karpenter on Fargate, CoreDNS on Karpenter nodes, NodePools Ready")

	_, err = stack.Preview(ctx, optpreview.ExpectNoChanges())
	require.NoError(t, err, "the stack must stay converged: a second preview shows no changes")
	// What Deployments' drift detection runs: a refresh preview that must
	// find the cloud as the program left it.
	_, err = stack.PreviewRefresh(ctx, optrefresh.ExpectNoChanges())
	require.NoError(t, err, "a refresh right after up must find no drift")

	t.Run("scale out and in through Karpenter", func(t *testing.T) {
		const ns, app = "default", "inflate"
		before, err := verify.KarpenterNodes(ctx, kube)
		require.NoError(t, err)
		_, err = kube.AppsV1().Deployments(ns).Create(ctx, verify.ScaleWorkload(ns, app, 5), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = kube.AppsV1().Deployments(ns).Delete(context.Background(), app, metav1.DeleteOptions{})
		})
		require.NoError(t, verify.Scale(ctx, kube, ns, app, 15))
		added, err := verify.WaitScaledOut(ctx, kube, ns, "app="+app, 15, before, 10*time.Minute, 10*time.Second)
		require.NoError(t, err, "15 pods running on nodes Karpenter added")
		t.Logf("Karpenter added %d nodes", len(added))
		require.NoError(t, verify.Scale(ctx, kube, ns, app, 0))
		require.NoError(t, verify.WaitNodesGone(ctx, kube, added, 10*time.Minute, 15*time.Second),
			"Karpenter consolidates the added nodes away")
	})

	// bind creates a claim (of class, or the default when "") and a pod
	// that mounts it, and returns the bound PersistentVolume's name. Both
	// are left in place on purpose: destroy must handle their volume.
	bind := func(t *testing.T, name, class string) string {
		t.Helper()
		pvc, pod := verify.StorageWorkload("default", name)
		if class != "" {
			pvc.Spec.StorageClassName = aws.String(class)
		}
		_, err := kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		want := class
		if want == "" {
			want = "gp3"
		}
		require.NoError(t, verify.WaitBound(ctx, kube, "default", name, want, 10*time.Minute, 10*time.Second))
		bound, err := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return bound.Spec.VolumeName
	}

	t.Run("a claim binds through the default gp3 class", func(t *testing.T) {
		deleteVolumes = append(deleteVolumes, bind(t, "acc-data", ""))
	})

	t.Run("a claim on a Retain class is kept by destroy and reported", func(t *testing.T) {
		_, err := kube.StorageV1().StorageClasses().Create(ctx, verify.RetainStorageClass("acc-retain"), metav1.CreateOptions{})
		require.NoError(t, err)
		pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, bind(t, "acc-retain", "acc-retain"), metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, pv.Spec.CSI)
		retainVolumeID = pv.Spec.CSI.VolumeHandle
	})

	t.Run("the metrics API answers", func(t *testing.T) {
		raw := func(ctx context.Context, path string) ([]byte, error) {
			return kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		}
		require.NoError(t, poll.Until(ctx, 5*time.Minute, 15*time.Second, func(ctx context.Context) (bool, string, error) {
			n, err := verify.NodeMetrics(ctx, raw)
			return err == nil && n > 0, fmt.Sprintf("%d nodes reported (%v)", n, err), nil
		}), "kubectl top and HPAs need metrics-server")
	})

	// What an ArgoCD application might leave: its own EC2NodeClass and
	// NodePool with a node, and a LoadBalancer Service. Destroy must remove
	// all of it (the destroy cleanup), the class's instance profile too, and
	// the sweep in t.Cleanup must still find nothing.
	t.Run("workload-created NodePool, node class and load balancer before destroy", func(t *testing.T) {
		nodePools := schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
		nodeClasses := schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}
		ours, err := dyn.Resource(nodeClasses).Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
		class := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
			"metadata": map[string]any{"name": "acc-foreign"}, // without the stack's label
			"spec":     ours.Object["spec"],
		}}
		_, err = dyn.Resource(nodeClasses).Create(ctx, class, metav1.CreateOptions{})
		require.NoError(t, err)
		pool := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
			"metadata": map[string]any{"name": "acc-foreign"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "acc-foreign"},
				"requirements": []any{map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}}},
			}}},
		}}
		_, err = dyn.Resource(nodePools).Create(ctx, pool, metav1.CreateOptions{})
		require.NoError(t, err)
		deploy := verify.ScaleWorkload("default", "acc-foreign", 1)
		deploy.Spec.Template.Spec.NodeSelector = map[string]string{"karpenter.sh/nodepool": "acc-foreign"}
		_, err = kube.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kube.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "acc-foreign", Annotations: map[string]string{
				"service.beta.kubernetes.io/aws-load-balancer-type":            "external",
				"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
				"service.beta.kubernetes.io/aws-load-balancer-scheme":          "internal",
			}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "acc-foreign"},
				Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, poll.Until(ctx, 10*time.Minute, 15*time.Second, func(ctx context.Context) (bool, string, error) {
			svc, err := kube.CoreV1().Services("default").Get(ctx, "acc-foreign", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=acc-foreign"})
			if err != nil {
				return false, "", err
			}
			lb := len(svc.Status.LoadBalancer.Ingress) > 0
			return lb && len(nodes.Items) > 0, fmt.Sprintf("load balancer ready: %v, foreign nodes: %d", lb, len(nodes.Items)), nil
		}), "the foreign pool has a node and the Service a load balancer")
	})
}

// TestAccBootstrapFailsAtTheFault injects a fault a team can make: a pool
// allowed only an instance type that no region offers. Karpenter can then
// launch nothing, so `pulumi up` must fail at the CoreDNS add-on within its
// bound, after the bootstrap watch said why, on the add-ons' component,
// within 3 minutes of CoreDNS asking for a node; destroy must then remove
// everything.
func TestAccBootstrapFailsAtTheFault(t *testing.T) {
	ctx, stack, name, region, awsCfg := accStack(t)
	t.Cleanup(func() { destroyAndSweep(t, stack, name, region, awsCfg) })

	const impossibleType = "c6g.64xlarge" // c6g stops at 16xlarge and metal
	cfg := auto.ConfigMap{
		testProject + ":clusterName": {Value: name},
		testProject + ":argocd":      {Value: "false"},
		testProject + ":nodePools": {Value: `{"general": {"requirements": {"extra": [` +
			`{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["` + impossibleType + `"]}]}}}`},
	}
	for _, s := range accSettings {
		cfg[s.key] = auto.ConfigValue{Value: os.Getenv(s.env)}
	}
	require.NoError(t, stack.SetAllConfig(ctx, cfg))

	stream := make(chan events.EngineEvent)
	var seen []events.EngineEvent
	collected := make(chan struct{})
	go func() {
		for e := range stream {
			seen = append(seen, e)
		}
		close(collected)
	}()
	_, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout), optup.EventStreams(stream))
	<-collected
	require.Error(t, err, "up must fail: Karpenter can launch no node")

	// The cause goes on the add-ons' component: the add-on itself has no
	// URN to log on until it is created.
	coreDNS, addons := "::"+name+"-addons-coredns", "nodeless-eks:addons:Addons::"+name+"-addons"
	var started, failed int
	var cause string
	var causeAt int
	for _, e := range seen {
		switch {
		case e.ResourcePreEvent != nil && strings.HasSuffix(e.ResourcePreEvent.Metadata.URN, coreDNS):
			started = e.Timestamp
		case e.ResOpFailedEvent != nil && strings.HasSuffix(e.ResOpFailedEvent.Metadata.URN, coreDNS):
			failed = e.Timestamp
		case e.DiagnosticEvent != nil && strings.HasSuffix(e.DiagnosticEvent.URN, addons) && e.DiagnosticEvent.Severity == "warning" &&
			strings.Contains(e.DiagnosticEvent.Message, "has no node") && cause == "":
			cause, causeAt = e.DiagnosticEvent.Message, e.Timestamp
		}
	}
	require.NotZero(t, started, "the CoreDNS add-on was created: the class and pool were Ready")
	require.NotZero(t, failed, "up fails at the CoreDNS add-on")
	assert.LessOrEqual(t, time.Duration(failed-started)*time.Second, bounds.FirstNode+2*time.Minute, "within its bound")
	require.NotEmpty(t, cause, "the watch says why CoreDNS has no node, on the add-ons")
	assert.Contains(t, cause, "no instance type", "Karpenter's reason, not the scheduler's")
	assert.LessOrEqual(t, time.Duration(causeAt-started)*time.Second, 3*time.Minute, "within 3 minutes of the first sign")
	assert.Contains(t, err.Error(), name+"-addons-coredns", "the failure names the resource")
}

// destroyAndSweep destroys the stack, requires that Karpenter left nothing
// for its cluster, and removes the stack.
func destroyAndSweep(t *testing.T, stack auto.Stack, name, region string, awsCfg aws.Config) {
	ctx := context.Background()
	if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout)); err != nil {
		t.Errorf("destroying stack %s (remove what is left by hand): %v", name, err)
		return
	}
	err := poll.Until(ctx, 10*time.Minute, 20*time.Second, func(ctx context.Context) (bool, string, error) {
		orphans, err := verify.FindOrphans(ctx, ec2.NewFromConfig(awsCfg), iam.NewFromConfig(awsCfg), region, name)
		return err == nil && orphans.Empty(), "left behind: " + orphans.String(), err
	})
	if err != nil {
		t.Errorf("after destroy of %s: %v", name, err)
		return
	}
	if err := stack.Workspace().RemoveStack(ctx, name); err != nil {
		t.Errorf("removing stack %s: %v", name, err)
	}
}

// accDestroyReserve is the time the acceptance test leaves, below go
// test's own deadline, for destroy and the orphan sweep.
const accDestroyReserve = 45 * time.Minute

func TestAccStackFileIsIgnored(t *testing.T) {
	raw, err := os.ReadFile(".gitignore")
	require.NoError(t, err)
	ignored := false
	for _, line := range strings.Split(string(raw), "\n") {
		if ok, _ := path.Match(strings.TrimPrefix(line, "/"), "Pulumi.acc-a1b2c3.yaml"); ok {
			ignored = true
		}
	}
	assert.True(t, ignored, "the stack file the acceptance test writes must never be committed")
}
