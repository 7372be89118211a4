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
// It only reads the cluster.
package bootwatch

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/internal/poll"
)

// API is what the watch reads of the cluster; *kubeapi.Client is one.
type API interface {
	ListIn(ctx context.Context, r kubeapi.Resource, namespace string, query url.Values) ([]kubeapi.Object, error)
	Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int) (string, error)
}

// What the watch reads.
var (
	Pods           = kubeapi.Resource{GroupVersion: "v1", Plural: "pods", Namespaced: true}
	Events         = kubeapi.Resource{GroupVersion: "v1", Plural: "events", Namespaced: true}
	NodePools      = kubeapi.Resource{GroupVersion: "karpenter.sh/v1", Plural: "nodepools"}
	NodeClaims     = kubeapi.Resource{GroupVersion: "karpenter.sh/v1", Plural: "nodeclaims"}
	EC2NodeClasses = kubeapi.Resource{GroupVersion: "karpenter.k8s.aws/v1", Plural: "ec2nodeclasses"}
)

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
	// StuckAfter is how long a pod may go unscheduled or not Ready, or a
	// class or pool without a verdict, before the watch says why. A False
	// condition, a failed launch, an image that cannot be pulled and a
	// crash are said at once.
	StuckAfter time.Duration
	// Now and Sleep are the clock; time.Now and a timer when nil.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
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

// said remembers the last line said on each topic, so that a line is said
// once until it changes; a line that can repeat states no clock.
type said map[string]string

func (s said) say(emit func(Subject, string), subj Subject, topic, msg string) {
	key := subj.Kind + "/" + subj.Name + "/" + topic
	if s[key] != msg {
		s[key] = msg
		emit(subj, msg)
	}
}

// Controller watches the Karpenter controller's pods until all run Ready,
// ctx ends, or bound passes.
func Controller(ctx context.Context, api API, sink Sink, o Options, bound time.Duration) {
	start := o.now()
	seen := said{}
	whole := Subject{Kind: KindController, Name: o.Namespace}
	watch(ctx, o, start, bound, func(ctx context.Context) bool {
		pods, err := api.ListIn(ctx, Pods, o.Namespace, url.Values{"labelSelector": {o.Selector}})
		if err != nil {
			if ctx.Err() == nil {
				seen.say(sink.Warn, whole, "api", fmt.Sprintf("cannot read the Karpenter controller's pods: %v", err))
			}
			return false
		}
		ready := 0
		for _, p := range pods {
			if podReady(p) {
				ready++
			} else if why := whyControllerNotReady(ctx, api, p, o, start); why != "" {
				seen.say(sink.Warn, Subject{Kind: KindController, Name: p.Name()}, "pod", why)
			}
		}
		if len(pods) > 0 && ready == len(pods) {
			sink.Info(whole, fmt.Sprintf("Karpenter controller: %d of %d pods Ready on Fargate (%s)", ready, len(pods), elapsed(o, start)))
			return true
		}
		if len(pods) == 0 && stuck(o, start) {
			seen.say(sink.Warn, whole, "none", fmt.Sprintf("no Karpenter controller pod in namespace %s after %s: the release has not created its Deployment's pods", o.Namespace, o.StuckAfter))
		}
		return false
	})
}

// whyControllerNotReady says what keeps a controller pod from running
// Ready, or "" while it is too early to say.
func whyControllerNotReady(ctx context.Context, api API, p kubeapi.Object, o Options, start time.Time) string {
	if why := containerFailure(ctx, api, p); why != "" {
		return why
	}
	if !stuck(o, start) {
		return ""
	}
	if p.Str("spec", "nodeName") == "" {
		if ev := lastEvent(ctx, api, p.Namespace(), "involvedObject.name="+p.Name(), time.Time{}); ev != "" {
			return fmt.Sprintf("pod %s is not scheduled after %s: %s", p.Name(), o.StuckAfter, ev)
		}
		return fmt.Sprintf("pod %s is not scheduled after %s; on Fargate that means no ACTIVE Fargate profile selects namespace %s", p.Name(), o.StuckAfter, p.Namespace())
	}
	logs, _ := api.Logs(ctx, p.Namespace(), p.Name(), o.Container, false, 5)
	return fmt.Sprintf("pod %s runs on %s but is not Ready after %s; its last log lines:\n%s", p.Name(), p.Str("spec", "nodeName"), o.StuckAfter, indent(logs))
}

// containerFailure is a container that cannot start or keeps crashing.
func containerFailure(ctx context.Context, api API, p kubeapi.Object) string {
	statuses, _ := p.Get("status", "containerStatuses").([]any)
	for _, raw := range statuses {
		c := kubeapi.Object(asMap(raw))
		name := c.Str("name")
		switch reason := c.Str("state", "waiting", "reason"); reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
			return fmt.Sprintf("pod %s: container %s cannot start: %s: %s", p.Name(), name, reason, c.Str("state", "waiting", "message"))
		case "CrashLoopBackOff":
			logs, _ := api.Logs(ctx, p.Namespace(), p.Name(), name, true, 5)
			return fmt.Sprintf("pod %s: container %s keeps crashing (%s, exit code %v); its last log lines:\n%s",
				p.Name(), name, c.Str("lastState", "terminated", "reason"), c.Get("lastState", "terminated", "exitCode"), indent(logs))
		}
	}
	return ""
}

// lastEvent is the newest event in namespace matching fieldSelector and
// not older than since, as "reason: message", or "". Karpenter's own
// events come first: for a pod it cannot find a node for, the scheduler's
// "0/2 nodes are available: … untolerated taint" (the Fargate nodes) says
// nothing, while Karpenter's says which pool refused it and why.
func lastEvent(ctx context.Context, api API, namespace, fieldSelector string, since time.Time) string {
	events := newEvents(ctx, api, namespace, fieldSelector, since)
	if len(events) == 0 {
		return ""
	}
	e := events[len(events)-1]
	for _, ev := range events {
		if ev.Str("source", "component") == "karpenter" || ev.Str("reportingComponent") == "karpenter" {
			e = ev
		}
	}
	return e.Str("reason") + ": " + e.Str("message")
}

// newEvents are the events matching fieldSelector not older than since,
// oldest first.
func newEvents(ctx context.Context, api API, namespace, fieldSelector string, since time.Time) []kubeapi.Object {
	events, err := api.ListIn(ctx, Events, namespace, url.Values{"fieldSelector": {fieldSelector}})
	if err != nil {
		return nil
	}
	events = slices.DeleteFunc(events, func(e kubeapi.Object) bool { return eventTime(e).Before(since) })
	slices.SortStableFunc(events, func(a, b kubeapi.Object) int { return eventTime(a).Compare(eventTime(b)) })
	return events
}

func eventTime(e kubeapi.Object) time.Time {
	for _, k := range []string{"lastTimestamp", "eventTime", "firstTimestamp"} {
		if t := timestamp(e, k); !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// Nodes watches the stack's node classes and pools, their NodeClaims, and
// CoreDNS's pods until CoreDNS runs Ready, ctx ends, or bound passes.
func Nodes(ctx context.Context, api API, sink Sink, o Options, bound time.Duration) {
	start := o.now()
	seen := said{}
	own := url.Values{"labelSelector": {o.OwnLabel}}
	watch(ctx, o, start, bound, func(ctx context.Context) bool {
		classes, errC := api.ListIn(ctx, EC2NodeClasses, "", own)
		pools, errP := api.ListIn(ctx, NodePools, "", own)
		claims, errN := api.ListIn(ctx, NodeClaims, "", nil)
		if err := firstErr(errC, errP, errN); err != nil {
			if ctx.Err() == nil {
				seen.say(sink.Warn, Subject{Kind: KindCoreDNS, Name: "coredns"}, "api", fmt.Sprintf("cannot read Karpenter's objects: %v", err))
			}
			return false
		}
		for _, c := range classes {
			conditions(sink, seen, o, start, Subject{Kind: KindEC2NodeClass, Name: c.Name()}, c)
		}
		appeared := map[string]time.Time{}
		for _, p := range pools {
			conditions(sink, seen, o, start, Subject{Kind: KindNodePool, Name: p.Name()}, p)
			appeared[p.Name()] = timestamp(p, "metadata", "creationTimestamp")
		}
		ours := map[string]bool{}
		for _, nc := range claims {
			if _, ok := appeared[nc.Label("karpenter.sh/nodepool")]; ok {
				ours[nc.Name()] = true
				claim(sink, seen, nc, appeared)
			}
		}
		claimEvents(ctx, api, sink, seen, start, ours, claims)
		return coreDNS(ctx, api, sink, seen, o, start)
	})
}

// claimEvents reports Karpenter's warnings about the stack's NodeClaims,
// including those it has already deleted (an InsufficientCapacityError
// deletes the claim and leaves only the event).
func claimEvents(ctx context.Context, api API, sink Sink, seen said, start time.Time, ours map[string]bool, claims []kubeapi.Object) {
	exists := map[string]bool{}
	for _, nc := range claims {
		exists[nc.Name()] = true
	}
	for _, e := range newEvents(ctx, api, "", "involvedObject.kind=NodeClaim,type=Warning", start) {
		name := e.Str("involvedObject", "name")
		if exists[name] && !ours[name] {
			continue
		}
		subj := Subject{Kind: KindNodeClaim, Name: name}
		for _, nc := range claims {
			if nc.Name() == name {
				subj.Pool = nc.Label("karpenter.sh/nodepool")
			}
		}
		seen.say(sink.Warn, subj, "event/"+e.Str("reason"), fmt.Sprintf("NodeClaim %s: %s: %s", name, e.Str("reason"), e.Str("message")))
	}
}

// coreDNS reports why CoreDNS's pods have no node, and whether they all
// run Ready.
func coreDNS(ctx context.Context, api API, sink Sink, seen said, o Options, start time.Time) bool {
	pods, err := api.ListIn(ctx, Pods, "kube-system", url.Values{"labelSelector": {"k8s-app=kube-dns"}})
	if err != nil {
		return false
	}
	ready := 0
	for _, p := range pods {
		switch {
		case podReady(p):
			ready++
		case p.Str("spec", "nodeName") == "" && stuck(o, start):
			if ev := lastEvent(ctx, api, p.Namespace(), "involvedObject.name="+p.Name(), start); ev != "" {
				seen.say(sink.Warn, Subject{Kind: KindCoreDNS, Name: p.Name()}, "pending", fmt.Sprintf("CoreDNS pod %s has no node after %s: %s", p.Name(), o.StuckAfter, ev))
			}
		}
	}
	if len(pods) > 0 && ready == len(pods) {
		sink.Info(Subject{Kind: KindCoreDNS, Name: "coredns"}, fmt.Sprintf("CoreDNS: %d of %d pods Ready on Karpenter's nodes (%s)", ready, len(pods), elapsed(o, start)))
		return true
	}
	return false
}

// conditions reports an object's Ready or, while it is not Ready, each of
// its other conditions that is False (at once) or Unknown (once stuck),
// with reason and message: Ready's own message only names them.
func conditions(sink Sink, seen said, o Options, start time.Time, subj Subject, obj kubeapi.Object) {
	list, _ := obj.Get("status", "conditions").([]any)
	var bad []string
	ready := false
	for _, raw := range list {
		c := kubeapi.Object(asMap(raw))
		typ, status := c.Str("type"), c.Str("status")
		if typ == "Ready" {
			ready = status == "True"
			continue
		}
		if status == "False" || (status == "Unknown" && stuck(o, start)) {
			bad = append(bad, fmt.Sprintf("%s=%s (%s: %s)", typ, status, c.Str("reason"), c.Str("message")))
		}
	}
	switch {
	case ready:
		seen.say(sink.Info, subj, "ready", fmt.Sprintf("%s %s Ready", subj.Kind, subj.Name))
	case len(bad) > 0:
		slices.Sort(bad)
		seen.say(sink.Warn, subj, "ready", fmt.Sprintf("%s %s is not Ready: %s", subj.Kind, subj.Name, strings.Join(bad, "; ")))
	case len(list) == 0 && stuck(o, start):
		seen.say(sink.Warn, subj, "ready", fmt.Sprintf("%s %s has no status after %s: the Karpenter controller has not reconciled it", subj.Kind, subj.Name, o.StuckAfter))
	}
}

// claim reports a NodeClaim's launch and registration, or its failure to
// launch with Karpenter's reason and EC2's message.
func claim(sink Sink, seen said, nc kubeapi.Object, appeared map[string]time.Time) {
	pool := nc.Label("karpenter.sh/nodepool")
	subj := Subject{Kind: KindNodeClaim, Name: nc.Name(), Pool: pool}
	cond := map[string]kubeapi.Object{}
	list, _ := nc.Get("status", "conditions").([]any)
	for _, raw := range list {
		c := kubeapi.Object(asMap(raw))
		cond[c.Str("type")] = c
	}
	is := func(typ, status string) bool { return cond[typ] != nil && cond[typ].Str("status") == status }
	switch {
	case is("Launched", "False"):
		seen.say(sink.Warn, subj, "launch", fmt.Sprintf("NodeClaim %s of NodePool %s cannot launch: %s: %s", nc.Name(), pool, cond["Launched"].Str("reason"), cond["Launched"].Str("message")))
	case is("Launched", "True"):
		after := ""
		if t, p := timestamp(cond["Launched"], "lastTransitionTime"), appeared[pool]; !t.IsZero() && !p.IsZero() {
			after = fmt.Sprintf(", %s after the pool appeared", t.Sub(p).Round(time.Second))
		}
		seen.say(sink.Info, subj, "launch", fmt.Sprintf("NodeClaim %s of NodePool %s launched %s (%s, %s)%s", nc.Name(), pool,
			nc.Label("node.kubernetes.io/instance-type"), nc.Label("karpenter.sh/capacity-type"), nc.Label("topology.kubernetes.io/zone"), after))
	}
	if is("Registered", "True") {
		seen.say(sink.Info, subj, "registered", fmt.Sprintf("NodeClaim %s of NodePool %s registered as node %s", nc.Name(), pool, nc.Str("status", "nodeName")))
	}
}

func podReady(p kubeapi.Object) bool {
	list, _ := p.Get("status", "conditions").([]any)
	for _, raw := range list {
		if c := kubeapi.Object(asMap(raw)); c.Str("type") == "Ready" {
			return c.Str("status") == "True"
		}
	}
	return false
}

func stuck(o Options, start time.Time) bool { return o.now().Sub(start) >= o.StuckAfter }

func timestamp(o kubeapi.Object, path ...string) time.Time {
	t, _ := time.Parse(time.RFC3339, o.Str(path...))
	return t
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

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
