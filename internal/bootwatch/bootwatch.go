// Package bootwatch tells, while `pulumi up` waits on the bootstrap, what
// Karpenter and Kubernetes know: whether the controller's pods start on
// Fargate and, when they do not, why (scheduling, image, a crash with its
// last log lines); each node class's and pool's failing conditions with
// their reasons and messages; each NodeClaim launched (instance type,
// capacity type, zone, time since its pool appeared), registered, or
// failing with Karpenter's reason and EC2's message; and why CoreDNS's
// pods have no node. A healthy bootstrap gets a few progress lines and no
// warnings; a failing one gets its cause as soon as it shows, about the
// object it concerns.
//
// Each watch starts when its step starts and stops when the step is done,
// when the caller cancels it (the step's resource was created), or when
// the step's bound (internal/bounds) passes, which is when the step's
// resource fails in Pulumi too: a watch never keeps `pulumi up` waiting.
// It reads the cluster, and changes one thing in it: a controller pod that
// missed the Fargate scheduler is deleted, at most MaxRecreations times,
// so that its ReplicaSet creates it again (see Controller).
package bootwatch

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/internal/poll"
)

// API is what the watch reads of the cluster, and the delete that
// recreates a controller pod; *kubeapi.Client is one.
type API interface {
	ListIn(ctx context.Context, r kubeapi.Resource, namespace string, query url.Values) ([]kubeapi.Object, error)
	Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int) (string, error)
	Delete(ctx context.Context, r kubeapi.Resource, namespace, name string) error
}

// FargateScheduler is the scheduler EKS's Fargate admission webhook gives
// a pod that an ACTIVE profile selects; a pod created while the profile is
// not yet in effect keeps default-scheduler, which has no node to give it,
// and stays Pending for good (eksctl-io/eksctl#3615; the program waits 30 s
// after a new profile is ACTIVE for that reason, cluster.Args.FargateSettle).
const FargateScheduler = "fargate-scheduler"

// MaxRecreations bounds how many controller pods one watch deletes for
// having missed the Fargate scheduler: two replicas, each once.
const MaxRecreations = 2

// Kinds of Subject.
const (
	KindController   = "Controller"
	KindEC2NodeClass = "EC2NodeClass"
	KindNodePool     = "NodePool"
	KindNodeClaim    = "NodeClaim"
	KindCoreDNS      = "CoreDNS"
)

// Subject is the object a line is about; the program attaches the line to
// the Pulumi resource that stands for it.
type Subject struct {
	// Kind is one of the Kind constants; Name the object's name.
	Kind, Name string
	// Pool is a NodeClaim's NodePool, "" when it is not known.
	Pool string
}

// Sink receives the lines.
type Sink interface {
	Info(s Subject, msg string)
	Warn(s Subject, msg string)
}

// Options tune the watch.
type Options struct {
	// Namespace and Selector find the controller's pods; Container is the
	// controller's container.
	Namespace, Selector, Container string
	// OwnLabel selects the stack's own node classes and pools ("k=v");
	// other stacks' objects and their NodeClaims are not reported.
	OwnLabel string
	// Interval is how often the cluster is read.
	Interval time.Duration
	// StuckAfter is how long a pod may wait (since it was created;
	// CoreDNS's since the pools were Ready) or a class's or pool's
	// condition stay Unknown before the watch says why. A False condition,
	// a failed launch, Karpenter's FailedScheduling, an image that cannot
	// be pulled and a crash are said at once.
	StuckAfter time.Duration
	// JoinAfter is how long after its launch a NodeClaim's node may take
	// to join before the watch says so: healthy nodes join in 100 to 120
	// seconds, GPU and large instances later, and Karpenter gives up after
	// 15 minutes. 0 is DefaultJoinAfter.
	JoinAfter time.Duration
	// Now and Sleep are the clock; time.Now and a timer when nil.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultJoinAfter is Options.JoinAfter's default: above the join times
// of healthy nodes reported upstream (100-120 s, GPU nodes slower), and
// well within Karpenter's 15-minute registration timeout, so that a
// warning is one a person should read.
const DefaultJoinAfter = 5 * time.Minute

func (o Options) joinAfter() time.Duration {
	if o.JoinAfter > 0 {
		return o.JoinAfter
	}
	return DefaultJoinAfter
}

// serverClock is an API that knows its server's clock (*kubeapi.Client).
type serverClock interface {
	ServerNow() (time.Time, bool)
}

// serverNow is the API server's clock, on which the times it wrote are
// aged; this machine's (o.now) until the server has told its own.
func (o Options) serverNow(api any) time.Time {
	if c, ok := api.(serverClock); ok {
		if now, known := c.ServerNow(); known {
			return now
		}
	}
	return o.now()
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) sleep(ctx context.Context, d time.Duration) error {
	if o.Sleep != nil {
		return o.Sleep(ctx, d)
	}
	return poll.Sleep(ctx, d)
}

// watch runs step every Interval until step reports done, ctx ends or
// bound passes.
func watch(ctx context.Context, o Options, start time.Time, bound time.Duration, step func(context.Context) bool) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for ctx.Err() == nil && o.now().Sub(start) < bound {
		if step(ctx) {
			return
		}
		if o.sleep(ctx, o.Interval) != nil {
			return
		}
	}
}

// said remembers, per topic, the state last reported, so that a line is
// said once until the state changes: a line that carries log lines or a
// time says it again only when what it is about changes.
type said struct {
	states map[string]string
	// explained counts the warnings said about the stack's classes, pools
	// and NodeClaims: each explains why CoreDNS has no node.
	explained int
}

func newSaid() *said { return &said{states: map[string]string{}} }

func (s *said) say(emit func(Subject, string), subj Subject, topic, state, msg string) bool {
	key := subj.Kind + "/" + subj.Name + "/" + topic
	if old, ok := s.states[key]; ok && old == state {
		return false
	}
	s.states[key] = state
	emit(subj, msg)
	return true
}

func (s *said) warn(sink Sink, subj Subject, topic, state, msg string) {
	if s.say(sink.Warn, subj, topic, state, msg) && subj.Kind != KindCoreDNS && subj.Kind != KindController {
		s.explained++
	}
}

func (s *said) info(sink Sink, subj Subject, topic, state, msg string) {
	s.say(sink.Info, subj, topic, state, msg)
}

// topic is what was last said on a topic, and whether anything was.
func (s *said) topic(subj Subject, topic string) (string, bool) {
	state, ok := s.states[subj.Kind+"/"+subj.Name+"/"+topic]
	return state, ok
}

// mark records a topic's state without saying anything.
func (s *said) mark(subj Subject, topic, state string) {
	s.states[subj.Kind+"/"+subj.Name+"/"+topic] = state
}

// fresh reports an object created since the watch started (with a
// minute's allowance for the cluster's clock): on a `pulumi up` that
// changes nothing, what already existed is not reported again.
func fresh(o kubeapi.Object, start time.Time) bool {
	created := o.Time("metadata", "creationTimestamp")
	return created.IsZero() || !created.Before(start.Add(-time.Minute))
}

// Controller watches the Karpenter controller's pods until all run Ready,
// ctx ends, or bound passes. A controller already Ready at the first read
// gets no line.
func Controller(ctx context.Context, api API, sink Sink, o Options, bound time.Duration) {
	start := o.now()
	seen := newSaid()
	whole := Subject{Kind: KindController, Name: o.Namespace}
	first := true
	recreated := 0
	watch(ctx, o, start, bound, func(ctx context.Context) bool {
		pods, err := api.ListIn(ctx, kubeapi.Pods, o.Namespace, url.Values{"labelSelector": {o.Selector}})
		if err != nil {
			if ctx.Err() == nil {
				seen.warn(sink, whole, "api", "error", fmt.Sprintf("cannot read the Karpenter controller's pods: %v", err))
			}
			return false
		}
		wasFirst := first
		first = false
		ready := 0
		for _, p := range pods {
			if podReady(p) {
				ready++
				continue
			}
			if missedFargate(p, o, start) && recreated < MaxRecreations {
				recreated++
				recreate(ctx, api, sink, p, o, recreated)
				continue
			}
			if state, why := whyControllerNotReady(ctx, api, p, o, start); why != "" {
				seen.warn(sink, Subject{Kind: KindController, Name: p.Name()}, "pod", state, why)
			}
		}
		if len(pods) > 0 && ready == len(pods) {
			if !wasFirst {
				sink.Info(whole, fmt.Sprintf("Karpenter controller: %d of %d pods Ready on Fargate (%s)", ready, len(pods), elapsed(o, start)))
			}
			return true
		}
		if len(pods) == 0 && o.now().Sub(start) >= o.StuckAfter {
			seen.warn(sink, whole, "none", "none", fmt.Sprintf("no Karpenter controller pod in namespace %s after %s: the release has not created its Deployment's pods", o.Namespace, o.StuckAfter))
		}
		return false
	})
}

// missedFargate reports a pod left unscheduled for StuckAfter with a
// scheduler other than Fargate's: one that no node will ever take.
func missedFargate(p kubeapi.Object, o Options, start time.Time) bool {
	return p.Str("spec", "nodeName") == "" && p.Str("spec", "schedulerName") != FargateScheduler &&
		o.now().Sub(since(p, start)) >= o.StuckAfter
}

// recreate deletes a pod that missed the Fargate scheduler, so that its
// ReplicaSet creates another, which the profile, in effect by now, gives
// to Fargate; the n-th of MaxRecreations.
func recreate(ctx context.Context, api API, sink Sink, p kubeapi.Object, o Options, n int) {
	subj := Subject{Kind: KindController, Name: p.Name()}
	scheduler := cmp.Or(p.Str("spec", "schedulerName"), "default-scheduler")
	if err := api.Delete(ctx, kubeapi.Pods, p.Namespace(), p.Name()); err != nil {
		sink.Warn(subj, fmt.Sprintf("pod %s has waited %s for a scheduler other than Fargate's (%s): the Fargate profile was not yet in "+
			"effect when it was created. Deleting it, so that its ReplicaSet creates it again on Fargate, failed: %v; "+
			"`kubectl -n %s delete pod %s` does the same", p.Name(), o.StuckAfter, scheduler, err, p.Namespace(), p.Name()))
		return
	}
	sink.Warn(subj, fmt.Sprintf("pod %s waited %s for a scheduler other than Fargate's (%s): the Fargate profile was not yet in effect "+
		"when it was created (eksctl-io/eksctl#3615). Deleted it so that its ReplicaSet creates it again, now on Fargate (%d of at most %d)",
		p.Name(), o.StuckAfter, scheduler, n, MaxRecreations))
}

// whyControllerNotReady says what keeps a controller pod from running
// Ready, with the state it stands for; "" while it is too early to say (a
// Fargate pod waits 1-2 minutes for its node).
func whyControllerNotReady(ctx context.Context, api API, p kubeapi.Object, o Options, start time.Time) (state, why string) {
	if state, why := containerFailure(ctx, api, p); why != "" {
		return state, why
	}
	if o.now().Sub(since(p, start)) < o.StuckAfter {
		return "", ""
	}
	if p.Str("spec", "nodeName") == "" {
		if ev := lastWarning(ctx, api, p.Namespace(), p.Name(), time.Time{}); ev != "" {
			return "unscheduled: " + ev, fmt.Sprintf("pod %s is not scheduled after %s: %s", p.Name(), o.StuckAfter, ev)
		}
		return "unscheduled", fmt.Sprintf("pod %s is not scheduled after %s, and no event says why: Fargate schedules a pod that an "+
			"ACTIVE profile's selectors match (namespace %s, and its labels if the profile names any) into the profile's subnets; "+
			"`kubectl -n %s get events` and `aws eks describe-fargate-profile` may tell more", p.Name(), o.StuckAfter, p.Namespace(), p.Namespace())
	}
	logs, _ := api.Logs(ctx, p.Namespace(), p.Name(), o.Container, false, 5)
	return "not ready", fmt.Sprintf("pod %s runs on %s but is not Ready after %s; its last log lines:\n%s", p.Name(), p.Str("spec", "nodeName"), o.StuckAfter, indent(logs))
}

// since is when a pod began to wait: its creation, or the watch's start.
func since(p kubeapi.Object, start time.Time) time.Time {
	if created := p.Time("metadata", "creationTimestamp"); !created.IsZero() {
		return created
	}
	return start
}

// containerFailure is a container that cannot start or keeps crashing,
// with the state it stands for.
func containerFailure(ctx context.Context, api API, p kubeapi.Object) (state, why string) {
	for _, c := range p.Items("status", "containerStatuses") {
		name := c.Str("name")
		switch reason := c.Str("state", "waiting", "reason"); reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
			return name + " " + reason, fmt.Sprintf("pod %s: container %s cannot start: %s: %s", p.Name(), name, reason, c.Str("state", "waiting", "message"))
		case "CrashLoopBackOff":
			logs, _ := api.Logs(ctx, p.Namespace(), p.Name(), name, true, 5)
			return name + " crashing", fmt.Sprintf("pod %s: container %s keeps crashing (%s, exit code %v); its last log lines:\n%s",
				p.Name(), name, c.Str("lastState", "terminated", "reason"), c.Get("lastState", "terminated", "exitCode"), indent(logs))
		}
	}
	return "", ""
}

// lastWarning is the newest Warning event about a pod not older than
// since, as "reason: message", or "". Karpenter's come first: for a pod it
// cannot find a node for, the scheduler's "0/2 nodes are available: …
// untolerated taint" (the Fargate nodes) says nothing, while Karpenter's
// says which pool refused it and why.
func lastWarning(ctx context.Context, api API, namespace, pod string, since time.Time) string {
	events := newEvents(ctx, api, namespace, "involvedObject.name="+pod+",type=Warning", since)
	if len(events) == 0 {
		return ""
	}
	e := events[len(events)-1]
	for _, ev := range events {
		if fromKarpenter(ev) {
			e = ev
		}
	}
	return e.Str("reason") + ": " + e.Str("message")
}

func fromKarpenter(e kubeapi.Object) bool {
	return e.Str("source", "component") == "karpenter" || e.Str("reportingComponent") == "karpenter"
}

// newEvents are the events matching fieldSelector not older than since,
// oldest first.
func newEvents(ctx context.Context, api API, namespace, fieldSelector string, since time.Time) []kubeapi.Object {
	events, err := api.ListIn(ctx, kubeapi.Events, namespace, url.Values{"fieldSelector": {fieldSelector}})
	if err != nil {
		return nil
	}
	events = slices.DeleteFunc(events, func(e kubeapi.Object) bool { return eventTime(e).Before(since) })
	slices.SortStableFunc(events, func(a, b kubeapi.Object) int { return eventTime(a).Compare(eventTime(b)) })
	return events
}

func eventTime(e kubeapi.Object) time.Time {
	for _, k := range []string{"lastTimestamp", "eventTime", "firstTimestamp"} {
		if t := e.Time(k); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// Nodes watches the stack's node classes and pools, their NodeClaims, and
// CoreDNS's pods until ctx ends (the caller cancels it once the CoreDNS
// add-on is created) or bound passes; it ends by itself only when all is
// Ready at the first read (an update that changes nothing), which gets no
// line.
func Nodes(ctx context.Context, api API, sink Sink, o Options, bound time.Duration) {
	start := o.now()
	seen := newSaid()
	own := url.Values{"labelSelector": {o.OwnLabel}}
	first := true
	var poolsReady time.Time // when every pool was first seen Ready
	watch(ctx, o, start, bound, func(ctx context.Context) bool {
		classes, errC := api.ListIn(ctx, kubeapi.EC2NodeClasses, "", own)
		pools, errP := api.ListIn(ctx, kubeapi.NodePools, "", own)
		claims, errN := api.ListIn(ctx, kubeapi.NodeClaims, "", nil)
		if err := firstErr(errC, errP, errN); err != nil {
			if ctx.Err() == nil {
				seen.warn(sink, Subject{Kind: KindCoreDNS, Name: "coredns"}, "api", "error", fmt.Sprintf("cannot read Karpenter's objects: %v", err))
			}
			return false
		}
		wasFirst := first
		first = false
		for _, c := range classes {
			conditions(sink, seen, o, start, Subject{Kind: KindEC2NodeClass, Name: c.Name()}, c)
		}
		appeared := map[string]time.Time{}
		allReady := len(pools) > 0
		for _, p := range pools {
			allReady = conditions(sink, seen, o, start, Subject{Kind: KindNodePool, Name: p.Name()}, p) && allReady
			appeared[p.Name()] = p.Time("metadata", "creationTimestamp")
		}
		if allReady && poolsReady.IsZero() {
			poolsReady = o.now()
		}
		launching := false // a NodeClaim of the stack's pools is on its way, and not yet overdue
		serverNow := o.serverNow(api)
		for _, nc := range claims {
			if _, ours := appeared[nc.Label("karpenter.sh/nodepool")]; ours && fresh(nc, start) {
				launching = claim(sink, seen, o, nc, appeared, serverNow) || launching
			}
		}
		claimEvents(ctx, api, sink, seen, start, appeared)
		// Done only when all was Ready at the first read (an update that
		// changes nothing); otherwise the watch goes on until the CoreDNS
		// add-on is created or the bound passes: the pods Ready now may be
		// EKS's pre-installed CoreDNS, which the add-on replaces.
		return coreDNS(ctx, api, sink, seen, o, start, poolsReady, launching, wasFirst) && wasFirst
	})
}

// claimEvents reports Karpenter's warnings about the stack's NodeClaims,
// including those it has already deleted: an InsufficientCapacityError
// (which covers EC2's vCPU limits and full subnets: karpenter-provider-aws
// pkg/errors/errors.go) deletes the claim and leaves only the event
// (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/launch.go).
// A claim is named after its pool, "<pool>-xxxxx" (the NodeClaim template's
// generateName "<pool>-", pkg/controllers/provisioning/scheduling/
// nodeclaimtemplate.go), to which the API server adds 5 random characters
// (k8s.io/apiserver storage/names: randomLength 5), so that a claim of
// another stack's pool "general-gpu" is not taken for one of "general".
func claimEvents(ctx context.Context, api API, sink Sink, seen *said, start time.Time, pools map[string]time.Time) {
	for _, e := range newEvents(ctx, api, "", "involvedObject.kind=NodeClaim,type=Warning", start) {
		name := e.Str("involvedObject", "name")
		pool := poolOfClaim(name, pools)
		if pool == "" {
			continue // another stack's pool
		}
		msg := fmt.Sprintf("NodeClaim %s of NodePool %s: %s: %s", name, pool, e.Str("reason"), e.Str("message"))
		seen.warn(sink, Subject{Kind: KindNodeClaim, Name: name, Pool: pool}, "event/"+e.Str("reason"), msg, msg)
	}
}

// generatedSuffix is the API server's generateName suffix: 5 characters
// of "bcdfghjklmnpqrstvwxz2456789" (k8s.io/apiserver pkg/storage/names).
var generatedSuffix = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// maxGenerateNamePrefix is how much of a generateName the API server
// keeps: 63 characters less the 5 it adds (k8s.io/apiserver
// pkg/storage/names, maxGeneratedNameLength).
const maxGenerateNamePrefix = 58

// poolOfClaim is the pool of pools a claim of this name belongs to, "" for
// none.
func poolOfClaim(claim string, pools map[string]time.Time) string {
	for p := range pools {
		prefix := p + "-"
		if len(prefix) > maxGenerateNamePrefix {
			prefix = prefix[:maxGenerateNamePrefix]
		}
		if suffix, ok := strings.CutPrefix(claim, prefix); ok && generatedSuffix.MatchString(suffix) {
			return p
		}
	}
	return ""
}

// coreDNS reports why CoreDNS's pods have no node, and whether they all
// run Ready. Karpenter's FailedScheduling is said at once (it comes only
// when no pool can hold the pod); without it, without a NodeClaim on the
// way and without another warning (either explains), a pod is stuck once
// it has waited StuckAfter since the pools were Ready, when Karpenter
// could first launch a node for it.
func coreDNS(ctx context.Context, api API, sink Sink, seen *said, o Options, start, poolsReady time.Time, launching, first bool) bool {
	pods, err := api.ListIn(ctx, kubeapi.Pods, "kube-system", url.Values{"labelSelector": {"k8s-app=kube-dns"}})
	if err != nil {
		return false
	}
	ready := 0
	for _, p := range pods {
		if podReady(p) {
			ready++
			continue
		}
		if p.Str("spec", "nodeName") != "" || poolsReady.IsZero() {
			continue
		}
		subj := Subject{Kind: KindCoreDNS, Name: p.Name()}
		waited := o.now().Sub(later(since(p, poolsReady), poolsReady))
		for _, e := range newEvents(ctx, api, "kube-system", "involvedObject.name="+p.Name()+",type=Warning", poolsReady) {
			if fromKarpenter(e) {
				msg := fmt.Sprintf("CoreDNS pod %s has no node: %s: %s", p.Name(), e.Str("reason"), e.Str("message"))
				seen.warn(sink, subj, "pending", e.Str("reason")+e.Str("message"), msg)
			}
		}
		if _, told := seen.topic(subj, "pending"); !told && !launching && seen.explained == 0 && waited >= o.StuckAfter {
			why := lastWarning(ctx, api, p.Namespace(), p.Name(), poolsReady)
			if why == "" {
				why = "no event explains it; `kubectl get nodeclaims` and the Karpenter controller's log may"
			}
			seen.warn(sink, subj, "pending", "stuck", fmt.Sprintf("CoreDNS pod %s has no node %s after the node pools were Ready: %s", p.Name(), o.StuckAfter, why))
		}
	}
	whole := Subject{Kind: KindCoreDNS, Name: "coredns"}
	if len(pods) > 0 && ready == len(pods) {
		if !first {
			seen.info(sink, whole, "ready", "ready", fmt.Sprintf("CoreDNS: %d of %d pods Ready on Karpenter's nodes (%s)", ready, len(pods), elapsed(o, start)))
		}
		return true
	}
	seen.mark(whole, "ready", "") // Ready again later is news again
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// conditions reports an object's Ready (once, if it became Ready while
// watched or was created since), or, while it is not Ready, each of its
// other conditions that is False (at once) or Unknown for a reason other
// than awaiting its first reconciliation (once stuck), with reason and
// message: Ready's own message only names them. A pool's
// NodeRegistrationHealthy=False, which carries the reason its nodes fail
// to launch or join, is said even while the pool is Ready (it is not one
// of Ready's dependents: kubernetes-sigs/karpenter pkg/apis/v1/
// nodepool_status.go). It returns whether the object is Ready.
func conditions(sink Sink, seen *said, o Options, start time.Time, subj Subject, obj kubeapi.Object) bool {
	list := obj.Items("status", "conditions")
	var bad []string
	ready := false
	for _, c := range list {
		typ, status := c.Str("type"), c.Str("status")
		switch {
		case typ == "Ready":
			ready = status == "True"
		case typ == "NodeRegistrationHealthy":
			if status == "False" {
				msg := fmt.Sprintf("%s %s: its nodes do not launch or join: %s: %s", subj.Kind, subj.Name, c.Str("reason"), c.Str("message"))
				seen.warn(sink, subj, "registration", c.Str("reason")+c.Str("message"), msg)
			}
		case status == "False" || (status == "Unknown" && o.now().Sub(start) >= o.StuckAfter):
			bad = append(bad, fmt.Sprintf("%s=%s (%s: %s)", typ, status, c.Str("reason"), c.Str("message")))
		}
	}
	switch {
	case ready:
		if _, watched := seen.topic(subj, "ready"); watched || fresh(obj, start) {
			seen.info(sink, subj, "ready", "ready", fmt.Sprintf("%s %s Ready", subj.Kind, subj.Name))
		} else {
			seen.mark(subj, "ready", "ready") // Ready before the watch: nothing to say
		}
	case len(bad) > 0:
		slices.Sort(bad)
		msg := fmt.Sprintf("%s %s is not Ready: %s", subj.Kind, subj.Name, strings.Join(bad, "; "))
		seen.warn(sink, subj, "ready", msg, msg)
	case len(list) == 0 && o.now().Sub(start) >= o.StuckAfter:
		seen.warn(sink, subj, "ready", "no status", fmt.Sprintf("%s %s has no status after %s: the Karpenter controller has not reconciled it", subj.Kind, subj.Name, o.StuckAfter))
	default:
		if _, watched := seen.topic(subj, "ready"); !watched {
			seen.mark(subj, "ready", "") // seen not Ready: its Ready is news
		}
	}
	return ready
}

// claim reports a NodeClaim's launch and registration, or its failure to
// launch: Karpenter leaves Launched Unknown, with the reason (LaunchFailed,
// or the cloud provider's) and EC2's message, until it retries or deletes
// the claim; it never sets it False (kubernetes-sigs/karpenter v1.14
// pkg/controllers/nodeclaim/lifecycle/launch.go). A launched claim whose
// node has not joined JoinAfter later, on the API server's clock (which
// wrote the condition's time; now is that clock), is said at once:
// Karpenter keeps
// Registered Unknown (NodeNotFound, "Node not registered with cluster")
// and emits no event until it deletes the claim after 15 minutes, and
// marks the pool's NodeRegistrationHealthy False only after 2 of its last
// 4 attempts failed (registration.go, liveness.go and
// pkg/state/nodepoolhealth/tracker.go at v1.14). It returns whether the
// claim is still on its way: not registered, and not overdue.
func claim(sink Sink, seen *said, o Options, nc kubeapi.Object, appeared map[string]time.Time, now time.Time) bool {
	pool := nc.Label("karpenter.sh/nodepool")
	subj := Subject{Kind: KindNodeClaim, Name: nc.Name(), Pool: pool}
	cond := map[string]kubeapi.Object{}
	for _, c := range nc.Items("status", "conditions") {
		cond[c.Str("type")] = c
	}
	if c := cond["Registered"]; c != nil && c.Str("status") == "True" {
		seen.info(sink, subj, "registered", "registered", fmt.Sprintf("NodeClaim %s of NodePool %s registered as node %s", nc.Name(), pool, nc.Str("status", "nodeName")))
		// Its pods are scheduled on it within moments; until StuckAfter
		// later it still explains a pending CoreDNS.
		at := c.Time("lastTransitionTime")
		return at.IsZero() || now.Sub(at) < o.StuckAfter
	}
	launched := cond["Launched"]
	switch {
	case launched == nil:
	case launched.Str("status") == "True":
		at := launched.Time("lastTransitionTime")
		after := ""
		if p := appeared[pool]; !at.IsZero() && !p.IsZero() {
			after = fmt.Sprintf(", %s after the pool appeared", at.Sub(p).Round(time.Second))
		}
		seen.info(sink, subj, "launch", "launched", fmt.Sprintf("NodeClaim %s of NodePool %s launched %s (%s, %s)%s", nc.Name(), pool,
			nc.Label("node.kubernetes.io/instance-type"), nc.Label("karpenter.sh/capacity-type"), nc.Label("topology.kubernetes.io/zone"), after))
		if at.IsZero() || now.Sub(at) < o.joinAfter() {
			return true
		}
		instance := nc.Str("status", "providerID")
		instance = instance[strings.LastIndex(instance, "/")+1:]
		why := "Registered is not True"
		if r := cond["Registered"]; r != nil {
			why = fmt.Sprintf("Registered=%s (%s: %s)", r.Str("status"), r.Str("reason"), r.Str("message"))
		}
		console := ""
		if instance != "" {
			console = fmt.Sprintf("; the instance's console shows the kubelet's errors: aws ec2 get-console-output --instance-id %s --latest --output text", instance)
		}
		seen.warn(sink, subj, "join", "overdue", fmt.Sprintf("NodeClaim %s of NodePool %s launched %s ago, but its node has not joined the "+
			"cluster: %s. A node that starts and never joins is usually refused by the cluster: the node role's access entry (type "+
			"EC2_LINUX), the cluster security group, the private subnets' route to the API endpoint (NAT gateway or VPC endpoints), "+
			"or user data; Karpenter gives up on it 15 minutes after it was created%s",
			nc.Name(), pool, now.Sub(at).Round(time.Second), why, console))
		return false
	case launched.Str("message") != "" && launched.Str("reason") != "AwaitingReconciliation":
		msg := fmt.Sprintf("NodeClaim %s of NodePool %s cannot launch: %s: %s", nc.Name(), pool, launched.Str("reason"), launched.Str("message"))
		seen.warn(sink, subj, "launch", msg, msg)
		return false
	}
	return true
}

func podReady(p kubeapi.Object) bool {
	for _, c := range p.Items("status", "conditions") {
		if c.Str("type") == "Ready" {
			return c.Str("status") == "True"
		}
	}
	return false
}

func elapsed(o Options, start time.Time) string {
	return o.now().Sub(start).Round(time.Second).String()
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no log lines)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
