// Package fakekube is a fake cluster for the bootstrap watch: its
// objects are a function of a fake clock that advances only when the
// watch sleeps, so a test states what the cluster shows at each minute and
// checks what the watch says and when.
package fakekube

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"nodeless-eks/internal/kubeapi"
)

// Clock is a fake clock.
type Clock struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{start: start, now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Elapsed is the time since the clock started.
func (c *Clock) Elapsed() time.Duration { return c.Now().Sub(c.start) }

// Sleep advances the clock by d at once.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

// Cluster is a fake API server.
type Cluster struct {
	Clock *Clock
	// At returns the objects the cluster holds after elapsed time on the
	// clock, each with apiVersion, kind and metadata.
	At func(elapsed time.Duration) []kubeapi.Object
	// LogText holds container logs by "namespace/pod/container".
	LogText map[string]string
	// LogsMove adds the clock to every log read, as a running
	// container's log grows.
	LogsMove bool
	// Err, when set, fails every call.
	Err error

	mu sync.Mutex
	// deleted holds what Delete removed, by "namespace/name": At's objects
	// of that name are no longer listed.
	deleted []string
}

// Delete removes an object from what ListIn lists from now on.
func (c *Cluster) Delete(ctx context.Context, r kubeapi.Resource, namespace, name string) error {
	if c.Err != nil {
		return c.Err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleted = append(c.deleted, namespace+"/"+name)
	return nil
}

// Deleted is what Delete removed, as "namespace/name", in order.
func (c *Cluster) Deleted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.deleted)
}

// ListIn lists the objects of r in namespace ("" for all) that match the
// query's labelSelector and fieldSelector (equality terms only).
func (c *Cluster) ListIn(ctx context.Context, r kubeapi.Resource, namespace string, query url.Values) ([]kubeapi.Object, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	var out []kubeapi.Object
	deleted := c.Deleted()
	for _, o := range c.At(c.Clock.Elapsed()) {
		if plural(o.Str("kind")) != r.Plural || (namespace != "" && o.Namespace() != namespace) ||
			slices.Contains(deleted, o.Namespace()+"/"+o.Name()) {
			continue
		}
		if matches(o, query.Get("labelSelector"), func(k string) string { return o.Label(k) }) &&
			matches(o, query.Get("fieldSelector"), func(k string) string { return o.Str(strings.Split(k, ".")...) }) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Logs returns the container's log; previous is ignored.
func (c *Cluster) Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int) (string, error) {
	if c.Err != nil {
		return "", c.Err
	}
	text := c.LogText[namespace+"/"+pod+"/"+container]
	if c.LogsMove {
		text += "\n" + c.Clock.Now().Format(time.RFC3339) + " still waiting"
	}
	return text, nil
}

func plural(kind string) string {
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "s") {
		return k + "es"
	}
	return k + "s"
}

func matches(o kubeapi.Object, selector string, get func(string) string) bool {
	if selector == "" {
		return true
	}
	for _, term := range strings.Split(selector, ",") {
		k, v, _ := strings.Cut(term, "=")
		if get(k) != v {
			return false
		}
	}
	return true
}

// Cond is a status condition.
type Cond struct{ Type, Status, Reason, Message string }

// Ready is a True Ready condition.
var Ready = Cond{Type: "Ready", Status: "True"}

// PodState is what a pod's status says.
type PodState struct {
	// Node is spec.nodeName, "" while the pod is unscheduled.
	Node  string
	Ready bool
	// Waiting is a container's waiting reason (ImagePullBackOff,
	// CrashLoopBackOff), with Message.
	Waiting, Message string
	// Scheduler is spec.schedulerName; "" is fargate-scheduler, which a
	// controller pod has once Fargate's webhook mutated it.
	Scheduler string
	// Created is metadata.creationTimestamp; zero leaves it out.
	Created time.Time
}

// Pod is a pod with labels ("k=v,k=v") and one container, container.
func Pod(namespace, name, labels, container string, s PodState) kubeapi.Object {
	ready := "False"
	if s.Ready {
		ready = "True"
	}
	status := map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": ready}},
	}
	if s.Waiting != "" {
		c := map[string]any{"name": container, "state": map[string]any{"waiting": map[string]any{"reason": s.Waiting, "message": s.Message}}}
		if s.Waiting == "CrashLoopBackOff" {
			c["lastState"] = map[string]any{"terminated": map[string]any{"reason": "Error", "exitCode": 1}}
		}
		status["containerStatuses"] = []any{c}
	}
	return kubeapi.Object{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": meta(namespace, name, labels, s.Created),
		"spec":     map[string]any{"nodeName": s.Node, "schedulerName": cmp.Or(s.Scheduler, "fargate-scheduler")},
		"status":   status,
	}
}

// Object is a Karpenter object of kind with labels and conditions.
func Object(kind, name, labels string, created time.Time, conds ...Cond) kubeapi.Object {
	return kubeapi.Object{
		"apiVersion": "karpenter.sh/v1", "kind": kind,
		"metadata": meta("", name, labels, created),
		"status":   map[string]any{"conditions": conditions(conds)},
	}
}

// NodeClaim is a claim of pool for an instance, with conditions; launched
// is when Launched turned True or False.
func NodeClaim(name, pool, instanceType, capacityType, zone, node string, launched time.Time, conds ...Cond) kubeapi.Object {
	labels := "karpenter.sh/nodepool=" + pool
	if instanceType != "" {
		labels += ",node.kubernetes.io/instance-type=" + instanceType + ",karpenter.sh/capacity-type=" + capacityType + ",topology.kubernetes.io/zone=" + zone
	}
	list := conditions(conds)
	for _, c := range list {
		c.(map[string]any)["lastTransitionTime"] = launched.UTC().Format(time.RFC3339)
	}
	return kubeapi.Object{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": meta("", name, labels, launched),
		"status":   map[string]any{"nodeName": node, "conditions": list},
	}
}

// Event is an event about an object of kind, last seen at.
func Event(namespace, kind, name, eventType, reason, message string, at time.Time) kubeapi.Object {
	return kubeapi.Object{
		"apiVersion": "v1", "kind": "Event",
		"metadata":       meta(namespace, name+"."+reason, "", at),
		"involvedObject": map[string]any{"kind": kind, "name": name, "namespace": namespace},
		"type":           eventType, "reason": reason, "message": message,
		"lastTimestamp": at.UTC().Format(time.RFC3339),
	}
}

// From marks an event as reported by component ("karpenter",
// "default-scheduler").
func From(component string, e kubeapi.Object) kubeapi.Object {
	e["source"] = map[string]any{"component": component}
	e["reportingComponent"] = component
	return e
}

func conditions(conds []Cond) []any {
	var list []any
	for _, c := range conds {
		list = append(list, map[string]any{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message})
	}
	return list
}

func meta(namespace, name, labels string, created time.Time) map[string]any {
	m := map[string]any{"name": name, "labels": map[string]any{}}
	if namespace != "" {
		m["namespace"] = namespace
	}
	if !created.IsZero() {
		m["creationTimestamp"] = created.UTC().Format(time.RFC3339)
	}
	if labels != "" {
		for _, term := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(term, "=")
			m["labels"].(map[string]any)[k] = v
		}
	}
	return m
}
