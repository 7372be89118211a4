package realapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	karpv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/kubeapi"
)

// lines collects what the watch says.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Info(s bootwatch.Subject, msg string) { l.add("info", s, msg) }
func (l *lines) Warn(s bootwatch.Subject, msg string) { l.add("warn", s, msg) }
func (l *lines) add(level string, s bootwatch.Subject, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprintf("%s %s/%s: %s", level, s.Kind, s.Name, msg))
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// TestBootstrapWatchAgainstARealServer runs the watch, as the program
// runs it during `pulumi up`, through a token kubeconfig, on objects as
// Karpenter and the scheduler leave them: the stack's class and pool
// Ready, a NodeClaim the API server named from "<pool>-" that launched and
// never joined, Karpenter's warning about it, a claim and a warning of
// another stack's pool whose name starts with the stack's, an unscheduled
// CoreDNS pod with Karpenter's FailedScheduling, and a controller pod
// whose image cannot be pulled. What the fakes assert of the watch's
// queries (label and field selectors, the server's names, its
// timestamps) the real server answers here.
func TestBootstrapWatchAgainstARealServer(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	const own = "nodeless-eks/stack=nodeless-eks.watch"
	ownLabels := m{"nodeless-eks/stack": "nodeless-eks.watch"}
	now := time.Now()
	// What the watch read goes, so that the other tests see only theirs.
	t.Cleanup(func() {
		for _, path := range []string{"/apis/karpenter.sh/v1/nodeclaims", "/apis/karpenter.sh/v1/nodepools/watch",
			"/apis/karpenter.sh/v1/nodepools/watch-gpu", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/watch-class",
			"/api/v1/namespaces/kube-system/pods/coredns-6d4b75cb6d-x2x8z", "/api/v1/namespaces/karpenter/pods/karpenter-7d9c8b-abcde?gracePeriodSeconds=0"} {
			s.do(ctxT(), "DELETE", path, "", nil)
		}
	})
	class := s.create(t, nodeClass("watch-class", ownLabels))
	s.setStatus(t, class, m{"conditions": []m{condition("Ready", "True", "", "", now)}})
	pool := s.create(t, nodePool("watch", ownLabels))
	s.setStatus(t, pool, m{"conditions": []m{condition("Ready", "True", "", "", now)}})
	s.create(t, nodePool("watch-gpu", nil)) // another stack's

	ours := s.create(t, nodeClaim("watch", "watch-class"))
	ncName := name(ours)
	require.Regexp(t, `^watch-[bcdfghjklmnpqrstvwxz2456789]{5}$`, ncName, "the API server names a claim from <pool>- as the watch expects")
	labels := m{"karpenter.sh/nodepool": "watch", "node.kubernetes.io/instance-type": "c6g.large",
		"karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": "eu-west-1a"}
	s.must(t, "PATCH", "/apis/karpenter.sh/v1/nodeclaims/"+ncName, "application/merge-patch+json", m{"metadata": m{"labels": labels}})
	s.setStatus(t, ours, m{"providerID": "aws:///eu-west-1a/i-0abc1234def567890", "conditions": []m{
		condition("Launched", "True", "", "", now),
		condition("Registered", "Unknown", "NodeNotFound", "Node not registered with cluster", now)}})
	theirs := s.create(t, nodeClaim("watch-gpu", "watch-class"))
	s.create(t, pod("coredns-6d4b75cb6d-x2x8z", "kube-system", "", "", m{"k8s-app": "kube-dns"}))
	// Karpenter's warnings come while the watch runs (it reads those
	// since it started, and since the pools were Ready), 2 s in: events
	// carry whole seconds. Events about NodeClaims, cluster-scoped, are
	// recorded in default.
	warnedc := make(chan []error, 1) // from the timer's goroutine, where a test may not fail
	warnings := func() {
		var warned []error
		at := time.Now()
		for _, e := range []m{
			event("default", "NodeClaim", ncName, "Warning", "InsufficientCapacityError", "no capacity in eu-west-1a", "karpenter", at),
			event("default", "NodeClaim", name(theirs), "Warning", "InsufficientCapacityError", "not ours", "karpenter", at),
			event("kube-system", "Pod", "coredns-6d4b75cb6d-x2x8z", "Warning", "FailedScheduling",
				"Failed to schedule pod, incompatible with nodepool \"watch\", no instance type satisfied resources", "karpenter", at),
		} {
			status, out, err := s.do(ctxT(), "POST", collection(e), "", e)
			if err == nil && status != 201 {
				err = fmt.Errorf("creating an event: %d: %s", status, out)
			}
			warned = append(warned, err)
		}
		warnedc <- warned
	}

	s.create(t, namespace("karpenter"))
	controllerPod := pod("karpenter-7d9c8b-abcde", "karpenter", "fargate-ip-10-0-1-1", "", m{"app.kubernetes.io/name": "karpenter"})
	controllerPod["spec"].(m)["containers"].([]m)[0]["name"] = "controller"
	controller := s.create(t, controllerPod)
	s.setStatus(t, controller, m{"phase": "Pending", "containerStatuses": []m{{"name": "controller", "ready": false, "restartCount": 0,
		"image": "public.ecr.aws/karpenter/controller:1.14.3", "imageID": "",
		"state": m{"waiting": m{"reason": "ImagePullBackOff", "message": "Back-off pulling image \"public.ecr.aws/karpenter/controller:1.14.3\""}}}}})

	api, err := kubeapi.New(s.Kubeconfig(""))
	require.NoError(t, err)
	o := bootwatch.Options{Namespace: "karpenter", Selector: "app.kubernetes.io/name=karpenter", Container: "controller", OwnLabel: own,
		Interval: 250 * time.Millisecond, StuckAfter: 3 * time.Second, JoinAfter: 3 * time.Second}

	var watched lines
	// The controller's pod is never Ready: the watch runs to its bound.
	bootwatch.Controller(context.Background(), api, &watched, o, 5*time.Second)
	time.AfterFunc(2*time.Second, warnings)
	bootwatch.Nodes(context.Background(), api, &watched, o, 7*time.Second)
	said := watched.String()
	t.Log(said)
	warned := <-warnedc
	require.Len(t, warned, 3)
	for _, err := range warned {
		require.NoError(t, err)
	}

	assert.Contains(t, said, "warn Controller/karpenter-7d9c8b-abcde: pod karpenter-7d9c8b-abcde: container controller cannot start: ImagePullBackOff")
	assert.Contains(t, said, "info EC2NodeClass/watch-class: EC2NodeClass watch-class Ready")
	assert.Contains(t, said, "info NodePool/watch: NodePool watch Ready")
	assert.Contains(t, said, fmt.Sprintf("info NodeClaim/%s: NodeClaim %s of NodePool watch launched c6g.large (on-demand, eu-west-1a)", ncName, ncName))
	assert.Contains(t, said, fmt.Sprintf("warn NodeClaim/%s: NodeClaim %s of NodePool watch launched", ncName, ncName))
	assert.Contains(t, said, "but its node has not joined the cluster: Registered=Unknown (NodeNotFound: Node not registered with cluster)")
	assert.Contains(t, said, "aws ec2 get-console-output --instance-id i-0abc1234def567890")
	assert.Contains(t, said, fmt.Sprintf("NodeClaim %s of NodePool watch: InsufficientCapacityError: no capacity in eu-west-1a", ncName),
		"Karpenter's warning, found by the field selector involvedObject.kind=NodeClaim,type=Warning")
	assert.NotContains(t, said, "not ours", "a claim of pool watch-gpu is not one of watch")
	assert.NotContains(t, said, "NodePool watch-gpu")
	assert.Contains(t, said, "CoreDNS pod coredns-6d4b75cb6d-x2x8z has no node: FailedScheduling: Failed to schedule pod, incompatible with nodepool")
}

// TestBootstrapWatchFailuresAgainstARealServer: the conditions Karpenter
// sets when it cannot go on, written through the status subresources the
// CRDs validate, as the watch says them; a class whose kubelet settings
// the 1.15 CRD stores and the controller refuses, with the controller's
// reason and the message of its own validation; a controller pod that
// turns Ready; and an API server that refuses the watch's token.
func TestBootstrapWatchFailuresAgainstARealServer(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	const own = "nodeless-eks/stack=nodeless-eks.fail"
	ownLabels := m{"nodeless-eks/stack": "nodeless-eks.fail"}
	now := time.Now()
	class := s.create(t, nodeClass("fail-class", ownLabels))
	s.setStatus(t, class, m{"conditions": []m{condition("Ready", "False", "NotReady", "SubnetsReady=False", now),
		condition("SubnetsReady", "False", "SubnetsNotFound", "SubnetSelector did not match any Subnets", now)}})
	// Karpenter 1.15 sets ValidationSucceeded=False with the reason
	// InvalidKubeletConfiguration and its validation's errors joined by
	// "; " (pkg/controllers/nodeclass/validation.go, Reconcile), and Ready
	// False naming it; the class never turns Ready, and `up` waits out its
	// bound saying so.
	kubelet := m{"maxPods": -1, "evictionHard": m{"memory.free": "100Mi"}}
	badKubelet := nodeClass("fail-kubelet", ownLabels)
	badKubelet["spec"].(m)["kubelet"] = kubelet
	kubeletClass := s.create(t, badKubelet)
	raw, err := json.Marshal(kubelet)
	require.NoError(t, err)
	var kc karpv1.KubeletConfiguration
	require.NoError(t, json.Unmarshal(raw, &kc))
	var refusals []string
	for _, e := range karpv1.ValidateKubeletConfig(kc) {
		refusals = append(refusals, e.Error())
	}
	require.NotEmpty(t, refusals, "Karpenter refuses the class")
	s.setStatus(t, kubeletClass, m{"conditions": []m{condition("Ready", "False", "NotReady", "ValidationSucceeded=False", now),
		condition("ValidationSucceeded", "False", "InvalidKubeletConfiguration", strings.Join(refusals, "; "), now)}})
	pool := s.create(t, nodePool("fail", ownLabels))
	s.setStatus(t, pool, m{"conditions": []m{condition("Ready", "True", "", "", now),
		condition("NodeRegistrationHealthy", "False", "RegistrationFailed", "Failed to register node", now)}})
	nc := s.create(t, nodeClaim("fail", "fail-class"))
	s.setStatus(t, nc, m{"conditions": []m{condition("Launched", "Unknown", "LaunchFailed", "InsufficientInstanceCapacity: no c6g.large in eu-west-1a", now)}})
	s.create(t, namespace("karpenter-ok"))
	controller := pod("karpenter-5f6d7c-fghij", "karpenter-ok", "fargate-ip-10-0-1-2", "", m{"app.kubernetes.io/name": "karpenter"})
	controller["spec"].(m)["containers"].([]m)[0]["name"] = "controller"
	stored := s.create(t, controller)
	t.Cleanup(func() {
		for _, path := range []string{"/apis/karpenter.sh/v1/nodeclaims/" + name(nc), "/apis/karpenter.sh/v1/nodepools/fail",
			"/apis/karpenter.k8s.aws/v1/ec2nodeclasses/fail-class", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/fail-kubelet",
			"/api/v1/namespaces/karpenter-ok/pods/karpenter-5f6d7c-fghij?gracePeriodSeconds=0"} {
			s.do(ctxT(), "DELETE", path, "", nil)
		}
	})

	api, err := kubeapi.New(s.Kubeconfig(""))
	require.NoError(t, err)
	o := bootwatch.Options{Namespace: "karpenter-ok", Selector: "app.kubernetes.io/name=karpenter", Container: "controller", OwnLabel: own,
		Interval: 250 * time.Millisecond, StuckAfter: time.Minute}
	var watched lines
	ready := make(chan error, 1)
	time.AfterFunc(time.Second, func() { // the pod turns Ready after the watch's first read
		status, out, err := s.do(ctxT(), "PATCH", "/api/v1/namespaces/karpenter-ok/pods/"+name(stored)+"/status", "application/merge-patch+json",
			m{"status": m{"phase": "Running", "conditions": []m{{"type": "Ready", "status": "True"}}}})
		if err == nil && status != 200 {
			err = fmt.Errorf("%d: %s", status, out)
		}
		ready <- err
	})
	bootwatch.Controller(context.Background(), api, &watched, o, 10*time.Second)
	require.NoError(t, <-ready)
	bootwatch.Nodes(context.Background(), api, &watched, o, 2*time.Second)

	refused, err := kubeapi.New(strings.Replace(s.Kubeconfig(""), s.Token, "expired-token", 1))
	require.NoError(t, err)
	bootwatch.Controller(context.Background(), refused, &watched, o, time.Second)
	said := watched.String()
	t.Log(said)

	assert.Contains(t, said, "info Controller/karpenter-ok: Karpenter controller: 1 of 1 pods Ready on Fargate")
	assert.Contains(t, said, "warn EC2NodeClass/fail-class: EC2NodeClass fail-class is not Ready: "+
		"SubnetsReady=False (SubnetsNotFound: SubnetSelector did not match any Subnets)")
	assert.Contains(t, said, "warn EC2NodeClass/fail-kubelet: EC2NodeClass fail-kubelet is not Ready: "+
		"ValidationSucceeded=False (InvalidKubeletConfiguration: "+strings.Join(refusals, "; ")+")")
	assert.Contains(t, said, `spec.kubelet.maxPods: -1 can't be negative`)
	assert.Contains(t, said, "warn NodePool/fail: NodePool fail: its nodes do not launch or join: RegistrationFailed: Failed to register node")
	assert.Contains(t, said, fmt.Sprintf("NodeClaim %s of NodePool fail cannot launch: LaunchFailed: InsufficientInstanceCapacity: no c6g.large in eu-west-1a", name(nc)))
	assert.Contains(t, said, "warn Controller/karpenter-ok: cannot read the Karpenter controller's pods")
	assert.Contains(t, said, "401")
}

// TestBootstrapWatchQuietOrStuckAgainstARealServer: an update that
// changes nothing gets no line from either watch and neither waits; and
// what is said only once a wait has lasted StuckAfter (2 s here, 2 min in
// the program) is said of objects the real server stores: controller pods
// not scheduled (with and without the scheduler's event) or running and
// never Ready (their log unreadable: no kubelet), a namespace without the
// controller's pods, a class and a pool the controller never reconciled,
// and CoreDNS pods without a node after the pools were Ready.
func TestBootstrapWatchQuietOrStuckAgainstARealServer(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	now := time.Now()
	var created []string // paths to delete, so that the other tests see only theirs
	t.Cleanup(func() {
		for _, path := range created {
			s.do(ctxT(), "DELETE", path, "", nil)
		}
	})
	keep := func(obj m) m {
		stored := s.create(t, obj)
		path := collection(stored) + "/" + name(stored)
		if stored["kind"] == "Pod" {
			path += "?gracePeriodSeconds=0" // on a node without a kubelet: gone only when told at once
		}
		created = append(created, path)
		return stored
	}
	readyPod := func(p m) {
		s.setStatus(t, p, m{"phase": "Running", "conditions": []m{{"type": "Ready", "status": "True"}}})
	}
	const ec2Node = "ip-10-0-1-10.eu-west-1.compute.internal"

	t.Run("an up that changes nothing", func(t *testing.T) {
		labels := m{"nodeless-eks/stack": "nodeless-eks.quiet"}
		for _, o := range []m{nodeClass("quiet-class", labels), nodePool("quiet", labels)} {
			s.setStatus(t, keep(o), m{"conditions": []m{condition("Ready", "True", "", "", now)}})
		}
		nc := keep(nodeClaim("quiet", "quiet-class"))
		s.setStatus(t, nc, m{"conditions": []m{condition("Launched", "True", "", "", now), condition("Registered", "True", "", "", now)}})
		keep(namespace("karpenter-quiet"))
		readyPod(keep(pod("karpenter-quiet-abcde", "karpenter-quiet", "fargate-ip-10-0-1-4", "", m{"app.kubernetes.io/name": "karpenter"})))
		dns := keep(pod("coredns-quiet-x1", "kube-system", ec2Node, "", m{"k8s-app": "kube-dns"}))
		readyPod(dns)

		api, err := kubeapi.New(s.Kubeconfig(""))
		require.NoError(t, err)
		// The server stamps what it creates with the time now; the watch's
		// clock runs 2 minutes ahead, so that the objects are as old as
		// they are on a cluster that was already up.
		o := bootwatch.Options{Namespace: "karpenter-quiet", Selector: "app.kubernetes.io/name=karpenter", Container: "controller",
			OwnLabel: "nodeless-eks/stack=nodeless-eks.quiet", Interval: 5 * time.Second, StuckAfter: 2 * time.Second,
			Now: func() time.Time { return time.Now().Add(2 * time.Minute) }}
		var watched lines
		began := time.Now()
		bootwatch.Controller(context.Background(), api, &watched, o, 10*time.Second)
		bootwatch.Nodes(context.Background(), api, &watched, o, 10*time.Second)
		took := time.Since(began)
		assert.Empty(t, watched.String())
		assert.Less(t, took, o.Interval, "both done at the first read, without a second")

		// CoreDNS's pods of the next part must be the only ones.
		status, out, err := s.do(ctxT(), "DELETE", "/api/v1/namespaces/kube-system/pods/coredns-quiet-x1?gracePeriodSeconds=0", "", nil)
		require.NoError(t, err)
		require.Equal(t, 200, status, "%s", out)
	})

	t.Run("waits past StuckAfter", func(t *testing.T) {
		o := bootwatch.Options{Namespace: "karpenter-stuck", Selector: "app.kubernetes.io/name=karpenter", Container: "controller",
			Interval: 250 * time.Millisecond, StuckAfter: 2 * time.Second}
		controller := m{"app.kubernetes.io/name": "karpenter"}
		keep(namespace("karpenter-stuck"))
		// Taken by Fargate's webhook, and still waiting.
		keep(onFargate(pod("karpenter-stuck-unsch", "karpenter-stuck", "", "", controller)))
		keep(onFargate(pod("karpenter-stuck-quiet", "karpenter-stuck", "", "", controller)))
		readyLess := keep(pod("karpenter-stuck-runng", "karpenter-stuck", "fargate-ip-10-0-1-5", "", controller))
		s.setStatus(t, readyLess, m{"phase": "Running", "conditions": []m{{"type": "Ready", "status": "False"}}})
		keep(event("karpenter-stuck", "Pod", "karpenter-stuck-unsch", "Warning", "FailedScheduling",
			"0/0 nodes are available: no nodes available to schedule pods.", "default-scheduler", now))

		unreconciled := m{"nodeless-eks/stack": "nodeless-eks.unreconciled"}
		keep(nodeClass("unreconciled-class", unreconciled))
		keep(nodePool("unreconciled", unreconciled))

		nodns := m{"nodeless-eks/stack": "nodeless-eks.nodns"}
		for _, obj := range []m{nodeClass("nodns-class", nodns), nodePool("nodns", nodns)} {
			s.setStatus(t, keep(obj), m{"conditions": []m{condition("Ready", "True", "", "", now)}})
		}
		keep(pod("coredns-nodns-x1", "kube-system", "", "", m{"k8s-app": "kube-dns"}))
		keep(pod("coredns-nodns-x2", "kube-system", "", "", m{"k8s-app": "kube-dns"}))

		api, err := kubeapi.New(s.Kubeconfig(""))
		require.NoError(t, err)
		var watched lines
		bootwatch.Controller(context.Background(), api, &watched, o, 3*time.Second)
		none := o
		none.Namespace = "karpenter-none"
		bootwatch.Controller(context.Background(), api, &watched, none, 3*time.Second)
		o.OwnLabel = "nodeless-eks/stack=nodeless-eks.unreconciled"
		bootwatch.Nodes(context.Background(), api, &watched, o, 3*time.Second)
		// The scheduler's word on a CoreDNS pod comes after the pools are
		// Ready (the watch reads events since then); events carry whole
		// seconds, so this one is stamped a second ahead.
		posted := make(chan error, 1)
		time.AfterFunc(time.Second, func() {
			e := event("kube-system", "Pod", "coredns-nodns-x1", "Warning", "FailedScheduling",
				"0/2 nodes are available: 2 node(s) had untolerated taint {eks.amazonaws.com/compute-type: fargate}.", "default-scheduler",
				time.Now().Add(time.Second))
			status, out, err := s.do(ctxT(), "POST", collection(e), "", e)
			if err == nil && status != 201 {
				err = fmt.Errorf("creating an event: %d: %s", status, out)
			}
			posted <- err
		})
		o.OwnLabel = "nodeless-eks/stack=nodeless-eks.nodns"
		bootwatch.Nodes(context.Background(), api, &watched, o, 4*time.Second)
		require.NoError(t, <-posted)
		said := watched.String()
		t.Log(said)

		for _, want := range []string{
			"warn Controller/karpenter-stuck-unsch: pod karpenter-stuck-unsch is not scheduled after 2s: FailedScheduling: 0/0 nodes are available",
			"warn Controller/karpenter-stuck-quiet: pod karpenter-stuck-quiet is not scheduled after 2s, and no event says why: Fargate schedules",
			"warn Controller/karpenter-stuck-runng: pod karpenter-stuck-runng runs on fargate-ip-10-0-1-5 but is not Ready after 2s; its last log lines:\n    (no log lines)",
			"warn Controller/karpenter-none: no Karpenter controller pod in namespace karpenter-none after 2s",
			"warn EC2NodeClass/unreconciled-class: EC2NodeClass unreconciled-class has no status after 2s: the Karpenter controller has not reconciled it",
			"warn NodePool/unreconciled: NodePool unreconciled has no status after 2s: the Karpenter controller has not reconciled it",
			"info NodePool/nodns: NodePool nodns Ready",
			"warn CoreDNS/coredns-nodns-x1: CoreDNS pod coredns-nodns-x1 has no node 2s after the node pools were Ready: FailedScheduling: 0/2 nodes are available: 2 node(s) had untolerated taint",
			"warn CoreDNS/coredns-nodns-x2: CoreDNS pod coredns-nodns-x2 has no node 2s after the node pools were Ready: no event explains it",
		} {
			assert.Contains(t, said, want)
		}
		warned := 0
		for _, line := range strings.Split(said, "\n") {
			if strings.HasPrefix(line, "warn ") {
				warned++
			}
		}
		assert.Equal(t, 8, warned, "each cause said once, and nothing else warned")
	})
}

// onFargate gives a pod the scheduler EKS's Fargate webhook gives the pods
// a profile selects.
func onFargate(pod m) m {
	pod["spec"].(m)["schedulerName"] = bootwatch.FargateScheduler
	return pod
}

// TestBootstrapWatchRecreatesPodsThatMissedFargate: a controller pod the
// API server stored with its default scheduler, which no node will take
// on a cluster whose only compute is Fargate (the profile was not yet in
// effect when it was created: eksctl-io/eksctl#3615), is deleted by the
// watch once StuckAfter passed, and the watch says so; a pod Fargate's
// webhook took stays. The real server deletes an unscheduled pod at once.
func TestBootstrapWatchRecreatesPodsThatMissedFargate(t *testing.T) {
	s := need(t)
	const ns = "karpenter-missed"
	s.create(t, namespace(ns))
	t.Cleanup(func() { s.do(ctxT(), "DELETE", "/api/v1/namespaces/"+ns, "", nil) })
	controller := m{"app.kubernetes.io/name": "karpenter"}
	missed := s.create(t, pod("karpenter-missed-aaaaa", ns, "", "", controller))
	require.Equal(t, "default-scheduler", missed["spec"].(map[string]any)["schedulerName"], "the API server's default")
	s.create(t, onFargate(pod("karpenter-missed-bbbbb", ns, "", "", controller)))

	api, err := kubeapi.New(s.Kubeconfig(""))
	require.NoError(t, err)
	var watched lines
	bootwatch.Controller(context.Background(), api, &watched, bootwatch.Options{Namespace: ns, Selector: "app.kubernetes.io/name=karpenter",
		Container: "controller", Interval: 250 * time.Millisecond, StuckAfter: 2 * time.Second}, 4*time.Second)
	said := watched.String()
	t.Log(said)

	status, _, err := s.do(ctxT(), "GET", "/api/v1/namespaces/"+ns+"/pods/karpenter-missed-aaaaa", "", nil)
	require.NoError(t, err)
	assert.Equal(t, 404, status, "the pod that missed Fargate is gone, for its ReplicaSet to create again")
	status, _, err = s.do(ctxT(), "GET", "/api/v1/namespaces/"+ns+"/pods/karpenter-missed-bbbbb", "", nil)
	require.NoError(t, err)
	assert.Equal(t, 200, status, "the pod Fargate took stays")
	assert.Contains(t, said, "warn Controller/karpenter-missed-aaaaa: pod karpenter-missed-aaaaa waited 2s for a scheduler other than "+
		"Fargate's (default-scheduler): the Fargate profile was not yet in effect when it was created (eksctl-io/eksctl#3615). Deleted it")
	assert.Equal(t, 1, strings.Count(said, "Deleted it"), "once")
}
