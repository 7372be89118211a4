// Package cleanup removes, when the stack is destroyed, what workloads
// created that would outlive the controllers that manage it, while those
// controllers still run (the program deletes the cleanup before any of
// them):
//
//  1. every Ingress, LoadBalancer Service and Gateway API Gateway, so that
//     the AWS Load Balancer Controller deletes their load balancers (it
//     gives a Gateway of its GatewayClasses an ALB or NLB, generally
//     available since v3.0.0: the controller's guide, gateway/l7gateway and
//     gateway/l4gateway; the Gateway API CRDs are the user's), whose
//     network interfaces would otherwise block the node security group's
//     deletion; then the LB controller's own finalized kinds, with the
//     routes and GatewayClasses that keep its Gateway configurations in
//     use (see configUsers);
//  2. every StatefulSet with volume claim templates (it would recreate a
//     deleted claim, and a new volume, with its next pod), then every
//     PersistentVolumeClaim whose EBS volume has reclaim policy Delete
//     (provisioned by the EBS CSI driver, or by the in-tree
//     kubernetes.io/aws-ebs provisioner of EKS's gp2 class, which CSI
//     migration hands to the same driver), so that the driver deletes the
//     EBS volume; volumes with reclaim policy Retain are kept on purpose
//     and listed;
//  3. every NodePool and EC2NodeClass that the stack did not create (those
//     carry the stack's label; Pulumi deletes them afterwards in graph
//     order), so that Karpenter drains and terminates their nodes and
//     removes the classes' instance profiles; pods whose drain is still
//     blocked halfway through the bound (a PodDisruptionBudget that never
//     allows an eviction) are deleted, which no budget holds.
//
// Each step is bounded, retries transient errors within its bound, and
// says what it waits for at least every ReportEvery. Only proof that the
// cluster is gone (its API server's name no longer resolves, or EKS says
// it does not exist), or the user's PULUMI_K8S_DELETE_UNREACHABLE=true,
// turns an API server that cannot be reached into "nothing to clean": any
// other failure to reach it fails the step, naming the way out, since the
// load balancers and volumes would otherwise be left for good. A kind that
// is not installed has nothing to clean.
package cleanup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"nodeless-eks/internal/kubeapi"
	"nodeless-eks/internal/poll"
)

// EBSCSIDriver is the CSI driver name of the EBS CSI driver.
const EBSCSIDriver = "ebs.csi.aws.com"

// Options bound the cleanup and say what it keeps.
type Options struct {
	// OwnLabelKey and OwnLabelValue mark the stack's own NodePools and
	// EC2NodeClasses, which the cleanup never deletes; OwnNodePools and
	// OwnNodeClasses are their names, as the stack registered them. A
	// copy of the stack's pool keeps its label and is not the stack's:
	// Pulumi would never delete it. nil names, from the state of a version
	// before the names were set, leave the label alone to decide.
	OwnLabelKey, OwnLabelValue   string
	OwnNodePools, OwnNodeClasses []string
	// ReachTimeout bounds the wait for the API server to answer at all.
	ReachTimeout time.Duration
	// DeleteUnreachable gives up on an unreachable API server at once: the
	// user's PULUMI_K8S_DELETE_UNREACHABLE=true, which tells
	// pulumi-kubernetes the same of the stack's Kubernetes objects.
	DeleteUnreachable bool
	// ClusterExists asks EKS whether the cluster still exists, once its
	// API server has not answered within ReachTimeout; nil when it cannot
	// be asked. Only its "no" proves there is nothing to clean.
	ClusterExists func(ctx context.Context) (exists bool, status string, err error)
	// MarkKept tags the EBS volumes the cleanup keeps on purpose (volume
	// ID: PersistentVolume name) with KeptTagKey, so that the leftover
	// audit, after the cluster is gone, passes them; nil when AWS cannot
	// be asked (not an EKS kubeconfig).
	MarkKept func(ctx context.Context, volumes map[string]string) error
	// LoadBalancerTimeout, VolumeTimeout and NodeTimeout bound the steps.
	LoadBalancerTimeout, VolumeTimeout, NodeTimeout time.Duration
	// Settle is how long, once the load balancers it deleted are gone,
	// the cleanup watches for one that something recreates.
	Settle time.Duration
	// StuckPodWait is how long after its grace period a pod that holds a
	// claim may still be terminating before it is deleted at once; 0 is
	// StuckTerminating.
	StuckPodWait time.Duration
	// Interval is how often progress is checked; ReportEvery how often at
	// least it is reported.
	Interval, ReportEvery time.Duration
	// Log receives what the cleanup does and waits for.
	Log io.Writer
}

// pingTimeout bounds one try to reach the API server.
const pingTimeout = 30 * time.Second

// errNothingToClean ends the cleanup early, successfully.
var errNothingToClean = errors.New("nothing to clean")

// Run removes load balancers, then volumes, then foreign node pools and
// classes, each while the controllers that remove their AWS resources run.
func Run(ctx context.Context, api kubeapi.API, o Options) error {
	if o.OwnLabelKey == "" || o.OwnLabelValue == "" {
		return errors.New("the stack's own label is not set; without it the cleanup cannot tell the stack's node pools from others")
	}
	c := &cleaner{api: api, o: o, kept: map[string]string{}}
	if o.OwnNodePools == nil || o.OwnNodeClasses == nil {
		c.logf("the stack's state holds no names of its NodePools and EC2NodeClasses (written by an earlier version; `pulumi up` " +
			"records them): the label alone tells the stack's, and a copy of one of its pools passes for it")
	}
	if err := c.reach(ctx); err != nil {
		if errors.Is(err, errNothingToClean) {
			return nil
		}
		return err
	}
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"load balancers", c.loadBalancers},
		{"the LB controller's bindings, accelerators and Gateway configurations", c.controllerObjects},
		{"EBS volumes", c.volumes},
		{"node pools and node classes the stack did not create", c.nodes},
		{"load balancers, volumes, node pools and nodes made since the first step", c.lastLook},
	} {
		if err := step.run(ctx); err != nil && !errors.Is(err, errNothingToClean) {
			return fmt.Errorf("removing %s: %w; fix the cause and run `pulumi destroy` again (the cleanup starts over), or set "+
				"NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to destroy without it (see docs/troubleshooting.md)", step.name, err)
		}
	}
	c.logf("destroy cleanup done")
	return nil
}

type cleaner struct {
	api kubeapi.API
	o   Options
	// forced are the pods (by identity) deleted at once already: one a
	// finalizer holds stays, and is not deleted again on every poll.
	forced map[string]bool
	// kept are the EBS volumes kept on purpose: volume ID, PersistentVolume.
	kept map[string]string
}

func (c *cleaner) logf(format string, a ...any) {
	fmt.Fprintf(c.o.Log, format+"\n", a...)
}

// reach waits until the API server answers. A name that no longer
// resolves means the cluster is gone, and so does EKS's word that it no
// longer exists; an API server that still cannot be reached after
// ReachTimeout is a failure, unless the user said it is unreachable for
// good (DeleteUnreachable).
func (c *cleaner) reach(ctx context.Context) error {
	bound := c.o.ReachTimeout
	if c.o.DeleteUnreachable {
		bound = 0
	}
	deadline := time.Now().Add(bound)
	for {
		// Each try is bounded: a token from `aws eks get-token`, one GET.
		pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := c.api.Ping(pingCtx)
		cancel()
		switch {
		case err == nil:
			return nil
		case kubeapi.IsGone(err):
			return c.gone(ctx, err)
		case !kubeapi.IsTransient(err):
			return fmt.Errorf("asking the API server for its version: %w; to destroy without the cleanup, "+
				"set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true (see docs/troubleshooting.md)", err)
		case !time.Now().Before(deadline) && !kubeapi.IsUnreachable(err):
			return fmt.Errorf("the API server still fails after %s: %w; to destroy without the cleanup, "+
				"set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true (see docs/troubleshooting.md)", bound, err)
		case !time.Now().Before(deadline):
			return c.unreachable(ctx, err, bound)
		}
		c.logf("the API server does not answer yet (%v); retrying", err)
		if err := poll.Sleep(ctx, c.o.Interval); err != nil {
			return err
		}
	}
}

// gone decides a name that no longer resolves: EKS removes a cluster's
// DNS name with the cluster, but a resolver can say "no such host" of a
// name it cannot reach (a VPN's split DNS, an offline machine), so EKS is
// asked when it can be (an EKS kubeconfig); its "it exists", or no answer,
// fails the step. Without an EKS kubeconfig the name is the only proof.
func (c *cleaner) gone(ctx context.Context, cause error) error {
	if c.o.ClusterExists != nil {
		askCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		exists, status, err := c.o.ClusterExists(askCtx)
		switch {
		case err != nil:
			return fmt.Errorf("the API server's name does not resolve here (%v), and asking EKS whether the cluster still exists "+
				"failed (%v), so nothing proves it is gone (a resolver can say no such host of a name it cannot see): %s",
				cause, err, unreachableWayOut)
		case exists:
			return fmt.Errorf("the API server's name does not resolve here (%v), but EKS says the cluster exists (status %s): "+
				"this machine's resolver cannot see it; %s", cause, status, unreachableWayOut)
		}
		c.logf("the cluster's API server name no longer resolves and EKS says the cluster does not exist: "+
			"the cluster is gone, so nothing is left to clean in it; the leftover audit, once Pulumi has deleted the cluster, "+
			"looks in AWS (%v)", cause)
		return errNothingToClean
	}
	c.logf("the cluster's API server name no longer resolves: the cluster is gone, so nothing is left to clean (%v)", cause)
	return errNothingToClean
}

// unreachableWayOut is what to do when the cluster exists, or may, and
// its API server cannot be reached from where `pulumi destroy` runs.
const unreachableWayOut = "run `pulumi destroy` again from where the API server answers (a private endpoint answers only inside " +
	"its VPC, a public one only to the addresses in publicAccessCidrs); or, if it can never be reached again, set " +
	"NODELESS_EKS_SKIP_DESTROY_CLEANUP=true and PULUMI_K8S_DELETE_UNREACHABLE=true and delete the load balancers and EBS " +
	"volumes its workloads created by hand (docs/troubleshooting.md, \"During pulumi destroy\")"

// unreachable decides what an API server that does not answer means: the
// user's switch, or EKS's word that the cluster is gone, end the cleanup
// with nothing to clean; anything else fails it, since the load balancers
// and volumes its workloads created would be left for good.
func (c *cleaner) unreachable(ctx context.Context, cause error, waited time.Duration) error {
	if c.o.DeleteUnreachable {
		c.logf("cannot reach the API server (%v) and PULUMI_K8S_DELETE_UNREACHABLE=true says it is unreachable for good: skipping "+
			"the cleanup. Load balancers, EBS volumes and nodes that workloads created may be left; docs/troubleshooting.md says "+
			"how to find them", cause)
		return errNothingToClean
	}
	if c.o.ClusterExists == nil {
		return fmt.Errorf("the API server does not answer after %s (%v), and nothing proves the cluster is gone: %s", waited, cause, unreachableWayOut)
	}
	askCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	exists, status, err := c.o.ClusterExists(askCtx)
	switch {
	case err != nil:
		return fmt.Errorf("the API server does not answer after %s (%v), and asking EKS whether the cluster still exists failed "+
			"too (%v), so nothing proves it is gone: %s", waited, cause, err, unreachableWayOut)
	case !exists:
		c.logf("the API server does not answer (%v) and EKS says the cluster does not exist: nothing is left to clean in it; the "+
			"leftover audit, once Pulumi has deleted the cluster, looks in AWS", cause)
		return errNothingToClean
	}
	return fmt.Errorf("the API server does not answer after %s (%v), but EKS says the cluster exists (status %s), so the "+
		"load balancers and volumes its workloads created are still there: %s", waited, cause, status, unreachableWayOut)
}

// list lists r, retrying transient errors until ctx ends.
func (c *cleaner) list(ctx context.Context, r kubeapi.Resource) ([]kubeapi.Object, error) {
	for {
		objs, err := c.api.List(ctx, r)
		if err == nil || !kubeapi.IsTransient(err) || ctx.Err() != nil {
			return objs, err
		}
		c.logf("listing %s failed for now (%v); retrying", r, err)
		if err := poll.Sleep(ctx, c.o.Interval); err != nil {
			return nil, err
		}
	}
}

// remove deletes an object, retrying transient errors until ctx ends.
func (c *cleaner) remove(ctx context.Context, r kubeapi.Resource, namespace, name, why string) error {
	c.logf("deleting %s %s%s", r.Kind, qualified(namespace, name), why)
	return c.retry(ctx, "deleting "+r.Kind+" "+qualified(namespace, name), func() error { return c.api.Delete(ctx, r, namespace, name) })
}

// removeNow deletes a pod without a grace period, retrying transient
// errors until ctx ends.
func (c *cleaner) removeNow(ctx context.Context, namespace, name, why string) error {
	c.logf("deleting Pod %s at once%s", qualified(namespace, name), why)
	return c.retry(ctx, "deleting Pod "+qualified(namespace, name), func() error { return c.api.DeleteNow(ctx, kubeapi.Pods, namespace, name) })
}

// retry runs call until it succeeds, fails for good, or ctx ends.
func (c *cleaner) retry(ctx context.Context, what string, call func() error) error {
	for {
		err := call()
		if err == nil || !kubeapi.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		c.logf("%s failed for now (%v); retrying", what, err)
		if err := poll.Sleep(ctx, c.o.Interval); err != nil {
			return err
		}
	}
}

// waitFor polls remaining until it returns nothing, reporting what is left
// whenever it changes and at least every ReportEvery; it fails when the
// bound passes. Transient errors are retried within the bound.
func (c *cleaner) waitFor(ctx context.Context, bound time.Duration, what string, remaining func(context.Context) ([]string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	start := time.Now()
	var last []string
	var reported time.Time
	for {
		left, err := remaining(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			return err
		case err == nil && len(left) == 0:
			c.logf("%s: none left after %s", what, time.Since(start).Round(time.Second))
			return nil
		case err == nil:
			slices.Sort(left)
			if !slices.Equal(left, last) || time.Since(reported) >= c.o.ReportEvery {
				c.logf("waiting for %s: %d left (%s), %s of %s", what, len(left), brief(left), time.Since(start).Round(time.Second), bound)
				last, reported = left, time.Now()
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("timed out after %s waiting for %s: %d left (%s)", bound, what, len(last), brief(last))
		}
		if err := poll.Sleep(ctx, c.o.Interval); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// found is an object with its kind.
type found struct {
	r kubeapi.Resource
	o kubeapi.Object
}

// balancers are the Ingresses, LoadBalancer Services and Gateways, keyed
// by kind and identity.
func (c *cleaner) balancers(ctx context.Context) (map[string]found, error) {
	out := map[string]found{}
	for _, r := range []kubeapi.Resource{kubeapi.Ingresses, kubeapi.Services, kubeapi.Gateways} {
		objs, err := c.list(ctx, r)
		if r == kubeapi.Gateways && kubeapi.IsNotFound(err) {
			continue // the Gateway API is not installed
		}
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if r != kubeapi.Services || o.Str("spec", "type") == "LoadBalancer" {
				out[r.Kind+" "+identity(o)] = found{r, o}
			}
		}
	}
	return out, nil
}

// loadBalancers deletes every Ingress, LoadBalancer Service and Gateway
// and waits until those it deleted are gone: their finalizers go once the
// LB controller has deleted the load balancers. Then it watches for Settle
// more (a controller recreates what it owns on the delete's watch event,
// within seconds): one that something still running recreated fails the
// step, naming what made it. lastLook looks once more at the end.
func (c *cleaner) loadBalancers(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, c.o.LoadBalancerTimeout)
	defer cancel()
	before, err := c.balancers(ctx)
	if err != nil {
		return err
	}
	for _, key := range sortedKeys(before) {
		f := before[key]
		if f.o.Deleting() {
			continue
		}
		why := ""
		if f.r == kubeapi.Services {
			why = " (type LoadBalancer)"
		}
		if err := c.remove(ctx, f.r, f.o.Namespace(), f.o.Name(), why); err != nil {
			return err
		}
	}
	var recreated []string
	split := func(now map[string]found) (left []string) {
		recreated = recreated[:0]
		for key, f := range now {
			name := f.r.Kind + " " + qualified(f.o.Namespace(), f.o.Name())
			if _, deleted := before[key]; deleted {
				left = append(left, name)
			} else {
				recreated = append(recreated, name+" ("+maker(f.o)+")")
			}
		}
		return left
	}
	err = c.waitFor(ctx, c.o.LoadBalancerTimeout, "Ingresses, LoadBalancer Services and Gateways (the LB controller deletes their load balancers)",
		func(ctx context.Context) ([]string, error) {
			now, err := c.balancers(ctx)
			return split(now), err
		})
	if err != nil {
		return err
	}
	// The settle has a bound of its own: the wait may have used all of its.
	settleCtx, cancelSettle := context.WithTimeout(parent, c.o.Settle+pingTimeout)
	defer cancelSettle()
	for settled := time.Now().Add(c.o.Settle); len(recreated) == 0 && time.Now().Before(settled); {
		if err := poll.Sleep(settleCtx, min(c.o.Interval, time.Until(settled))); err != nil {
			return err
		}
		now, err := c.balancers(settleCtx)
		if err != nil {
			return err
		}
		split(now)
	}
	return refuseRecreated(recreated, "a load balancer and its network interfaces")
}

// lastLook fails the cleanup over an Ingress, LoadBalancer Service or
// Gateway, or a NodePool or EC2NodeClass without the stack's label, that
// exists after the other steps: the cleanup deleted every one, so this one
// was made since (or made again under its name, which Kubernetes allows
// only once the old one is gone), and what it holds would outlive the
// controllers the destroy deletes next. One being deleted counts too: its
// load balancer or nodes may still be there.
func (c *cleaner) lastLook(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.ReachTimeout)
	defer cancel()
	now, err := c.balancers(ctx)
	if err != nil {
		return err
	}
	var made []string
	for _, key := range sortedKeys(now) {
		f := now[key]
		made = append(made, f.r.Kind+" "+qualified(f.o.Namespace(), f.o.Name())+" ("+maker(f.o)+")")
	}
	for _, r := range []kubeapi.Resource{kubeapi.NodePools, kubeapi.EC2NodeClasses} {
		objs, err := c.list(ctx, r)
		if kubeapi.IsNotFound(err) {
			continue // Karpenter's CRDs are not installed
		}
		if err != nil {
			return err
		}
		for _, o := range objs {
			if !c.owns(r, o) {
				made = append(made, r.Kind+" "+o.Name()+" ("+maker(o)+")")
			}
		}
	}
	// What makes an EBS volume that the driver, gone with the cluster,
	// would never delete; and a volume it has not deleted.
	makers, err := c.volumeMakers(ctx)
	if err != nil {
		return err
	}
	for _, m := range makers {
		made = append(made, m.r.Kind+" "+qualified(m.o.Namespace(), m.o.Name())+" ("+maker(m.o)+")")
	}
	pvs, err := c.list(ctx, kubeapi.Volumes)
	if err != nil {
		return err
	}
	doomed, _, _ := c.ebsVolumes(pvs, false)
	made = append(made, doomed...)
	// A node of a pool that is not the stack's outlives Karpenter.
	claims, err := c.list(ctx, kubeapi.NodeClaims)
	if err != nil && !kubeapi.IsNotFound(err) {
		return err
	}
	for _, nc := range claims {
		switch pool := nc.Label("karpenter.sh/nodepool"); {
		case pool == "":
			// A standalone NodeClaim (Karpenter's v1 API design allows one).
			made = append(made, "standalone NodeClaim "+nc.Name()+" ("+maker(nc)+")")
		case c.o.OwnNodePools != nil && !slices.Contains(c.o.OwnNodePools, pool):
			made = append(made, "NodeClaim "+nc.Name()+" of NodePool "+pool+" ("+maker(nc)+")")
		}
	}
	slices.Sort(made)
	return refuseMade("there after the cleanup's steps", made, "a load balancer and its network interfaces, EBS volumes, or nodes")
}

// lbControllerKinds are the LB controller's own kinds that carry its
// finalizers, each with its older version: a binding of a target group
// (the controller deregisters its targets), a Global Accelerator (it
// deletes the accelerator), and the Gateway API configurations (finalized
// on create; the controller lets one go once nothing references it). Left
// behind when the controller is deleted, they keep their CRDs Terminating,
// and the stack's delete of those CRDs times out on every run.
var lbControllerKinds = [][]kubeapi.Resource{
	{kubeapi.TargetGroupBindings},
	{kubeapi.GlobalAccelerators},
	{kubeapi.ListenerRuleConfigurations, kubeapi.ListenerRuleConfigurationsV1beta1},
	{kubeapi.TargetGroupConfigurations, kubeapi.TargetGroupConfigurationsV1beta1},
	{kubeapi.LoadBalancerConfigurations, kubeapi.LoadBalancerConfigurationsV1beta1},
}

// configUsers are the Gateway API objects that keep the LB controller's
// configurations in use, whose finalizers it keeps while any of them
// exists (v3.5.0): a ListenerRuleConfiguration while an HTTPRoute or
// GRPCRoute names it in an ExtensionRef filter
// (pkg/gateway/routeutils/listener_rule_config_utils.go), a
// LoadBalancerConfiguration while a GatewayClass of the controller names
// it as its parametersRef (pkg/gateway/gatewayutils/lb_config_utils.go),
// and a default TargetGroupConfiguration while such a
// LoadBalancerConfiguration is (controllers/gateway/
// targetgroup_configuration_controller.go). Once the Gateways and their
// load balancers are gone these hold nothing in AWS, so the cleanup
// deletes them with the configurations; left in place, the configurations
// would wait out the bound on every run. Routes that name no
// configuration of the controller, and other controllers' classes, stay.
var configUsers = []struct {
	r    kubeapi.Resource
	uses func(kubeapi.Object) bool
}{
	{kubeapi.GatewayClasses, ofLBController},
	{kubeapi.HTTPRoutes, namesRuleConfiguration},
	{kubeapi.GRPCRoutes, namesRuleConfiguration},
}

// ofLBController is a GatewayClass of the LB controller: its controller
// names (pkg/gateway/constants/controller_constants.go at v3.5.0).
func ofLBController(class kubeapi.Object) bool {
	c := class.Str("spec", "controllerName")
	return c == "gateway.k8s.aws/alb" || c == "gateway.k8s.aws/nlb"
}

// namesRuleConfiguration is a route with a rule whose filter is an
// ExtensionRef to a ListenerRuleConfiguration.
func namesRuleConfiguration(route kubeapi.Object) bool {
	for _, rule := range route.Items("spec", "rules") {
		for _, f := range rule.Items("filters") {
			if f.Str("extensionRef", "group") == "gateway.k8s.aws" && f.Str("extensionRef", "kind") == "ListenerRuleConfiguration" {
				return true
			}
		}
	}
	return false
}

// controllerObjects deletes what is left of the LB controller's own kinds
// once the load balancers are gone (a binding or configuration of an
// Ingress, Service or Gateway is gone with it by then; one a user made is
// not), and waits, within the load balancers' bound, until the controller
// has let them go. One it does not let go is named with the command that
// removes its finalizer, after the controller has had its chance. A kind
// that is not installed has none.
func (c *cleaner) controllerObjects(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.LoadBalancerTimeout)
	defer cancel()
	served := map[string]kubeapi.Resource{} // kind: the version served
	find := func(ctx context.Context) (map[string]found, error) {
		out := map[string]found{}
		for _, u := range configUsers {
			objs, err := c.list(ctx, u.r)
			if kubeapi.IsNotFound(err) {
				continue // the Gateway API, or this kind of it, is not installed
			}
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				if u.uses(o) {
					out[u.r.Kind+" "+identity(o)] = found{u.r, o}
				}
			}
		}
		for _, versions := range lbControllerKinds {
			for _, r := range versions {
				if v, ok := served[r.Kind]; ok && v != r {
					continue
				}
				objs, err := c.list(ctx, r)
				if kubeapi.IsNotFound(err) {
					continue // not installed, or not in this version
				}
				if err != nil {
					return nil, err
				}
				served[r.Kind] = r
				for _, o := range objs {
					out[r.Kind+" "+identity(o)] = found{r, o}
				}
				break
			}
		}
		return out, nil
	}
	before, err := find(ctx)
	if err != nil {
		return err
	}
	if len(before) == 0 {
		return nil
	}
	for _, key := range sortedKeys(before) {
		if f := before[key]; !f.o.Deleting() {
			why := " (the LB controller finalizes it)"
			if f.r.GroupVersion == kubeapi.GatewayClasses.GroupVersion {
				why = " (it keeps the LB controller's configurations in use)"
			}
			if err := c.remove(ctx, f.r, f.o.Namespace(), f.o.Name(), why); err != nil {
				return err
			}
		}
	}
	var left []found
	err = c.waitFor(ctx, c.o.LoadBalancerTimeout, "the LB controller's bindings, accelerators and configurations, and the routes and classes that use them (it lets each go once done)",
		func(ctx context.Context) ([]string, error) {
			now, err := find(ctx)
			if err != nil {
				return nil, err // left keeps the last answer, for the commands below
			}
			var names []string
			left = left[:0]
			for key, f := range now {
				if _, deleted := before[key]; deleted {
					names = append(names, f.r.Kind+" "+qualified(f.o.Namespace(), f.o.Name()))
					left = append(left, f)
				}
			}
			return names, nil
		})
	if err != nil {
		var cmds []string
		for _, f := range left {
			ns := ""
			if f.o.Namespace() != "" {
				ns = " -n " + f.o.Namespace()
			}
			cmds = append(cmds, fmt.Sprintf("kubectl%s patch %s.%s %s --type merge -p '{\"metadata\":{\"finalizers\":null}}'",
				ns, f.r.Plural, strings.Split(f.r.GroupVersion, "/")[0], f.o.Name()))
		}
		slices.Sort(cmds)
		// The controller's webhooks refuse these UPDATEs while no pod of
		// it serves them (failurePolicy Fail on TargetGroupBindings: chart
		// v3.5.0 templates/webhook.yaml), the very case a patch is for.
		return fmt.Errorf("%w. The LB controller did not let them go (an object the cleanup does not delete still references a "+
			"configuration, or the controller is failing: its logs say); once what they held in AWS is gone, remove their finalizers. "+
			"While no controller pod serves its webhooks, they refuse these updates: delete the webhook configurations first "+
			"(a later upgrade of the release makes them again): %s; then %s", err, lbWebhookDelete, strings.Join(cmds, "; "))
	}
	return nil
}

// lbWebhookDelete deletes the LB controller's webhook configurations,
// which its chart labels with its release (the program's is named
// aws-load-balancer-controller: addons/lbc.go).
const lbWebhookDelete = "kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration -l app.kubernetes.io/instance=aws-load-balancer-controller"

// identity tells an object from its successor of the same name: its UID,
// or its name where the API gave none.
func identity(o kubeapi.Object) string {
	if uid := o.Str("metadata", "uid"); uid != "" {
		return qualified(o.Namespace(), o.Name()) + "#" + uid
	}
	return qualified(o.Namespace(), o.Name())
}

// volumes deletes the claims of the EBS volumes whose reclaim policy is
// Delete, and the pods that hold them (a claim in use is kept until no
// scheduled pod uses it), then waits until the PersistentVolumes, and with
// them the EBS volumes, are gone. StatefulSets with claim templates go
// first: their controller would recreate a deleted claim, and a new
// volume, with the next pod. A volume that appears meanwhile is handled
// the same way. Volumes kept by reclaim policy Retain are listed, and
// their claims deleted too (the volume stays, Released, and so does the
// EBS volume: that is what Retain means), so that the driver detaches
// them while it still runs: a volume still attached when the EBS CSI
// add-on is gone keeps its VolumeAttachment, and Karpenter waits for it
// before it terminates the node (its drain waits for volume detachment,
// up to the pool's terminationGracePeriod), which would stall the destroy
// of the stack's own pools by that long. The wait ends when every such
// volume's VolumeAttachment is gone.
func (c *cleaner) volumes(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.VolumeTimeout)
	defer cancel()
	pvs, err := c.list(ctx, kubeapi.Volumes)
	if err != nil {
		return err
	}
	doomed, _, kept := c.ebsVolumes(pvs, true)
	c.markKept(ctx)
	makers, err := c.volumeMakers(ctx)
	if err != nil {
		return err
	}
	if len(doomed) == 0 && len(kept) == 0 && len(makers) == 0 {
		c.logf("no EBS volume with a claim, and nothing that makes one")
		return nil
	}
	sets, err := c.list(ctx, kubeapi.StatefulSets)
	if err != nil {
		return err
	}
	for _, set := range sets {
		if templates, _ := set.Get("spec", "volumeClaimTemplates").([]any); len(templates) > 0 && !set.Deleting() {
			if err := c.remove(ctx, kubeapi.StatefulSets, set.Namespace(), set.Name(), " (it would recreate its claims, and their volumes)"); err != nil {
				return err
			}
		}
	}
	asked := map[string]bool{} // UIDs (or names) of the claims deleted
	return c.waitFor(ctx, c.o.VolumeTimeout, "EBS volumes (the EBS CSI driver deletes those with reclaim policy Delete once their claims "+
		"are gone, and detaches those it keeps)",
		func(ctx context.Context) ([]string, error) {
			// A claim still Pending has no volume yet, which it gets once a
			// pod that mounts it is scheduled (WaitForFirstConsumer); each
			// round, since a StatefulSet recreates the claims of its pending
			// pods until it is gone (stateful_set_control.go).
			makers, err := c.volumeMakers(ctx)
			if err != nil {
				return nil, err
			}
			for _, m := range makers {
				if m.r == kubeapi.Claims && !asked[identity(m.o)] {
					asked[identity(m.o)] = true
					if err := c.remove(ctx, kubeapi.Claims, m.o.Namespace(), m.o.Name(), " (Pending: its EBS volume is made once a pod needs it)"); err != nil {
						return nil, err
					}
				}
			}
			pvs, err := c.list(ctx, kubeapi.Volumes)
			if err != nil {
				return nil, err
			}
			doomed, claims, kept := c.ebsVolumes(pvs, false)
			for _, claim := range sortedKeys(claims) {
				// By UID: a claim recreated under the same name (by an
				// operator that still runs) is deleted again.
				if asked[claims[claim].uid] {
					continue
				}
				asked[claims[claim].uid] = true
				ns, name, _ := strings.Cut(claim, "/")
				why := " (its EBS volume has reclaim policy Delete)"
				if claims[claim].kept {
					why = " (its EBS volume is kept: it stays, and is detached while the driver runs)"
				}
				if err := c.remove(ctx, kubeapi.Claims, ns, name, why); err != nil {
					return nil, err
				}
			}
			if err := c.releaseClaims(ctx, claims); err != nil {
				return nil, err
			}
			attached, err := c.attached(ctx, kept)
			if err != nil {
				return nil, err
			}
			return append(doomed, attached...), nil
		})
}

// markKept tags the volumes kept on purpose in AWS, for the leftover
// audit. A volume it cannot tag is said, not fatal: the audit then names
// it, with the command that keeps it.
func (c *cleaner) markKept(ctx context.Context) {
	switch {
	case len(c.kept) == 0:
	case c.o.MarkKept == nil:
		c.logf("the kept volumes are not marked as kept in AWS (the kubeconfig is not EKS's), so the leftover audit, after the " +
			"cluster is gone, will name them")
	default:
		if err := c.o.MarkKept(ctx, c.kept); err != nil {
			c.logf("could not mark the kept volumes as kept in AWS (%v); the leftover audit, after the cluster is gone, will name them", err)
			return
		}
		c.logf("marked %d kept EBS volume(s) with tag %s, which the leftover audit passes", len(c.kept), KeptTagKey)
	}
}

// volumeMakers are what makes EBS volumes without a PersistentVolume yet:
// StatefulSets whose claim templates are of an EBS StorageClass (the
// default class when they name none, as the DefaultStorageClass admission
// plugin gives their claims), and Pending claims of one. StorageClasses
// not served, none is.
func (c *cleaner) volumeMakers(ctx context.Context) ([]found, error) {
	classes, err := c.list(ctx, kubeapi.StorageClasses)
	if kubeapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ebs := map[string]bool{}
	var defaultClass kubeapi.Object
	for _, sc := range classes {
		if p := sc.Str("provisioner"); p == EBSCSIDriver || p == "kubernetes.io/aws-ebs" {
			ebs[sc.Name()] = true
		}
		// The newest default, the first by name among equals, as
		// Kubernetes picks it (pkg/volume/util/storageclass.go).
		if sc.Annotation("storageclass.kubernetes.io/is-default-class") == "true" || sc.Annotation("storageclass.beta.kubernetes.io/is-default-class") == "true" {
			created, newest := sc.Str("metadata", "creationTimestamp"), ""
			if defaultClass != nil {
				newest = defaultClass.Str("metadata", "creationTimestamp")
			}
			if defaultClass == nil || created > newest || created == newest && sc.Name() < defaultClass.Name() {
				defaultClass = sc
			}
		}
	}
	class := func(claim kubeapi.Object) string {
		// The beta annotation first, as Kubernetes reads it
		// (GetPersistentVolumeClaimClass); an empty storageClassName is
		// no class; none at all is the default, which admission, or the
		// retroactive assignment of a default, gives the claim.
		if c := claim.Annotation("volume.beta.kubernetes.io/storage-class"); c != "" {
			return c
		}
		if c, set := claim.Get("spec", "storageClassName").(string); set {
			return c
		}
		if defaultClass == nil {
			return ""
		}
		return defaultClass.Name()
	}
	if len(ebs) == 0 {
		return nil, nil
	}
	var out []found
	sets, err := c.list(ctx, kubeapi.StatefulSets)
	if err != nil {
		return nil, err
	}
	for _, set := range sets {
		if set.Deleting() {
			continue // it makes no more claims
		}
		for _, t := range set.Items("spec", "volumeClaimTemplates") {
			if ebs[class(t)] {
				out = append(out, found{kubeapi.StatefulSets, set})
				break
			}
		}
	}
	claims, err := c.list(ctx, kubeapi.Claims)
	if err != nil {
		return nil, err
	}
	for _, claim := range claims {
		if ebs[class(claim)] && claim.Str("status", "phase") == "Pending" && !claim.Deleting() {
			out = append(out, found{kubeapi.Claims, claim})
		}
	}
	return out, nil
}

// attached are the kept volumes (PersistentVolume names) that a
// VolumeAttachment of the EBS CSI driver still attaches to a node. Under
// CSI migration the in-tree volumes attach through the same driver.
func (c *cleaner) attached(ctx context.Context, kept map[string]bool) ([]string, error) {
	if len(kept) == 0 {
		return nil, nil
	}
	vas, err := c.list(ctx, kubeapi.VolumeAttachments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, va := range vas {
		if pv := va.Str("spec", "source", "persistentVolumeName"); kept[pv] && va.Str("spec", "attacher") == EBSCSIDriver {
			out = append(out, "VolumeAttachment "+va.Name()+" of kept PersistentVolume "+pv+" on node "+va.Str("spec", "nodeName"))
		}
	}
	return out, nil
}

// claimRef is a claim the cleanup deletes: its identity, and whether its
// volume is kept.
type claimRef struct {
	uid  string
	kept bool
}

// ebsVolume is the ID of the EBS volume behind a PersistentVolume: one the
// EBS CSI driver provisioned (spec.csi), or one of the in-tree
// kubernetes.io/aws-ebs provisioner, which EKS's own gp2 StorageClass uses
// and which CSI migration leaves written as spec.awsElasticBlockStore,
// "aws://<zone>/vol-..." or "vol-..." (k8s.io/csi-translation-lib
// plugins/aws_ebs.go); under migration the EBS CSI driver deletes those
// too.
func ebsVolume(pv kubeapi.Object) (string, bool) {
	if pv.Str("spec", "csi", "driver") == EBSCSIDriver {
		return pv.Str("spec", "csi", "volumeHandle"), true
	}
	if id := pv.Str("spec", "awsElasticBlockStore", "volumeID"); id != "" {
		return id[strings.LastIndex(id, "/")+1:], true
	}
	return "", false
}

// provisioned is a PersistentVolume that a provisioner made, and so
// deletes for reclaim policy Delete: the EBS CSI driver, or the in-tree
// provisioner that CSI migration hands to it. Kubernetes deletes a volume
// only through the provisioner its pv.kubernetes.io/provisioned-by
// annotation names (pkg/controller/volume/persistentvolume/pv_controller.go,
// deleteVolumeOperation; the CSI external-provisioner's shouldDelete, in
// sig-storage-lib-external-provisioner, compares it with its own name); a
// static volume, made by hand, has none, and its PersistentVolume goes
// Failed ("no deletable volume plugin matched") and stays.
func provisioned(pv kubeapi.Object) bool {
	by := pv.Annotation("pv.kubernetes.io/provisioned-by")
	return by == EBSCSIDriver || by == "kubernetes.io/aws-ebs" || pv.Annotation("pv.kubernetes.io/migrated-to") == EBSCSIDriver
}

// ebsVolumes are the EBS volumes with reclaim policy Delete (doomed, as
// "PersistentVolume <name> (<volume>)"), the claims of every EBS volume
// (namespace/name: UID, or the name where the API gave none), and the
// kept volumes (Retain, or static: made by hand, which nothing deletes;
// by PersistentVolume name); with report, each kept volume is listed with
// the command that deletes it.
func (c *cleaner) ebsVolumes(pvs []kubeapi.Object, report bool) (doomed []string, claims map[string]claimRef, kept map[string]bool) {
	claims, kept = map[string]claimRef{}, map[string]bool{}
	for _, pv := range pvs {
		volumeID, ok := ebsVolume(pv)
		if !ok {
			continue
		}
		claim := "none"
		if name := pv.Str("spec", "claimRef", "name"); name != "" {
			claim = qualified(pv.Str("spec", "claimRef", "namespace"), name)
		}
		retain := pv.Str("spec", "persistentVolumeReclaimPolicy") == "Retain"
		why := "its reclaim policy is Retain"
		if !retain && !provisioned(pv) {
			retain, why = true, "it was made by hand (no pv.kubernetes.io/provisioned-by of the EBS CSI driver), so nothing deletes it for reclaim policy Delete"
		}
		if retain && report {
			c.logf("keeping EBS volume %s (PersistentVolume %s, claim %s): %s. It is billed until you "+
				"delete it: aws ec2 delete-volume --volume-id %s", volumeID, pv.Name(), claim, why, volumeID)
			c.kept[volumeID] = pv.Name()
		}
		if retain {
			kept[pv.Name()] = true // waited for until detached, claimed or not
		} else {
			doomed = append(doomed, "PersistentVolume "+pv.Name()+" ("+volumeID+")")
		}
		if claim == "none" || pv.Str("status", "phase") == "Released" {
			continue
		}
		ref := claimRef{uid: pv.Str("spec", "claimRef", "uid"), kept: retain}
		if ref.uid == "" {
			ref.uid = claim
		}
		claims[claim] = ref
	}
	return doomed, claims, kept
}

// releaseClaims deletes the scheduled pods that mount one of claims, by
// name or as a generic ephemeral volume (whose claim is named
// <pod>-<volume>: Kubernetes docs, "Ephemeral Volumes", generic ephemeral
// volumes' PersistentVolumeClaim naming): the claims' protection finalizer
// holds them while such a pod exists (Kubernetes "Storage Object in Use
// Protection"). Pods that controllers recreate stay unscheduled, since the
// scheduler refuses a claim that is being deleted (kube-scheduler's
// VolumeBinding plugin: "persistentvolumeclaim is being deleted"). A pod
// still terminating a minute after its grace period ended (its kubelet
// never confirmed: a node gone, a finalizer) is deleted at once, as
// `kubectl delete --grace-period=0 --force` does; its claim stays in use
// until then.
func (c *cleaner) releaseClaims(ctx context.Context, claims map[string]claimRef) error {
	pods, err := c.list(ctx, kubeapi.Pods)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if pod.Str("spec", "nodeName") == "" || !holdsOneOf(pod, claims) {
			continue
		}
		if !pod.Deleting() {
			if err := c.remove(ctx, kubeapi.Pods, pod.Namespace(), pod.Name(), " (it holds a claim of a volume to delete)"); err != nil {
				return err
			}
			continue
		}
		if ends := pod.Time("metadata", "deletionTimestamp"); !ends.IsZero() && time.Since(ends) > c.stuckWait() && !c.forced[identity(pod)] {
			why := fmt.Sprintf(" (its grace period ended at %s and its kubelet has not confirmed: it holds a claim of a volume to delete)", ends.Format(time.RFC3339))
			if err := c.removeNow(ctx, pod.Namespace(), pod.Name(), why); err != nil {
				return err
			}
			if c.forced == nil {
				c.forced = map[string]bool{}
			}
			c.forced[identity(pod)] = true
			if fin, _ := pod.Get("metadata", "finalizers").([]any); len(fin) > 0 {
				c.logf("pod %s keeps finalizers %v: it stays, and its claim in use, until whatever owns them removes them", qualified(pod.Namespace(), pod.Name()), fin)
			}
		}
	}
	return nil
}

// StuckTerminating is how long after its grace period a pod may still be
// terminating before the cleanup deletes it at once, unless
// Options.StuckPodWait says otherwise.
const StuckTerminating = time.Minute

// stuckWait is Options.StuckPodWait, or StuckTerminating.
func (c *cleaner) stuckWait() time.Duration {
	if c.o.StuckPodWait > 0 {
		return c.o.StuckPodWait
	}
	return StuckTerminating
}

// holdsOneOf reports whether a pod mounts one of claims.
func holdsOneOf(pod kubeapi.Object, claims map[string]claimRef) bool {
	for _, v := range pod.Items("spec", "volumes") {
		claim := v.Str("persistentVolumeClaim", "claimName")
		if v.Get("ephemeral") != nil {
			claim = pod.Name() + "-" + v.Str("name")
		}
		if _, doomed := claims[qualified(pod.Namespace(), claim)]; claim != "" && doomed {
			return true
		}
	}
	return false
}

// nodes deletes the NodePools the stack did not create and waits for
// Karpenter to drain and terminate their nodes, then does the same for
// the EC2NodeClasses it did not create, whose finalizer removes their
// instance profiles. What it waits for it knows by UID, as it does load
// balancers: a pool or class that a controller still running recreates
// under the same name (an ArgoCD application outside ArgoCD, an operator)
// fails the step, naming what made it.
func (c *cleaner) nodes(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.NodeTimeout)
	defer cancel()
	foreignPools, err := c.foreign(ctx, kubeapi.NodePools)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(foreignPools) {
		if err := c.remove(ctx, kubeapi.NodePools, "", name, " (the stack did not create it)"); err != nil {
			return err
		}
	}
	// The nodes to drain are the foreign pools' claims now (a claim of a
	// pool recreated later is that pool's), and the standalone claims,
	// which no pool owns (Karpenter's v1 API allows one) and Pulumi never
	// deletes: the cleanup deletes those itself.
	claims, err := c.list(ctx, kubeapi.NodeClaims)
	if err != nil && !kubeapi.IsNotFound(err) {
		return err
	}
	draining := map[string]bool{}
	for _, nc := range claims {
		pool := nc.Label("karpenter.sh/nodepool")
		if _, ours := foreignPools[pool]; ours {
			draining[identity(nc)] = true
		}
		if pool == "" {
			// Waited for whether or not it is already going (a run before
			// this one deleted it).
			draining[identity(nc)] = true
			if nc.Deleting() {
				continue
			}
			if err := c.remove(ctx, kubeapi.NodeClaims, "", nc.Name(), " (a standalone NodeClaim: no pool owns it, and the stack did not create it)"); err != nil {
				return err
			}
		}
	}
	if len(foreignPools) > 0 || len(draining) > 0 {
		forceAfter := time.Now().Add(c.o.NodeTimeout / 2)
		var recreated []string
		err = c.waitFor(ctx, c.o.NodeTimeout, "nodes of the deleted NodePools (Karpenter drains and terminates them)",
			func(ctx context.Context) ([]string, error) {
				claims, err := c.list(ctx, kubeapi.NodeClaims)
				if err != nil && !kubeapi.IsNotFound(err) {
					return nil, err
				}
				var left []string
				nodes := map[string]string{} // node name: its pool
				for _, nc := range claims {
					if pool := nc.Label("karpenter.sh/nodepool"); draining[identity(nc)] {
						left = append(left, "NodeClaim "+nc.Name()+" of NodePool "+cmp.Or(pool, "none"))
						if node := nc.Str("status", "nodeName"); node != "" {
							nodes[node] = pool
						}
					}
				}
				if len(nodes) > 0 && !time.Now().Before(forceAfter) {
					if err := c.forceDrain(ctx, nodes); err != nil {
						return nil, err
					}
				}
				pools, err := c.list(ctx, kubeapi.NodePools)
				recreated = recreated[:0]
				for _, p := range pools {
					switch uid, deleted := foreignPools[p.Name()]; {
					case !deleted:
					case uid == identity(p):
						left = append(left, "NodePool "+p.Name())
					default:
						recreated = append(recreated, "NodePool "+p.Name()+" ("+maker(p)+")")
					}
				}
				return left, err
			})
		if err != nil {
			return err
		}
		if err := refuseRecreated(recreated, "nodes"); err != nil {
			return err
		}
	}
	foreignClasses, err := c.foreign(ctx, kubeapi.EC2NodeClasses)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(foreignClasses) {
		if err := c.remove(ctx, kubeapi.EC2NodeClasses, "", name, " (the stack did not create it)"); err != nil {
			return err
		}
	}
	if len(foreignClasses) == 0 {
		return nil
	}
	var recreated []string
	err = c.waitFor(ctx, c.o.NodeTimeout, "the deleted EC2NodeClasses (Karpenter removes their instance profiles)",
		func(ctx context.Context) ([]string, error) {
			classes, err := c.list(ctx, kubeapi.EC2NodeClasses)
			var left []string
			recreated = recreated[:0]
			for _, nc := range classes {
				switch uid, deleted := foreignClasses[nc.Name()]; {
				case !deleted:
				case uid == identity(nc):
					left = append(left, "EC2NodeClass "+nc.Name())
				default:
					recreated = append(recreated, "EC2NodeClass "+nc.Name()+" ("+maker(nc)+")")
				}
			}
			return left, err
		})
	if err != nil {
		return err
	}
	return refuseRecreated(recreated, "instance profiles")
}

// refuseRecreated fails a step over what something still running
// recreated after the cleanup deleted it: once the controller that would
// remove what it holds is gone, that would outlive the stack. The step
// does not wait for it (whatever recreated it once does so again), so it
// fails as soon as what the cleanup deleted is gone.
func refuseRecreated(recreated []string, holds string) error {
	return refuseMade("recreated after the cleanup deleted them", recreated, holds)
}

// refuseMade fails a step over what something still running made: how,
// then what, and what it holds.
func refuseMade(how string, recreated []string, holds string) error {
	if len(recreated) == 0 {
		return nil
	}
	slices.Sort(recreated)
	return fmt.Errorf("%s, by something that still runs: %s; what they hold (%s) would "+
		"outlive the stack. Stop what makes them (scale it to 0 or delete it), then run `pulumi destroy` again", how, strings.Join(recreated, ", "), holds)
}

// maker names what made o: its owners (ownerReferences), or else the
// field managers of its own fields (managedFields without a subresource,
// oldest write first: each entry's time is its manager's last write, so
// this names who wrote it, not proof of who created it).
func maker(o kubeapi.Object) string {
	var owners []string
	for _, ref := range o.Items("metadata", "ownerReferences") {
		owners = append(owners, ref.Str("kind")+" "+qualified(o.Namespace(), ref.Str("name")))
	}
	if len(owners) > 0 {
		return "owned by " + strings.Join(owners, ", ")
	}
	var entries []kubeapi.Object
	for _, f := range o.Items("metadata", "managedFields") {
		if f.Str("manager") != "" && f.Str("subresource") == "" {
			entries = append(entries, f)
		}
	}
	slices.SortStableFunc(entries, func(a, b kubeapi.Object) int { return a.Time("time").Compare(b.Time("time")) })
	var managers []string
	for _, f := range entries {
		if !slices.Contains(managers, f.Str("manager")) {
			managers = append(managers, f.Str("manager"))
		}
	}
	if len(managers) == 0 {
		return "no owner or field manager recorded"
	}
	return "written by field manager " + strings.Join(managers, ", ")
}

// forceDrain deletes the pods still on nodes (name: pool) whose drain has
// not finished: a PodDisruptionBudget that never allows an eviction holds
// a drain until the pool's terminationGracePeriod, forever without one
// (Karpenter docs, concepts/disruption, "Termination Grace Period"); a
// delete is not an eviction, and no budget holds it (Kubernetes docs,
// "Disruptions": budgets apply to the Eviction API only). DaemonSet pods stay:
// a drain does not wait for them.
func (c *cleaner) forceDrain(ctx context.Context, nodes map[string]string) error {
	pods, err := c.list(ctx, kubeapi.Pods)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		pool, ok := nodes[pod.Str("spec", "nodeName")]
		if !ok || pod.Deleting() || ownedBy(pod, "DaemonSet") || pod.Annotation("kubernetes.io/config.mirror") != "" {
			continue // a static pod's mirror cannot be deleted for good
		}
		why := fmt.Sprintf(" (its node %s of deleted NodePool %s is still not drained, halfway through %s)", pod.Str("spec", "nodeName"), pool, c.o.NodeTimeout)
		if err := c.remove(ctx, kubeapi.Pods, pod.Namespace(), pod.Name(), why); err != nil {
			return err
		}
	}
	return nil
}

func ownedBy(o kubeapi.Object, kind string) bool {
	for _, owner := range o.Items("metadata", "ownerReferences") {
		if owner.Str("kind") == kind {
			return true
		}
	}
	return false
}

// foreign lists the objects of r that do not carry the stack's label, by
// name with their identity. A kind that is not installed has none.
func (c *cleaner) foreign(ctx context.Context, r kubeapi.Resource) (map[string]string, error) {
	objs, err := c.list(ctx, r)
	if kubeapi.IsNotFound(err) {
		c.logf("%s are not served (is Karpenter's CRD installed?): none to delete", r.Kind)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, o := range objs {
		if c.owns(r, o) {
			c.logf("keeping %s %s: the stack created it, and destroy deletes it after the cleanup", r.Kind, o.Name())
			continue
		}
		out[o.Name()] = identity(o) // one already being deleted is waited for too
	}
	return out, nil
}

// owns is true of the stack's own NodePool or EC2NodeClass: its label,
// and its name among those the stack registered.
func (c *cleaner) owns(r kubeapi.Resource, o kubeapi.Object) bool {
	names := c.o.OwnNodePools
	if r == kubeapi.EC2NodeClasses {
		names = c.o.OwnNodeClasses
	}
	return o.Label(c.o.OwnLabelKey) == c.o.OwnLabelValue && (names == nil || slices.Contains(names, o.Name()))
}

// qualified names an object in messages.
var qualified = kubeapi.Qualified

// brief lists at most five names.
func brief(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
