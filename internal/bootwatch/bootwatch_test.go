package bootwatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"nodeless-eks/internal/bootwatch"
	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/testkit/fakekube"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// line is one line the user would see, and when.
type line struct {
	at      time.Duration
	warn    bool
	subject bootwatch.Subject
	msg     string
}

func (l line) String() string {
	sev := "info"
	if l.warn {
		sev = "warning"
	}
	return fmt.Sprintf("%s %s %s/%s: %s", l.at, sev, l.subject.Kind, l.subject.Name, l.msg)
}

type sink struct {
	clock *fakekube.Clock
	lines []line
}

func (s *sink) Info(subj bootwatch.Subject, msg string) {
	s.lines = append(s.lines, line{s.clock.Elapsed(), false, subj, msg})
}

func (s *sink) Warn(subj bootwatch.Subject, msg string) {
	s.lines = append(s.lines, line{s.clock.Elapsed(), true, subj, msg})
}

func (s *sink) warnings() []line {
	var out []line
	for _, l := range s.lines {
		if l.warn {
			out = append(out, l)
		}
	}
	return out
}

const (
	ns       = "karpenter"
	selector = "app.kubernetes.io/name=karpenter"
	own      = "nodeless-eks/stack=nodeless-eks.dev"
	fargate  = "fargate-ip-10-0-1-5.eu-west-1.compute.internal"
	ec2Node  = "ip-10-0-2-7.eu-west-1.compute.internal"
)

// run watches a fake cluster whose objects at each moment are at, on a
// fake clock, until the watch returns; it returns the lines and how long
// the watch ran.
func run(t *testing.T, watch func(context.Context, bootwatch.API, bootwatch.Sink, bootwatch.Options, time.Duration),
	bound time.Duration, at func(time.Duration) []kubeapi.Object, logs map[string]string) (*sink, time.Duration) {
	t.Helper()
	clock := fakekube.NewClock(t0)
	cluster := &fakekube.Cluster{Clock: clock, At: at, LogText: logs, LogsMove: true}
	s := &sink{clock: clock}
	watch(context.Background(), cluster, s, bootwatch.Options{
		Namespace: ns, Selector: selector, Container: "controller", OwnLabel: own,
		Interval: 10 * time.Second, StuckAfter: 2 * time.Minute,
		Now: clock.Now, Sleep: clock.Sleep,
	}, bound)
	for _, l := range s.lines {
		t.Log(l)
	}
	return s, clock.Elapsed()
}

func controllerPod(name string, s fakekube.PodState) kubeapi.Object {
	return fakekube.Pod(ns, name, selector, "controller", s)
}

func TestControllerHealthy(t *testing.T) {
	s, took := run(t, bootwatch.Controller, 8*time.Minute, func(e time.Duration) []kubeapi.Object {
		state := fakekube.PodState{}
		if e >= time.Minute {
			state.Node = fargate
		}
		state.Ready = e >= 90*time.Second
		return []kubeapi.Object{controllerPod("karpenter-a", state), controllerPod("karpenter-b", state)}
	}, nil)
	require.Len(t, s.lines, 1, "one progress line, no warnings")
	assert.False(t, s.lines[0].warn)
	assert.Equal(t, "Karpenter controller: 2 of 2 pods Ready on Fargate (1m30s)", s.lines[0].msg)
	assert.Equal(t, 90*time.Second, took, "the watch ends as soon as the controller is Ready")
}

func TestControllerFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pod is the controller pod at each moment; events and logs go with it.
		pod    func(time.Duration) fakekube.PodState
		events []kubeapi.Object
		logs   map[string]string
		// want is the warning, said once, no later than by.
		want []string
		by   time.Duration
	}{
		{
			name: "no Fargate profile selects the namespace",
			pod:  func(time.Duration) fakekube.PodState { return fakekube.PodState{} },
			events: []kubeapi.Object{fakekube.Event(ns, "Pod", "karpenter-a", "Warning", "FailedScheduling",
				"0/0 nodes are available: no nodes available to schedule pods.", t0.Add(5*time.Second))},
			want: []string{"pod karpenter-a is not scheduled after 2m0s: FailedScheduling: 0/0 nodes are available"},
			by:   2 * time.Minute,
		},
		{
			name: "unscheduled without any event",
			pod:  func(time.Duration) fakekube.PodState { return fakekube.PodState{} },
			want: []string{"pod karpenter-a is not scheduled after 2m0s, and no event says why: Fargate schedules a pod that an ACTIVE profile's selectors match (namespace karpenter"},
			by:   2 * time.Minute,
		},
		{
			name: "the image cannot be pulled",
			pod: func(e time.Duration) fakekube.PodState {
				if e < 70*time.Second {
					return fakekube.PodState{Node: fargate}
				}
				return fakekube.PodState{Node: fargate, Waiting: "ImagePullBackOff", Message: `Back-off pulling image "public.ecr.aws/karpenter/controller:1.14.3"`}
			},
			want: []string{`pod karpenter-a: container controller cannot start: ImagePullBackOff: Back-off pulling image "public.ecr.aws/karpenter/controller:1.14.3"`},
			by:   70 * time.Second,
		},
		{
			name: "IRSA trust refuses the service account: the controller crashes",
			pod: func(e time.Duration) fakekube.PodState {
				if e < 100*time.Second {
					return fakekube.PodState{Node: fargate}
				}
				return fakekube.PodState{Node: fargate, Waiting: "CrashLoopBackOff", Message: "back-off 20s restarting failed container"}
			},
			logs: map[string]string{ns + "/karpenter-a/controller": "panic: operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 403, api error AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity\n"},
			want: []string{"pod karpenter-a: container controller keeps crashing (Error, exit code 1); its last log lines:\n    panic: operation error STS: AssumeRoleWithWebIdentity"},
			by:   100 * time.Second,
		},
		{
			name: "running but never Ready",
			pod: func(time.Duration) fakekube.PodState {
				return fakekube.PodState{Node: fargate}
			},
			logs: map[string]string{ns + "/karpenter-a/controller": `{"level":"ERROR","message":"failed to discover cluster CIDR","error":"dial tcp: lookup sts.eu-west-1.amazonaws.com: i/o timeout"}`},
			want: []string{"pod karpenter-a runs on " + fargate + " but is not Ready after 2m0s; its last log lines:\n    {\"level\":\"ERROR\",\"message\":\"failed to discover cluster CIDR\""},
			by:   2 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, took := run(t, bootwatch.Controller, 8*time.Minute, func(e time.Duration) []kubeapi.Object {
				return append([]kubeapi.Object{controllerPod("karpenter-a", tc.pod(e))}, tc.events...)
			}, tc.logs)
			warnings := s.warnings()
			require.Len(t, warnings, len(tc.want), "each cause said once")
			for i, w := range warnings {
				assert.True(t, strings.HasPrefix(w.msg, tc.want[i]), "got %q\nwant %q...", w.msg, tc.want[i])
				assert.LessOrEqual(t, w.at, tc.by, "said at the first read that shows it")
				assert.Equal(t, bootwatch.Subject{Kind: bootwatch.KindController, Name: "karpenter-a"}, w.subject)
			}
			assert.Equal(t, 8*time.Minute, took, "a controller that never gets Ready is watched until its bound, no longer")
		})
	}
}

// TestControllerPodsThatMissedFargateAreRecreated: pods created while the
// Fargate profile was not yet in effect keep default-scheduler and wait
// for good (eksctl-io/eksctl#3615); the watch deletes each once, after
// StuckAfter, says so, and their ReplicaSet's new pods run on Fargate.
func TestControllerPodsThatMissedFargateAreRecreated(t *testing.T) {
	clock := fakekube.NewClock(t0)
	missed := fakekube.PodState{Scheduler: "default-scheduler"}
	cluster := &fakekube.Cluster{Clock: clock, At: func(e time.Duration) []kubeapi.Object {
		// The ReplicaSet's replacements appear 10 s after a deletion and
		// are on Fargate a minute later.
		pods := []kubeapi.Object{controllerPod("karpenter-a", missed), controllerPod("karpenter-b", missed)}
		if e >= 2*time.Minute+10*time.Second {
			state := fakekube.PodState{Created: t0.Add(2*time.Minute + 10*time.Second)}
			if e >= 3*time.Minute+10*time.Second {
				state.Node, state.Ready = fargate, true
			}
			pods = append(pods, controllerPod("karpenter-c", state), controllerPod("karpenter-d", state))
		}
		return pods
	}}
	s := &sink{clock: clock}
	bootwatch.Controller(context.Background(), cluster, s, bootwatch.Options{Namespace: ns, Selector: selector, Container: "controller",
		Interval: 10 * time.Second, StuckAfter: 2 * time.Minute, Now: clock.Now, Sleep: clock.Sleep}, 8*time.Minute)
	for _, l := range s.lines {
		t.Log(l)
	}
	assert.Equal(t, []string{ns + "/karpenter-a", ns + "/karpenter-b"}, cluster.Deleted(), "each pod that missed Fargate, once")
	warnings := s.warnings()
	require.Len(t, warnings, 2)
	for i, pod := range []string{"karpenter-a", "karpenter-b"} {
		assert.Equal(t, 2*time.Minute, warnings[i].at, "deleted at the first read after StuckAfter")
		assert.Equal(t, bootwatch.Subject{Kind: bootwatch.KindController, Name: pod}, warnings[i].subject)
		assert.Contains(t, warnings[i].msg, "pod "+pod+" waited 2m0s for a scheduler other than Fargate's (default-scheduler): the Fargate "+
			"profile was not yet in effect when it was created (eksctl-io/eksctl#3615). Deleted it so that its ReplicaSet creates it again")
	}
	assert.Contains(t, warnings[1].msg, "(2 of at most 2)")
	assert.Equal(t, "Karpenter controller: 2 of 2 pods Ready on Fargate (3m10s)", s.lines[len(s.lines)-1].msg)
	assert.Equal(t, 3*time.Minute+10*time.Second, clock.Elapsed(), "the watch ends when the new pods are Ready")

	t.Run("at most twice, then the cause is said", func(t *testing.T) {
		clock := fakekube.NewClock(t0)
		cluster := &fakekube.Cluster{Clock: clock, At: func(e time.Duration) []kubeapi.Object {
			// A namespace no profile selects: every replacement misses too.
			var pods []kubeapi.Object
			for i := 0; i <= int(e/time.Minute); i++ {
				pods = append(pods, controllerPod(fmt.Sprintf("karpenter-%d", i),
					fakekube.PodState{Scheduler: "default-scheduler", Created: t0.Add(time.Duration(i) * time.Minute)}))
			}
			return pods
		}}
		s := &sink{clock: clock}
		bootwatch.Controller(context.Background(), cluster, s, bootwatch.Options{Namespace: ns, Selector: selector, Container: "controller",
			Interval: 10 * time.Second, StuckAfter: 2 * time.Minute, Now: clock.Now, Sleep: clock.Sleep}, 8*time.Minute)
		assert.Len(t, cluster.Deleted(), bootwatch.MaxRecreations)
		last := s.warnings()[len(s.warnings())-1]
		assert.Contains(t, last.msg, "is not scheduled after 2m0s, and no event says why")
	})
}

func TestControllerUnreadable(t *testing.T) {
	clock := fakekube.NewClock(t0)
	s := &sink{clock: clock}
	cluster := &fakekube.Cluster{Clock: clock, Err: errors.New(`Get "https://ABC.gr7.eu-west-1.eks.amazonaws.com/api/v1/namespaces/karpenter/pods": dial tcp: i/o timeout`)}
	bootwatch.Controller(context.Background(), cluster, s, bootwatch.Options{Namespace: ns, Selector: selector, Interval: 10 * time.Second, StuckAfter: 2 * time.Minute, Now: clock.Now, Sleep: clock.Sleep}, 8*time.Minute)
	require.Len(t, s.lines, 1, "said once, not every 10 seconds")
	assert.Contains(t, s.lines[0].msg, "cannot read the Karpenter controller's pods: Get")
	assert.Equal(t, 8*time.Minute, clock.Elapsed())
}

func TestWatchStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the release was created: Pulumi has its verdict
	clock := fakekube.NewClock(t0)
	s := &sink{clock: clock}
	cluster := &fakekube.Cluster{Clock: clock, At: func(time.Duration) []kubeapi.Object { return nil }}
	bootwatch.Nodes(ctx, cluster, s, bootwatch.Options{Interval: 10 * time.Second, StuckAfter: 2 * time.Minute, Now: clock.Now, Sleep: clock.Sleep}, 18*time.Minute)
	assert.Empty(t, s.lines)
	assert.Zero(t, clock.Elapsed())
}

// bootstrap is a cluster from the moment the Karpenter release is created:
// the class and pool appear at 5s, CoreDNS's two pods at 30s; faults
// change it.
type bootstrap struct {
	class, pool []fakekube.Cond
	// claims and events appear with the pods; dnsNode is where CoreDNS
	// runs from dnsReadyAt (never when zero).
	claims     func(time.Duration) []kubeapi.Object
	events     []kubeapi.Object
	dnsNode    string
	dnsReadyAt time.Duration
	foreign    []kubeapi.Object
}

func (b bootstrap) at(e time.Duration) []kubeapi.Object {
	var objs []kubeapi.Object
	if e >= 5*time.Second {
		objs = append(objs,
			fakekube.Object("EC2NodeClass", "default", own, t0.Add(5*time.Second), b.class...),
			fakekube.Object("NodePool", "default", own, t0.Add(5*time.Second), b.pool...))
	}
	objs = append(objs, b.foreign...)
	if e < 30*time.Second {
		return objs
	}
	if b.claims != nil {
		objs = append(objs, b.claims(e)...)
	}
	objs = append(objs, b.events...)
	for _, name := range []string{"coredns-5d8b-x1", "coredns-5d8b-x2"} {
		state := fakekube.PodState{}
		if b.dnsReadyAt > 0 && e >= b.dnsReadyAt {
			state = fakekube.PodState{Node: b.dnsNode, Ready: true}
		}
		objs = append(objs, fakekube.Pod("kube-system", name, "k8s-app=kube-dns", "coredns", state))
	}
	return objs
}

func TestNodesHealthy(t *testing.T) {
	b := bootstrap{
		class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
		claims: func(e time.Duration) []kubeapi.Object {
			conds := []fakekube.Cond{{Type: "Launched", Status: "True"}}
			if e >= 90*time.Second {
				conds = append(conds, fakekube.Cond{Type: "Registered", Status: "True"})
			}
			return []kubeapi.Object{fakekube.NodeClaim("default-x7k2p", "default", "c6g.large", "on-demand", "eu-west-1a", ec2Node, t0.Add(28*time.Second), conds...)}
		},
		dnsNode: ec2Node, dnsReadyAt: 150 * time.Second,
	}
	s, took := run(t, bootwatch.Nodes, 18*time.Minute, b.at, nil)
	var got []string
	for _, l := range s.lines {
		assert.False(t, l.warn, "a healthy bootstrap has no warnings: %s", l)
		got = append(got, l.String())
	}
	assert.Equal(t, []string{
		"10s info EC2NodeClass/default: EC2NodeClass default Ready",
		"10s info NodePool/default: NodePool default Ready",
		"30s info NodeClaim/default-x7k2p: NodeClaim default-x7k2p of NodePool default launched c6g.large (on-demand, eu-west-1a), 23s after the pool appeared",
		"1m30s info NodeClaim/default-x7k2p: NodeClaim default-x7k2p of NodePool default registered as node " + ec2Node,
		"2m30s info CoreDNS/coredns: CoreDNS: 2 of 2 pods Ready on Karpenter's nodes (2m30s)",
	}, got, "and nothing more while it goes on")
	assert.Equal(t, 18*time.Minute, took, "the pods Ready may be EKS's pre-installed CoreDNS: it watches until the add-on is created (the caller cancels) or its bound")
}

// TestNodesAfterCoreDNSIsReady: EKS's pre-installed CoreDNS pods can run
// Ready before the add-on's own replace them; the watch goes on, and says
// why the add-on's pods do not run.
func TestNodesAfterCoreDNSIsReady(t *testing.T) {
	b := bootstrap{
		class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
		dnsNode: ec2Node, dnsReadyAt: 2 * time.Minute,
	}
	at := func(e time.Duration) []kubeapi.Object {
		objs := b.at(e)
		if e < 3*time.Minute {
			return objs
		}
		// The add-on's rollout: new pods that no pool can take.
		for _, name := range []string{"coredns-7f9c-y1", "coredns-7f9c-y2"} {
			objs = append(objs, fakekube.Pod("kube-system", name, "k8s-app=kube-dns", "coredns", fakekube.PodState{}),
				fakekube.From("karpenter", fakekube.Event("kube-system", "Pod", name, "Warning", "FailedScheduling",
					`Failed to schedule pod, incompatible with nodepool "default", no instance type satisfied resources`, t0.Add(3*time.Minute))))
		}
		return objs
	}
	s, took := run(t, bootwatch.Nodes, 18*time.Minute, at, nil)
	var got []string
	for _, l := range s.lines {
		got = append(got, l.String())
	}
	require.Len(t, s.warnings(), 2, "%v", got)
	assert.Contains(t, got, "2m0s info CoreDNS/coredns: CoreDNS: 2 of 2 pods Ready on Karpenter's nodes (2m0s)")
	assert.Contains(t, s.warnings()[0].msg, "CoreDNS pod coredns-7f9c-y1 has no node: FailedScheduling")
	assert.Equal(t, 3*time.Minute, s.warnings()[0].at)
	assert.Equal(t, 18*time.Minute, took)
}

// TestNodesThatNeverJoin follows a node that launches at 1 minute and
// never joins, as Karpenter reports it: Launched True, Registered Unknown
// (NodeNotFound) and no event, until the pool's NodeRegistrationHealthy
// turns False when the claim times out 15 minutes after its creation. The
// watch says so within 3 minutes of the launch, on the claim, and CoreDNS
// is not also called stuck.
func TestNodesThatNeverJoin(t *testing.T) {
	created, launched := t0.Add(30*time.Second), t0.Add(time.Minute)
	at := func(e time.Duration) []kubeapi.Object {
		pool := []fakekube.Cond{fakekube.Ready}
		if e >= 15*time.Minute+30*time.Second {
			pool = append(pool, fakekube.Cond{Type: "NodeRegistrationHealthy", Status: "False", Reason: "RegistrationFailed", Message: "Failed to register node"})
		}
		b := bootstrap{class: []fakekube.Cond{fakekube.Ready}, pool: pool, claims: func(e time.Duration) []kubeapi.Object {
			if e >= 15*time.Minute+30*time.Second {
				return nil // Karpenter deleted it at its registration timeout
			}
			conds := []fakekube.Cond{{Type: "Launched", Status: "Unknown", Reason: "AwaitingReconciliation"},
				{Type: "Registered", Status: "Unknown", Reason: "AwaitingReconciliation"}}
			if e >= time.Minute {
				conds = []fakekube.Cond{{Type: "Launched", Status: "True"},
					{Type: "Registered", Status: "Unknown", Reason: "NodeNotFound", Message: "Node not registered with cluster"}}
			}
			nc := fakekube.NodeClaim("default-x7k2p", "default", "c6g.large", "on-demand", "eu-west-1a", "", launched, conds...)
			nc["metadata"].(map[string]any)["creationTimestamp"] = created.Format(time.RFC3339)
			nc["status"].(map[string]any)["providerID"] = "aws:///eu-west-1a/i-0abc1234def567890"
			return []kubeapi.Object{nc}
		}}
		return b.at(e)
	}
	s, _ := run(t, bootwatch.Nodes, 18*time.Minute, at, nil)
	warnings := s.warnings()
	require.Len(t, warnings, 2, "the claim, then the pool; CoreDNS is explained by them")
	join := warnings[0]
	assert.Equal(t, bootwatch.Subject{Kind: bootwatch.KindNodeClaim, Name: "default-x7k2p", Pool: "default"}, join.subject)
	assert.LessOrEqual(t, join.at, time.Minute+bootwatch.DefaultJoinAfter+time.Minute, "within a minute of JoinAfter past the launch")
	assert.GreaterOrEqual(t, join.at, time.Minute+bootwatch.DefaultJoinAfter, "not before a slow healthy node (a GPU node) would have joined")
	assert.Contains(t, join.msg, "NodeClaim default-x7k2p of NodePool default launched 5m0s ago, but its node has not joined the cluster: "+
		"Registered=Unknown (NodeNotFound: Node not registered with cluster)")
	assert.Contains(t, join.msg, "the node role's access entry (type EC2_LINUX)")
	assert.Contains(t, join.msg, "aws ec2 get-console-output --instance-id i-0abc1234def567890")
	assert.Equal(t, bootwatch.Subject{Kind: bootwatch.KindNodePool, Name: "default"}, warnings[1].subject)
	assert.Contains(t, warnings[1].msg, "NodePool default: its nodes do not launch or join: RegistrationFailed: Failed to register node")
	assert.GreaterOrEqual(t, warnings[1].at, 15*time.Minute, "Karpenter says so only after its registration timeout")
}

// TestJoinIsAgedOnTheServersClock: a NodeClaim launched on the API
// server's clock is aged on that clock, not this machine's: with this
// machine ten minutes ahead, a node launched a minute ago is not said to
// be overdue; with the server's own clock it is said only past JoinAfter.
func TestJoinIsAgedOnTheServersClock(t *testing.T) {
	server := time.Now().Add(-10 * time.Minute) // this machine runs ten minutes ahead of the server
	skewed := skewedAPI{server: server}
	launched := server.Add(-time.Minute)
	nc := fakekube.NodeClaim("default-abcde", "default", "c6g.large", "on-demand", "eu-west-1a", "", launched,
		fakekube.Cond{Type: "Launched", Status: "True"}, fakekube.Cond{Type: "Registered", Status: "Unknown", Reason: "NodeNotFound"})
	o := bootwatch.Options{}
	assert.WithinDuration(t, server, bootwatch.ServerNowForTest(o, skewed), time.Second, "the server's clock, where it knows it")
	assert.WithinDuration(t, time.Now(), bootwatch.ServerNowForTest(o, struct{}{}), time.Second, "this machine's, where it does not")
	assert.True(t, bootwatch.ClaimOnItsWayForTest(o, nc, skewed), "a minute after its launch on the server's clock, it is on its way")
	late := fakekube.NodeClaim("default-fghij", "default", "c6g.large", "on-demand", "eu-west-1a", "", server.Add(-bootwatch.DefaultJoinAfter-time.Minute),
		fakekube.Cond{Type: "Launched", Status: "True"}, fakekube.Cond{Type: "Registered", Status: "Unknown", Reason: "NodeNotFound"})
	assert.False(t, bootwatch.ClaimOnItsWayForTest(o, late, skewed), "past JoinAfter on the server's clock, it is overdue")
}

// skewedAPI is an API server whose clock is server.
type skewedAPI struct{ server time.Time }

func (s skewedAPI) ServerNow() (time.Time, bool) { return s.server, true }

// TestNodesTellsPoolsApart: a claim of another stack's pool "default-gpu"
// is not one of "default" (claims are "<pool>-" and 5 generated
// characters).
func TestNodesTellsPoolsApart(t *testing.T) {
	b := bootstrap{
		class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
		events:  []kubeapi.Object{fakekube.Event("", "NodeClaim", "default-gpu-zq5wm", "Warning", "InsufficientCapacityError", "no GPU capacity", t0.Add(31*time.Second))},
		dnsNode: ec2Node, dnsReadyAt: time.Minute,
	}
	s, _ := run(t, bootwatch.Nodes, 18*time.Minute, b.at, nil)
	assert.Empty(t, s.warnings(), "another stack's claim is not the stack's")
}

func TestNodesFailures(t *testing.T) {
	sgNotFound := fakekube.Cond{Type: "SecurityGroupsReady", Status: "False", Reason: "SecurityGroupsNotFound", Message: "SecurityGroupSelector did not match any SecurityGroups"}
	for _, tc := range []struct {
		name string
		b    bootstrap
		// want are the warnings, in order, each no later than by.
		want []line
		by   time.Duration
	}{
		{
			name: "a node class whose security group selector matches nothing",
			b: bootstrap{
				class: []fakekube.Cond{sgNotFound, {Type: "Ready", Status: "False", Reason: "UnhealthyDependents", Message: "SecurityGroupsReady=False"},
					{Type: "SubnetsReady", Status: "True"}, {Type: "AMIsReady", Status: "True"}},
				pool: []fakekube.Cond{{Type: "NodeClassReady", Status: "False", Reason: "SecurityGroupsNotFound", Message: "EC2NodeClass not ready"},
					{Type: "Ready", Status: "False", Reason: "UnhealthyDependents", Message: "NodeClassReady=False"}},
			},
			want: []line{
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindEC2NodeClass, Name: "default"},
					msg: "EC2NodeClass default is not Ready: SecurityGroupsReady=False (SecurityGroupsNotFound: SecurityGroupSelector did not match any SecurityGroups)"},
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindNodePool, Name: "default"},
					msg: "NodePool default is not Ready: NodeClassReady=False (SecurityGroupsNotFound: EC2NodeClass not ready)"},
			},
			by: 10 * time.Second,
		},
		{
			name: "EC2 refuses the launch",
			b: bootstrap{
				class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
				claims: func(time.Duration) []kubeapi.Object {
					return []kubeapi.Object{fakekube.NodeClaim("default-x7k2p", "default", "", "", "", "", t0.Add(32*time.Second),
						fakekube.Cond{Type: "Launched", Status: "Unknown", Reason: "LaunchFailed", Message: "creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this operation. User: arn:aws:sts::123456789012:assumed-role/eks-demo-karpenter-controller/1 is not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role/eks-demo-karpenter-node"})}
				},
			},
			want: []line{{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindNodeClaim, Name: "default-x7k2p", Pool: "default"},
				msg: "NodeClaim default-x7k2p of NodePool default cannot launch: LaunchFailed: creating instance, with fleet error(s), UnauthorizedOperation: You are not authorized to perform this operation."}},
			by: 30 * time.Second,
		},
		{
			name: "no capacity (or a vCPU quota, or a full subnet): Karpenter deletes the claim and leaves an event",
			b: bootstrap{
				class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
				events: []kubeapi.Object{fakekube.Event("", "NodeClaim", "default-x7k2p", "Warning", "InsufficientCapacityError",
					"NodeClaim default-x7k2p event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient c6g.large capacity in the Availability Zone you requested (eu-west-1a).", t0.Add(31*time.Second))},
			},
			want: []line{{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindNodeClaim, Name: "default-x7k2p", Pool: "default"},
				msg: "NodeClaim default-x7k2p of NodePool default: InsufficientCapacityError: NodeClaim default-x7k2p event: creating instance, insufficient capacity"}},
			by: 30 * time.Second,
		},
		{
			name: "a pool allowed only an instance type the region does not offer",
			b: bootstrap{
				class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
				events: []kubeapi.Object{
					fakekube.From("karpenter", fakekube.Event("kube-system", "Pod", "coredns-5d8b-x1", "Warning", "FailedScheduling",
						`Failed to schedule pod, incompatible with nodepool "default", daemonset overhead={"cpu":"150m","memory":"120Mi","pods":"3"}, no instance type satisfied resources {"cpu":"250m","memory":"190Mi","pods":"4"} and requirements karpenter.sh/capacity-type In [on-demand spot], node.kubernetes.io/instance-type In [c6g.64xlarge] (no instance type met all requirements)`, t0.Add(31*time.Second))),
					fakekube.From("karpenter", fakekube.Event("kube-system", "Pod", "coredns-5d8b-x2", "Warning", "FailedScheduling",
						`Failed to schedule pod, incompatible with nodepool "default", no instance type met all requirements`, t0.Add(31*time.Second))),
					// The scheduler's newer word on the same pods says nothing of the cause.
					fakekube.From("default-scheduler", fakekube.Event("kube-system", "Pod", "coredns-5d8b-x1", "Warning", "FailedScheduling",
						`0/2 nodes are available: 2 node(s) had untolerated taint {eks.amazonaws.com/compute-type: fargate}.`, t0.Add(50*time.Second))),
				},
			},
			want: []line{
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindCoreDNS, Name: "coredns-5d8b-x1"},
					msg: `CoreDNS pod coredns-5d8b-x1 has no node: FailedScheduling: Failed to schedule pod, incompatible with nodepool "default"`},
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindCoreDNS, Name: "coredns-5d8b-x2"},
					msg: `CoreDNS pod coredns-5d8b-x2 has no node: FailedScheduling: Failed to schedule pod`},
			},
			by: 30 * time.Second,
		},
		{
			name: "no pool can ever take CoreDNS and Karpenter says nothing: stuck after the pools are Ready",
			b: bootstrap{
				class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
				events: []kubeapi.Object{fakekube.From("default-scheduler", fakekube.Event("kube-system", "Pod", "coredns-5d8b-x1", "Warning", "FailedScheduling",
					`0/2 nodes are available: 2 node(s) had untolerated taint {eks.amazonaws.com/compute-type: fargate}.`, t0.Add(40*time.Second)))},
			},
			want: []line{
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindCoreDNS, Name: "coredns-5d8b-x1"},
					msg: "CoreDNS pod coredns-5d8b-x1 has no node 2m0s after the node pools were Ready: FailedScheduling: 0/2 nodes are available"},
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindCoreDNS, Name: "coredns-5d8b-x2"},
					msg: "CoreDNS pod coredns-5d8b-x2 has no node 2m0s after the node pools were Ready: no event explains it"},
			},
			by: 2*time.Minute + 10*time.Second,
		},
		{
			name: "a class the controller never reconciles",
			b:    bootstrap{},
			want: []line{
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindEC2NodeClass, Name: "default"},
					msg: "EC2NodeClass default has no status after 2m0s: the Karpenter controller has not reconciled it"},
				{warn: true, subject: bootwatch.Subject{Kind: bootwatch.KindNodePool, Name: "default"},
					msg: "NodePool default has no status after 2m0s: the Karpenter controller has not reconciled it"},
			},
			by: 2 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, took := run(t, bootwatch.Nodes, 18*time.Minute, tc.b.at, nil)
			warnings := s.warnings()
			require.Len(t, warnings, len(tc.want), "each cause said once")
			for i, w := range warnings {
				assert.True(t, strings.HasPrefix(w.msg, tc.want[i].msg), "got %q\nwant %q...", w.msg, tc.want[i].msg)
				assert.Equal(t, tc.want[i].subject, w.subject, "attached to the object it concerns")
				assert.LessOrEqual(t, w.at, tc.by, "said at the first read that shows it")
			}
			assert.Equal(t, 18*time.Minute, took, "a bootstrap that never gets CoreDNS Ready is watched until its bound, no longer")
		})
	}
}

// TestNothingToSayOnAnUpThatChangesNothing: a cluster already up gets no
// line from either watch, and neither waits.
func TestNothingToSayOnAnUpThatChangesNothing(t *testing.T) {
	long := t0.Add(-30 * 24 * time.Hour)
	up := func(time.Duration) []kubeapi.Object {
		ready := fakekube.PodState{Node: ec2Node, Ready: true}
		return []kubeapi.Object{
			controllerPod("karpenter-a", fakekube.PodState{Node: fargate, Ready: true}),
			fakekube.Object("EC2NodeClass", "default", own, long, fakekube.Ready),
			fakekube.Object("NodePool", "default", own, long, fakekube.Ready),
			fakekube.NodeClaim("default-old", "default", "c6g.large", "spot", "eu-west-1a", ec2Node, long,
				fakekube.Cond{Type: "Launched", Status: "True"}, fakekube.Cond{Type: "Registered", Status: "True"}),
			fakekube.Pod("kube-system", "coredns-1", "k8s-app=kube-dns", "coredns", ready),
		}
	}
	for name, watch := range map[string]func(context.Context, bootwatch.API, bootwatch.Sink, bootwatch.Options, time.Duration){
		"controller": bootwatch.Controller, "nodes": bootwatch.Nodes,
	} {
		s, took := run(t, watch, 18*time.Minute, up, nil)
		assert.Empty(t, s.lines, name)
		assert.Zero(t, took, "%s: done at the first read", name)
	}
}

func TestNodesIgnoresOtherStacksObjects(t *testing.T) {
	b := bootstrap{
		class: []fakekube.Cond{fakekube.Ready}, pool: []fakekube.Cond{fakekube.Ready},
		foreign: []kubeapi.Object{
			fakekube.Object("NodePool", "gpu", "app=team-a", t0, fakekube.Cond{Type: "NodeClassReady", Status: "False", Reason: "NodeClassNotFound"}),
			fakekube.NodeClaim("gpu-zq5wm", "gpu", "", "", "", "", t0, fakekube.Cond{Type: "Launched", Status: "False", Reason: "LaunchFailed", Message: "no GPU capacity"}),
			fakekube.Event("", "NodeClaim", "gpu-zq5wm", "Warning", "LaunchFailed", "no GPU capacity", t0.Add(time.Minute)),
		},
		dnsNode: ec2Node, dnsReadyAt: time.Minute,
	}
	s, _ := run(t, bootwatch.Nodes, 18*time.Minute, b.at, nil)
	assert.Empty(t, s.warnings(), "the stack's watch reports only the stack's own classes, pools and claims")
}
