package main

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/bounds"
	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/testkit/fakeaws"
	"nodeless-eks/testkit/fakekube"
	"nodeless-eks/testkit/mock"
	"nodeless-eks/testkit/tokens"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logged is one line the program logged, with the URN of its resource.
type logged struct {
	severity, msg, urn string
}

// logCapture is a pulumi.Log that keeps what the watch says.
type logCapture struct {
	mu    sync.Mutex
	lines []logged
	// said is signalled after each line.
	said chan struct{}
}

func (l *logCapture) add(severity, msg string, args *pulumi.LogArgs) error {
	urn := ""
	if args != nil && args.Resource != nil {
		ch := make(chan string, 1)
		args.Resource.URN().ApplyT(func(u pulumi.URN) error { ch <- string(u); return nil })
		select {
		case urn = <-ch:
		case <-time.After(exportTimeout):
			urn = "(unresolved)"
		}
	}
	l.mu.Lock()
	l.lines = append(l.lines, logged{severity, msg, urn})
	l.mu.Unlock()
	select {
	case l.said <- struct{}{}:
	default:
	}
	return nil
}

func (l *logCapture) Debug(msg string, args *pulumi.LogArgs) error { return l.add("debug", msg, args) }
func (l *logCapture) Info(msg string, args *pulumi.LogArgs) error  { return l.add("info", msg, args) }
func (l *logCapture) Warn(msg string, args *pulumi.LogArgs) error  { return l.add("warning", msg, args) }
func (l *logCapture) Error(msg string, args *pulumi.LogArgs) error { return l.add("error", msg, args) }

func (l *logCapture) find(severity, prefix string) (logged, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if (severity == "" || line.severity == severity) && strings.HasPrefix(line.msg, prefix) {
			return line, true
		}
	}
	return logged{}, false
}

func newCapture() *logCapture { return &logCapture{said: make(chan struct{}, 1)} }

// watchedStack runs the dev stack as `pulumi up` (or a preview) runs it,
// against a fake cluster, logging into capture; it returns the kubeconfigs
// the watch was given. Creating a resource named in hold waits for its
// channel.
func watchedStack(t *testing.T, preview bool, capture *logCapture, cluster func(time.Duration) []kubeapi.Object,
	hold map[string]chan struct{}) ([]string, stackRun) {
	t.Helper()
	var kubeconfigs []string
	var mu sync.Mutex
	origAPI, origLog := bootAPI, bootLog
	t.Cleanup(func() { bootAPI, bootLog = origAPI, origLog })
	bootAPI = func(kubeconfig string) (bootwatch.API, error) {
		mu.Lock()
		defer mu.Unlock()
		kubeconfigs = append(kubeconfigs, kubeconfig)
		return &fakekube.Cluster{Clock: fakekube.NewClock(time.Now()), At: cluster}, nil
	}
	bootLog = func(*pulumi.Context) pulumi.Log { return capture }

	rec := newRecorder(&fakeaws.Account{Vpc: fakeaws.DevVpc()})
	rec.Hold = hold
	run := runStack(t, stackConfig(t, "Pulumi.dev.yaml"), rec, preview)
	require.NoError(t, run.err)

	ended := make(chan struct{})
	go func() { bootWatches.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a bootstrap watch outlived the resource that ends its step")
	}
	mu.Lock()
	defer mu.Unlock()
	return kubeconfigs, run
}

func TestBootstrapWatchNeedsNoClusterInPreview(t *testing.T) {
	capture := newCapture()
	kubeconfigs, _ := watchedStack(t, true, capture, func(time.Duration) []kubeapi.Object { return nil }, nil)
	assert.Empty(t, kubeconfigs, "a preview must not need a cluster")
	assert.Empty(t, capture.lines)
}

func TestBootstrapWatchSaysWhyOnTheResource(t *testing.T) {
	interval := bootWatchInterval
	t.Cleanup(func() { bootWatchInterval = interval })
	bootWatchInterval = 10 * time.Millisecond

	sgNotFound := fakekube.Cond{Type: "SecurityGroupsReady", Status: "False", Reason: "SecurityGroupsNotFound",
		Message: "SecurityGroupSelector did not match any SecurityGroups"}
	label := "nodeless-eks/stack=nodeless-eks.dev"
	var reads atomic.Int32
	cluster := func(time.Duration) []kubeapi.Object {
		// The controller's pod is Ready from the second read on, as on
		// Fargate after a while: the watch sees it start, however slowly
		// the machine runs (only the controller's watch reads until the
		// release, held below, is created).
		pod := fakekube.PodState{Node: "fargate-ip-10-0-1-5", Ready: reads.Add(1) > 1}
		return []kubeapi.Object{
			fakekube.Pod("karpenter", "karpenter-a", "app.kubernetes.io/name=karpenter,app.kubernetes.io/instance=karpenter", "controller", pod),
			fakekube.Object("EC2NodeClass", "default", label, time.Now(), sgNotFound),
			fakekube.Object("NodePool", "general", label, time.Now(),
				fakekube.Cond{Type: "NodeClassReady", Status: "False", Reason: "SecurityGroupsNotFound", Message: "EC2NodeClass not ready"}),
		}
	}
	// As in a real bootstrap, each step's resources are still being created
	// while the watch speaks of them: the release until the controller is
	// Ready, the class, the pool and CoreDNS until the class's and pool's
	// warnings are out. A line logged on one of those resources would wait
	// for it (its URN comes only when it is done), and the test would time
	// out instead.
	capture := newCapture()
	releaseWhen := func(prefixes ...string) chan struct{} {
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			deadline := time.After(exportTimeout)
			for {
				all := true
				for _, p := range prefixes {
					if _, ok := capture.find("", p); !ok {
						all = false
					}
				}
				if all {
					return
				}
				select {
				case <-deadline:
					return
				case <-capture.said:
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		return ch
	}
	nodes := releaseWhen("EC2NodeClass default is not Ready", "NodePool general is not Ready")
	hold := map[string]chan struct{}{
		karpenterName + "-controller":      releaseWhen("Karpenter controller: 1 of 1 pods Ready on Fargate"),
		"eks-demo-nodepools-class-default": nodes, "eks-demo-nodepools-pool-general": nodes, "eks-demo-addons-coredns": nodes,
	}
	start := time.Now()
	kubeconfigs, run := watchedStack(t, false, capture, cluster, hold)
	assert.Less(t, time.Since(start), exportTimeout, "no line waited for a resource still being created")
	rec := run.rec

	require.NotEmpty(t, kubeconfigs)
	for _, k := range kubeconfigs {
		assert.Equal(t, `{"apiVersion":"v1","kind":"Config"}`, k, "the watch reads the cluster through the stack's kubeconfig")
	}

	line, ok := capture.find("info", "Karpenter controller: 1 of 1 pods Ready on Fargate")
	require.True(t, ok, "the controller's progress is said: %v", capture.lines)
	assert.Equal(t, rec.Get(t, "nodeless-eks:karpenter:Karpenter", karpenterName).URN, line.urn, "on Karpenter's component")

	line, ok = capture.find("warning", "EC2NodeClass default is not Ready: SecurityGroupsReady=False (SecurityGroupsNotFound: SecurityGroupSelector did not match any SecurityGroups)")
	require.True(t, ok, "the class's failing condition is said with its reason and message: %v", capture.lines)
	assert.Equal(t, rec.Get(t, "nodeless-eks:nodepool:NodePools", "eks-demo-nodepools").URN, line.urn, "on the node pools' component")

	line, ok = capture.find("warning", "NodePool general is not Ready: NodeClassReady=False (SecurityGroupsNotFound: EC2NodeClass not ready)")
	require.True(t, ok, "%v", capture.lines)
	assert.Equal(t, rec.Get(t, "nodeless-eks:nodepool:NodePools", "eks-demo-nodepools").URN, line.urn)
}

// TestEveryBootstrapWaitIsBounded pins each wait of the bootstrap to its
// bound in internal/bounds: none is left at a provider's default of 10 to
// 20 minutes, and classes and pools are awaited until Ready. Every type
// the stack registers is classified, so that a new type that waits fails
// here until it is bounded.
func TestEveryBootstrapWaitIsBounded(t *testing.T) {
	named := devStackWith(t, map[string]string{"argocd": "true", "metricsServer": "true"}).rec
	own := devStackWith(t, map[string]string{"argocd": "true", "metricsServer": "true", "vpcName": "", "privateSubnetNamePattern": "",
		"podSubnetNamePattern": "", "natGateways": "perAz"}).rec
	want := map[string]time.Duration{
		karpenterName:                               bounds.FargateProfile,
		karpenterName + "-crd":                      bounds.KarpenterCRDs,
		karpenterName + "-controller":               bounds.KarpenterController,
		"eks-demo-nodepools-class-default":          bounds.NodeClass,
		"eks-demo-nodepools-pool-general":           bounds.NodePool,
		"eks-demo-vpc-cni":                          bounds.DaemonSetAddon,
		"eks-demo-addons-kube-proxy":                bounds.DaemonSetAddon,
		"eks-demo-addons-eks-pod-identity-agent":    bounds.DaemonSetAddon,
		"eks-demo-addons-eks-node-monitoring-agent": bounds.DaemonSetAddon,
		"eks-demo-addons-coredns":                   bounds.FirstNode,
		"eks-demo-addons-aws-ebs-csi-driver":        bounds.FirstNode,
		"eks-demo-addons-metrics-server":            bounds.FirstNode,
		"eks-demo-addons-lb-controller":             bounds.ChartOnNodes,
		"eks-demo-addons-argocd":                    bounds.ChartOnNodes,
	}
	// waits are the types whose create waits on the cluster; the rest
	// return when one API call does, or wait only on delete, or are
	// components, each for the reason given.
	waits := []string{tokens.FargateProfile, tokens.HelmRelease, tokens.Addon, tokens.NodePool, tokens.EC2NodeClass}
	noWait := map[string]string{
		"aws:cloudwatch/eventRule:EventRule": "one API call", "aws:cloudwatch/eventTarget:EventTarget": "one API call",
		tokens.LogGroup: "one API call", tokens.SecurityGroup: "one API call", tokens.SecurityGroupRule: "one API call",
		tokens.AccessEntry: "one API call", tokens.AccessPolicyAssociation: "one API call", tokens.PodIdentityAssociation: "one API call",
		tokens.Policy: "one API call", tokens.Role: "one API call", tokens.RolePolicyAttachment: "one API call",
		tokens.KMSKey: "one API call", tokens.Queue: "one API call", tokens.QueuePolicy: "one API call",
		tokens.StorageClass: "an API object with nothing to await", tokens.KubernetesProvider: "a provider",
		tokens.Command: "only its delete runs, bounded by its delete timeout (TestDestroyCleanup)",
		// The account's, created in one call or adopted (karpenter/spot.go).
		tokens.ServiceLinkedRole: "one API call",
		// A VPC the stack makes: each is one call, and what EC2 then makes
		// available in seconds pulumi-aws awaits under its own timeouts
		// (terraform-provider-aws internal/service/ec2: a NAT gateway's 10
		// minutes, for one that AWS makes available in one or two).
		tokens.Vpc: "one API call", tokens.Subnet: "one API call", tokens.InternetGateway: "one API call",
		tokens.RouteTable: "one API call", tokens.RouteTableAssociation: "one API call", tokens.Eip: "one API call",
		tokens.VpcCidrAssociation: "one API call", tokens.Route: "one API call", tokens.DefaultSecurityGroup: "one API call",
		tokens.FlowLog: "one API call",
		// A gateway endpoint is available in seconds; pulumi-aws waits for
		// it under a 10-minute create timeout (vpc_endpoint.go).
		tokens.VpcEndpoint: "seconds, under pulumi-aws's 10-minute create timeout",
		tokens.NatGateway:  "AWS's one or two minutes, under pulumi-aws's 10-minute create timeout",
		// EKS's own ~10 minutes; pulumi-aws's create timeout of 30 minutes
		// (terraform-provider-aws internal/service/eks/cluster.go) is the
		// bound of a step no faster path can replace.
		tokens.EKSCluster: "the control plane, EKS's own 10 minutes under pulumi-aws's 30-minute timeout",
		// Its children are bounded below.
		tokens.ConfigGroup: "a component: its CRDs carry the bound",
	}
	for _, rec := range []*mock.Recorder{named, own} {
		requireEveryWaitBounded(t, rec, want, waits, noWait)
	}
	require.NotEmpty(t, own.OfType(tokens.NatGateway), "the stack without a VPC makes one")
}

func requireEveryWaitBounded(t *testing.T, rec *mock.Recorder, want map[string]time.Duration, waits []string, noWait map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, reg := range rec.All() {
		if strings.HasPrefix(reg.Type, "nodeless-eks:") || reg.Type == "pulumi:pulumi:Stack" || reg.Name == fakeaws.StandInName {
			continue
		}
		if _, ok := noWait[reg.Type]; ok {
			continue
		}
		if !assert.Containsf(t, waits, reg.Type, "%s %s: a type this test has not classified; bound its wait and add it", reg.Type, reg.Name) {
			continue
		}
		bound, ok := want[reg.Name]
		if !assert.True(t, ok, "%s %s waits without a bound from internal/bounds", reg.Type, reg.Name) {
			continue
		}
		seen[reg.Name] = true
		if reg.Type == tokens.HelmRelease {
			// Helm's timeout is the only bound pulumi-kubernetes applies
			// to a release; a custom timeout would only mislead.
			assert.Equal(t, float64(bounds.Seconds(bound)), reg.Inputs["timeout"].NumberValue(), "%s: Helm's timeout", reg.Name)
			assert.Empty(t, reg.CreateTimeout+reg.UpdateTimeout+reg.DeleteTimeout, "%s: custom timeouts a release ignores", reg.Name)
			continue
		}
		assert.Equal(t, bound.String(), reg.CreateTimeout, "%s: create timeout", reg.Name)
		if reg.Type != tokens.FargateProfile { // a profile is replaced, never updated
			assert.Equal(t, bound.String(), reg.UpdateTimeout, "%s: update timeout", reg.Name)
		}
		switch reg.Type {
		case tokens.NodePool, tokens.EC2NodeClass:
			annotations := reg.Inputs["metadata"].ObjectValue()["annotations"].ObjectValue()
			assert.Equal(t, "condition=Ready", annotations["pulumi.com/waitFor"].StringValue(),
				"%s is awaited until Ready, so a class or pool that cannot work fails at itself", reg.Name)
		}
	}
	for name := range want {
		assert.True(t, seen[name], "%s is not registered", name)
	}
	crds := rec.Get(t, tokens.ConfigGroup, "eks-demo-addons-lb-controller-crds").Transformed["kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"]
	assert.Equal(t, bounds.LoadBalancerControllerCRDs.String(), crds.CreateTimeout, "the LB controller's CRDs are awaited within their bound")
	assert.Equal(t, bounds.LoadBalancerControllerCRDs.String(), crds.UpdateTimeout)
}
