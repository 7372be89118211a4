package cleanup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"nodeless-eks/internal/awscli"
	"nodeless-eks/internal/kubeapi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ownKey, ownValue = "nodeless-eks/stack", "nodeless-eks.prod"

// fakeCluster is an API server with the controllers the cleanup relies on:
// the LB controller, the EBS CSI driver, Karpenter, and Kubernetes's own
// claim protection. Each List is a tick on which they act; each can be off.
type fakeCluster struct {
	mu      sync.Mutex
	objs    map[kubeapi.Resource][]kubeapi.Object
	deletes []string // "Kind namespace/name", in order

	lbController, csiDriver, karpenter bool
	// pdbBlocks keeps Karpenter from finishing a drain while a pod other
	// than a DaemonSet's runs on the node: a budget that never allows an
	// eviction, on a pool without terminationGracePeriod.
	pdbBlocks bool
	// recreate is a controller that recreates, once, the Service of this
	// name after it is deleted; recreateClaim one that recreates, once,
	// claim data-db-0 (with a new UID and volume) once it is gone.
	recreate      string
	recreateClaim bool
	// recreatePool is a controller that recreates, once, the NodePool of
	// this name (with a new UID) after it is deleted.
	recreatePool string
	// lateService is a controller that makes a LoadBalancer Service once
	// the StatefulSet db is deleted, during the volumes' step.
	lateService bool
	// lateVolumeMaker is an operator that makes StatefulSet cache, of the
	// default (EBS) class, and its claim, Pending under
	// WaitForFirstConsumer, once the StatefulSet db is deleted.
	lateVolumeMaker bool
	notServed       map[kubeapi.Resource]bool
	// listErrors fail the next lists of a resource with these errors.
	listErrors map[kubeapi.Resource][]error
	// pingErrors fail the next pings; pingErr fails every ping.
	pingErrors []error
	pingErr    error
}

func obj(name, namespace string, labels map[string]any, spec map[string]any) kubeapi.Object {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	if labels != nil {
		meta["labels"] = labels
	}
	return kubeapi.Object{"metadata": meta, "spec": spec}
}

// withUID gives an object the UID the API server would.
// ruleFilter is a route spec with one rule of one filter of type typ,
// naming group/kind/name when it is an ExtensionRef.
func ruleFilter(typ, group, kind, name string) map[string]any {
	f := map[string]any{"type": typ}
	if typ == "ExtensionRef" {
		f["extensionRef"] = map[string]any{"group": group, "kind": kind, "name": name}
	}
	return map[string]any{"rules": []any{map[string]any{"filters": []any{f}}}}
}

// provisionedBy is a PersistentVolume as its provisioner annotates it.
func provisionedBy(pv kubeapi.Object, provisioner string) kubeapi.Object {
	pv["metadata"].(map[string]any)["annotations"] = map[string]any{"pv.kubernetes.io/provisioned-by": provisioner}
	return pv
}

func withUID(o kubeapi.Object, uid string) kubeapi.Object {
	o["metadata"].(map[string]any)["uid"] = uid
	return o
}

// workloadsLeftBehind is what a team's workloads leave in a cluster: an
// Ingress, a Gateway and a LoadBalancer Service beside a ClusterIP one; a
// StatefulSet whose pod holds a claim on a Delete volume, a pod with a
// generic ephemeral volume, a Retain volume and a volume of another
// driver; the stack's own pool and class with a node, and an ArgoCD
// application's pool and class with a node that runs a job and a
// DaemonSet's pod.
// runningCluster is an empty cluster whose controllers run.
func runningCluster() *fakeCluster {
	return &fakeCluster{lbController: true, csiDriver: true, karpenter: true,
		notServed: map[kubeapi.Resource]bool{}, listErrors: map[kubeapi.Resource][]error{}}
}

func workloadsLeftBehind() *fakeCluster {
	f := runningCluster()
	own := map[string]any{ownKey: ownValue}
	f.objs = map[kubeapi.Resource][]kubeapi.Object{
		kubeapi.Ingresses: {withUID(obj("web", "shop", nil, nil), "u-web")},
		kubeapi.Gateways:  {withUID(obj("web-gw", "shop", nil, nil), "u-gw")},
		kubeapi.Services: {
			withUID(obj("public", "shop", nil, map[string]any{"type": "LoadBalancer"}), "u-public"),
			withUID(obj("internal", "shop", nil, map[string]any{"type": "ClusterIP"}), "u-internal"),
		},
		kubeapi.StatefulSets: {obj("db", "shop", nil, map[string]any{"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}})},
		kubeapi.Volumes: {
			provisionedBy(obj("pvc-data", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
				"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0data"},
				"claimRef": map[string]any{"namespace": "shop", "name": "data-db-0", "uid": "u1"}}), EBSCSIDriver),
			provisionedBy(obj("pvc-keep", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Retain",
				"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0keep"},
				"claimRef": map[string]any{"namespace": "shop", "name": "archive"}}), EBSCSIDriver),
			provisionedBy(obj("pvc-scratch", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
				"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0scratch"},
				"claimRef": map[string]any{"namespace": "shop", "name": "scratch-1-tmp"}}), EBSCSIDriver),
			provisionedBy(obj("pvc-efs", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
				"csi":      map[string]any{"driver": "efs.csi.aws.com", "volumeHandle": "fs-1"},
				"claimRef": map[string]any{"namespace": "shop", "name": "shared"}}), "efs.csi.aws.com"),
			// EKS's gp2 class (kubernetes.io/aws-ebs), as CSI migration
			// writes its volumes back.
			provisionedBy(obj("pvc-gp2", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
				"awsElasticBlockStore": map[string]any{"volumeID": "aws://eu-west-1a/vol-0gp2", "fsType": "ext4"},
				"claimRef":             map[string]any{"namespace": "legacy", "name": "logs", "uid": "u-logs"}}), "kubernetes.io/aws-ebs"),
			provisionedBy(obj("pvc-gp2-keep", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Retain",
				"awsElasticBlockStore": map[string]any{"volumeID": "vol-0gp2keep"},
				"claimRef":             map[string]any{"namespace": "legacy", "name": "audit"}}), "kubernetes.io/aws-ebs"),
		},
		kubeapi.Claims: {obj("data-db-0", "shop", nil, nil), obj("scratch-1-tmp", "shop", nil, nil), obj("archive", "shop", nil, nil),
			obj("shared", "shop", nil, nil), obj("logs", "legacy", nil, nil), obj("audit", "legacy", nil, nil)},
		kubeapi.Pods: {
			dbPod("ip-10-0-1-1"),
			obj("scratch-1", "shop", nil, map[string]any{"nodeName": "ip-10-0-1-1",
				"volumes": []any{map[string]any{"name": "tmp", "ephemeral": map[string]any{"volumeClaimTemplate": map[string]any{}}}}}),
			obj("web-1", "shop", nil, map[string]any{"nodeName": "ip-10-0-1-1"}),
			obj("batch-job-1", "batch", nil, map[string]any{"nodeName": "ip-10-0-9-9"}),
			withOwner(obj("node-agent-x", "kube-system", nil, map[string]any{"nodeName": "ip-10-0-9-9"}), "DaemonSet"),
		},
		kubeapi.NodePools: {
			withUID(obj("general", "", own, map[string]any{}), "u-general"),
			withUID(obj("argocd-batch", "", nil, map[string]any{}), "u-argocd-batch"),
		},
		kubeapi.NodeClaims: {
			obj("general-abc", "", map[string]any{"karpenter.sh/nodepool": "general"}, map[string]any{"nodeClassRef": map[string]any{"name": "default"}}),
			withNode(obj("argocd-batch-xyz", "", map[string]any{"karpenter.sh/nodepool": "argocd-batch"}, map[string]any{"nodeClassRef": map[string]any{"name": "batch"}}), "ip-10-0-9-9"),
		},
		kubeapi.EC2NodeClasses: {withUID(obj("default", "", own, nil), "u-default"), withUID(obj("batch", "", nil, nil), "u-batch")},
	}
	return f
}

// dbPod is the StatefulSet's pod, scheduled on node ("" while pending).
func dbPod(node string) kubeapi.Object {
	spec := map[string]any{"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "data-db-0"}}}}
	if node != "" {
		spec["nodeName"] = node
	}
	return withOwner(obj("db-0", "shop", nil, spec), "StatefulSet")
}

func withOwner(o kubeapi.Object, kind string) kubeapi.Object {
	o["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"kind": kind, "name": "x"}}
	return o
}

func withNode(o kubeapi.Object, node string) kubeapi.Object {
	o["status"] = map[string]any{"nodeName": node}
	return o
}

func (f *fakeCluster) Ping(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pingErrors) > 0 {
		err := f.pingErrors[0]
		f.pingErrors = f.pingErrors[1:]
		return err
	}
	return f.pingErr
}

func (f *fakeCluster) List(_ context.Context, r kubeapi.Resource) ([]kubeapi.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errs := f.listErrors[r]; len(errs) > 0 {
		f.listErrors[r] = errs[1:]
		return nil, errs[0]
	}
	if f.notServed[r] {
		return nil, &kubeapi.StatusError{Code: 404, Message: "the server could not find the requested resource"}
	}
	f.tick()
	return slices.Clone(f.objs[r]), nil
}

// DeleteNow removes an object at once, whatever its kubelet says.
func (f *fakeCluster) DeleteNow(_ context.Context, r kubeapi.Resource, namespace, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, r.Kind+" "+qualified(namespace, name)+" at once")
	f.objs[r] = slices.DeleteFunc(f.objs[r], func(o kubeapi.Object) bool { return o.Name() == name && o.Namespace() == namespace })
	return nil
}

func (f *fakeCluster) Delete(_ context.Context, r kubeapi.Resource, namespace, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, r.Kind+" "+qualified(namespace, name))
	for i, o := range f.objs[r] {
		if o.Name() == name && o.Namespace() == namespace {
			if o.Deleting() {
				return nil // a pod stuck terminating stays so
			}
			o["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-01T00:00:00Z"
			if r == kubeapi.Pods {
				f.objs[r] = slices.Delete(f.objs[r], i, i+1)
			}
			if r == kubeapi.NodePools && name == f.recreatePool {
				f.recreatePool = ""
				again := withUID(obj(name, "", nil, map[string]any{}), "u-pool-again")
				again["metadata"].(map[string]any)["managedFields"] = []any{
					map[string]any{"manager": "argocd-application-controller", "operation": "Update", "time": "2026-12-01T00:00:05Z"},
					map[string]any{"manager": "karpenter", "operation": "Update", "subresource": "status", "time": "2026-12-01T00:00:06Z"}}
				f.objs[r] = append(f.objs[r], again)
			}
			if r == kubeapi.StatefulSets && f.lateVolumeMaker {
				f.lateVolumeMaker = false
				f.objs[r] = append(f.objs[r], cacheSet())
				f.objs[kubeapi.Claims] = append(f.objs[kubeapi.Claims], pendingClaim("data-cache-0", "gp3"))
			}
			if r == kubeapi.StatefulSets && f.lateService {
				late := withUID(obj("late-lb", "shop", nil, map[string]any{"type": "LoadBalancer"}), "u-late")
				late["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "shop-operator", "operation": "Update"}}
				f.objs[kubeapi.Services] = append(f.objs[kubeapi.Services], late)
			}
			if r == kubeapi.Services && name == f.recreate {
				f.recreate = ""
				again := withUID(obj(name, namespace, nil, map[string]any{"type": "LoadBalancer"}), "u-again")
				again["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"kind": "Shop", "name": "main", "controller": true}}
				f.objs[r] = append(f.objs[r], again)
			}
			return nil
		}
	}
	return nil
}

// tick lets the controllers act on what is being deleted.
func (f *fakeCluster) tick() {
	remove := func(r kubeapi.Resource, gone func(kubeapi.Object) bool) {
		f.objs[r] = slices.DeleteFunc(f.objs[r], gone)
	}
	if f.lbController {
		remove(kubeapi.Ingresses, kubeapi.Object.Deleting)
		remove(kubeapi.Services, kubeapi.Object.Deleting)
		remove(kubeapi.Gateways, kubeapi.Object.Deleting)
		// The routes and classes hold nothing of it; its own kinds it lets
		// go once deleted, but for a configuration still in use (its
		// v3.5.0 rules: a route's ExtensionRef names a rule configuration,
		// a class's parametersRef a load balancer configuration) and one
		// it fails on (label referenced=true).
		for _, r := range []kubeapi.Resource{kubeapi.HTTPRoutes, kubeapi.GRPCRoutes, kubeapi.GatewayClasses} {
			remove(r, kubeapi.Object.Deleting)
		}
		inUse := func(o kubeapi.Object) bool {
			for _, route := range append(slices.Clone(f.objs[kubeapi.HTTPRoutes]), f.objs[kubeapi.GRPCRoutes]...) {
				for _, rule := range route.Items("spec", "rules") {
					for _, filter := range rule.Items("filters") {
						if filter.Str("extensionRef", "kind") == "ListenerRuleConfiguration" && filter.Str("extensionRef", "name") == o.Name() {
							return true
						}
					}
				}
			}
			for _, class := range f.objs[kubeapi.GatewayClasses] {
				if class.Str("spec", "parametersRef", "kind") == "LoadBalancerConfiguration" && class.Str("spec", "parametersRef", "name") == o.Name() {
					return true
				}
			}
			return o.Label("referenced") == "true"
		}
		for _, r := range []kubeapi.Resource{kubeapi.TargetGroupBindings, kubeapi.GlobalAccelerators, kubeapi.ListenerRuleConfigurations,
			kubeapi.LoadBalancerConfigurations, kubeapi.TargetGroupConfigurationsV1beta1} {
			remove(r, func(o kubeapi.Object) bool { return o.Deleting() && !inUse(o) })
		}
	}
	// Set cache recreates the claim of its pending pod while it lives
	// (kubernetes pkg/controller/statefulset stateful_set_control.go: a
	// pending pod's missing claims are created again).
	if cache := slices.IndexFunc(f.objs[kubeapi.StatefulSets], func(o kubeapi.Object) bool { return o.Name() == "cache" }); cache >= 0 &&
		!f.objs[kubeapi.StatefulSets][cache].Deleting() &&
		!slices.ContainsFunc(f.objs[kubeapi.Claims], func(o kubeapi.Object) bool { return o.Name() == "data-cache-0" }) {
		f.objs[kubeapi.Claims] = append(f.objs[kubeapi.Claims], withUID(pendingClaim("data-cache-0", "gp3"), fmt.Sprintf("u-again-%d", len(f.deletes))))
	}
	remove(kubeapi.StatefulSets, func(o kubeapi.Object) bool { return o.Name() == "cache" && o.Deleting() })
	// The StatefulSet controller: a deleted set takes its pod with it; a
	// live one recreates its pod, which the scheduler keeps pending while
	// its claim is being deleted, and, once the claim is gone, a new claim
	// from its template, which the driver binds to a new volume.
	set := slices.IndexFunc(f.objs[kubeapi.StatefulSets], func(o kubeapi.Object) bool { return o.Name() == "db" })
	switch {
	case set >= 0 && f.objs[kubeapi.StatefulSets][set].Deleting():
		remove(kubeapi.StatefulSets, kubeapi.Object.Deleting)
		remove(kubeapi.Pods, func(p kubeapi.Object) bool { return p.Name() == "db-0" })
	case set >= 0:
		claim := slices.IndexFunc(f.objs[kubeapi.Claims], func(o kubeapi.Object) bool { return o.Name() == "data-db-0" })
		if claim < 0 {
			f.objs[kubeapi.Claims] = append(f.objs[kubeapi.Claims], obj("data-db-0", "shop", nil, nil))
			f.objs[kubeapi.Volumes] = append(f.objs[kubeapi.Volumes], provisionedBy(obj(fmt.Sprintf("pvc-data-%d", len(f.deletes)), "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
				"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0new"},
				"claimRef": map[string]any{"namespace": "shop", "name": "data-db-0"}}), EBSCSIDriver))
		}
		if !slices.ContainsFunc(f.objs[kubeapi.Pods], func(o kubeapi.Object) bool { return o.Name() == "db-0" }) {
			node := ""
			if claim < 0 || !f.objs[kubeapi.Claims][claim].Deleting() {
				node = "ip-10-0-1-1"
			}
			f.objs[kubeapi.Pods] = append(f.objs[kubeapi.Pods], dbPod(node))
		}
	}
	if f.recreateClaim && !slices.ContainsFunc(f.objs[kubeapi.Claims], func(o kubeapi.Object) bool { return o.Name() == "data-db-0" }) {
		f.recreateClaim = false
		f.objs[kubeapi.Claims] = append(f.objs[kubeapi.Claims], obj("data-db-0", "shop", nil, nil))
		f.objs[kubeapi.Volumes] = append(f.objs[kubeapi.Volumes], provisionedBy(obj("pvc-data-again", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
			"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0again"},
			"claimRef": map[string]any{"namespace": "shop", "name": "data-db-0", "uid": "u2"}}), EBSCSIDriver))
	}
	// Claim protection: a claim goes once no scheduled pod mounts it, by
	// name or as the pod's generic ephemeral volume.
	remove(kubeapi.Claims, func(c kubeapi.Object) bool {
		if !c.Deleting() {
			return false
		}
		for _, p := range f.objs[kubeapi.Pods] {
			if p.Str("spec", "nodeName") == "" {
				continue
			}
			vols, _ := p.Get("spec", "volumes").([]any)
			for _, v := range vols {
				v := kubeapi.Object(v.(map[string]any))
				if v.Str("persistentVolumeClaim", "claimName") == c.Name() || (v.Get("ephemeral") != nil && p.Name()+"-"+v.Str("name") == c.Name()) {
					return false
				}
			}
		}
		return true
	})
	if f.csiDriver {
		// The attach/detach controller and the driver: an attachment goes
		// once no scheduled pod on its node mounts its volume's claim.
		remove(kubeapi.VolumeAttachments, func(va kubeapi.Object) bool {
			pv := va.Str("spec", "source", "persistentVolumeName")
			var claim string
			for _, v := range f.objs[kubeapi.Volumes] {
				if v.Name() == pv {
					claim = v.Str("spec", "claimRef", "name")
				}
			}
			for _, p := range f.objs[kubeapi.Pods] {
				if p.Str("spec", "nodeName") != va.Str("spec", "nodeName") {
					continue
				}
				for _, v := range p.Items("spec", "volumes") {
					if claim != "" && v.Str("persistentVolumeClaim", "claimName") == claim {
						return false
					}
				}
			}
			return true
		})
		remove(kubeapi.Volumes, func(pv kubeapi.Object) bool {
			// Under CSI migration the driver deletes the in-tree
			// provisioner's volumes too; none deletes a static one.
			if _, ebs := ebsVolume(pv); !ebs || pv.Str("spec", "persistentVolumeReclaimPolicy") != "Delete" ||
				pv.Annotation("pv.kubernetes.io/provisioned-by") == "" {
				return false
			}
			for _, c := range f.objs[kubeapi.Claims] {
				if c.Name() == pv.Str("spec", "claimRef", "name") {
					return false
				}
			}
			return true
		})
	}
	if f.karpenter {
		var deletedPools []string
		for _, p := range f.objs[kubeapi.NodePools] {
			if p.Deleting() {
				deletedPools = append(deletedPools, p.Name())
			}
		}
		// A claim of a deleted pool, or a claim deleted itself, whose
		// finalizer drains and terminates its node (karpenter
		// pkg/controllers/nodeclaim/termination).
		remove(kubeapi.NodeClaims, func(nc kubeapi.Object) bool {
			if !nc.Deleting() && !slices.Contains(deletedPools, nc.Label("karpenter.sh/nodepool")) {
				return false
			}
			for _, p := range f.objs[kubeapi.Pods] {
				if f.pdbBlocks && p.Str("spec", "nodeName") == nc.Str("status", "nodeName") && !ownedBy(p, "DaemonSet") {
					return false // the drain waits for the budget
				}
			}
			for _, va := range f.objs[kubeapi.VolumeAttachments] {
				if va.Str("spec", "nodeName") == nc.Str("status", "nodeName") {
					return false // Karpenter waits for volumes to detach, up to terminationGracePeriod
				}
			}
			return true
		})
		// A deleted pool's finalizer waits for its nodes.
		remove(kubeapi.NodePools, func(p kubeapi.Object) bool {
			return p.Deleting() && !slices.ContainsFunc(f.objs[kubeapi.NodeClaims], func(nc kubeapi.Object) bool { return nc.Label("karpenter.sh/nodepool") == p.Name() })
		})
		remove(kubeapi.EC2NodeClasses, func(class kubeapi.Object) bool {
			if !class.Deleting() {
				return false
			}
			for _, nc := range f.objs[kubeapi.NodeClaims] {
				if nc.Str("spec", "nodeClassRef", "name") == class.Name() {
					return false
				}
			}
			return true
		})
	}
}

func options(log *bytes.Buffer) Options {
	return Options{OwnLabelKey: ownKey, OwnLabelValue: ownValue,
		ReachTimeout: 50 * time.Millisecond, LoadBalancerTimeout: 200 * time.Millisecond,
		VolumeTimeout: 200 * time.Millisecond, NodeTimeout: 200 * time.Millisecond,
		Interval: time.Millisecond, ReportEvery: 10 * time.Millisecond, Log: log}
}

func names(objs []kubeapi.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, qualified(o.Namespace(), o.Name()))
	}
	return out
}

func TestRunRemovesWhatWorkloadsLeft(t *testing.T) {
	f := workloadsLeftBehind()
	var log bytes.Buffer
	o := options(&log)
	var marked map[string]string
	o.MarkKept = func(_ context.Context, volumes map[string]string) error { marked = volumes; return nil }
	require.NoError(t, Run(context.Background(), f, o), log.String())

	t.Run("load balancers of Ingresses, Gateways and LoadBalancer Services are gone, a ClusterIP Service stays", func(t *testing.T) {
		assert.Empty(t, f.objs[kubeapi.Ingresses])
		assert.Empty(t, f.objs[kubeapi.Gateways])
		assert.Equal(t, []string{"shop/internal"}, names(f.objs[kubeapi.Services]))
	})
	t.Run("EBS volumes with reclaim policy Delete are deleted through their claims, and none comes back", func(t *testing.T) {
		var ebsDelete []string
		for _, pv := range f.objs[kubeapi.Volumes] {
			if pv.Str("spec", "csi", "driver") == EBSCSIDriver && pv.Str("spec", "persistentVolumeReclaimPolicy") == "Delete" {
				ebsDelete = append(ebsDelete, pv.Name())
			}
		}
		assert.Empty(t, ebsDelete, "deletes: %v", f.deletes)
		set, claim := slices.Index(f.deletes, "StatefulSet shop/db"), slices.Index(f.deletes, "PersistentVolumeClaim shop/data-db-0")
		assert.True(t, set >= 0 && set < claim, "the StatefulSet goes before its claim, or it recreates it with a new volume: %v", f.deletes)
		assert.Contains(t, f.deletes, "PersistentVolumeClaim shop/scratch-1-tmp")
		assert.Contains(t, f.deletes, "Pod shop/scratch-1", "the pod that holds an ephemeral claim is deleted")
		assert.NotContains(t, f.deletes, "Pod shop/web-1", "pods without the claim are left alone")
	})
	t.Run("a Retain volume is kept and listed with the command that deletes it; its claim goes, so that it is detached", func(t *testing.T) {
		assert.Contains(t, names(f.objs[kubeapi.Volumes]), "pvc-keep")
		assert.Contains(t, f.deletes, "PersistentVolumeClaim shop/archive", "the volume stays, Released")
		assert.Contains(t, log.String(), "keeping EBS volume vol-0keep (PersistentVolume pvc-keep, claim shop/archive): its reclaim policy is Retain")
		assert.Contains(t, log.String(), "aws ec2 delete-volume --volume-id vol-0keep")
	})
	t.Run("the kept volumes are marked in AWS, for the leftover audit after the cluster is gone", func(t *testing.T) {
		assert.Equal(t, map[string]string{"vol-0keep": "pvc-keep", "vol-0gp2keep": "pvc-gp2-keep"}, marked)
		assert.Contains(t, log.String(), "marked 2 kept EBS volume(s) with tag "+KeptTagKey)
	})
	t.Run("EKS's gp2 class: in-tree volumes are deleted or listed like the driver's", func(t *testing.T) {
		assert.NotContains(t, names(f.objs[kubeapi.Volumes]), "pvc-gp2", "deletes: %v", f.deletes)
		assert.Contains(t, f.deletes, "PersistentVolumeClaim legacy/logs")
		assert.Contains(t, names(f.objs[kubeapi.Volumes]), "pvc-gp2-keep")
		assert.Contains(t, log.String(), "keeping EBS volume vol-0gp2keep (PersistentVolume pvc-gp2-keep, claim legacy/audit): its reclaim policy is Retain")
		assert.Contains(t, log.String(), "aws ec2 delete-volume --volume-id vol-0gp2keep")
	})
	t.Run("volumes of other drivers are not touched", func(t *testing.T) {
		assert.Contains(t, names(f.objs[kubeapi.Volumes]), "pvc-efs")
		assert.NotContains(t, f.deletes, "PersistentVolumeClaim shop/shared")
	})
	t.Run("the stack's own pool and class are left for Pulumi", func(t *testing.T) {
		assert.Equal(t, []string{"general"}, names(f.objs[kubeapi.NodePools]))
		assert.Equal(t, []string{"default"}, names(f.objs[kubeapi.EC2NodeClasses]))
		assert.Equal(t, []string{"general-abc"}, names(f.objs[kubeapi.NodeClaims]), "the stack's node keeps running")
		assert.Contains(t, log.String(), "keeping NodePool general: the stack created it")
	})
	t.Run("a foreign class is deleted after its pool's nodes are gone", func(t *testing.T) {
		pool, class := slices.Index(f.deletes, "NodePool argocd-batch"), slices.Index(f.deletes, "EC2NodeClass batch")
		require.True(t, pool >= 0 && class >= 0, "deletes: %v", f.deletes)
		assert.Less(t, pool, class)
		assert.Empty(t, f.objs[kubeapi.EC2NodeClasses][1:], "the foreign class is gone")
	})
	t.Run("the steps run in order: load balancers, volumes, then nodes", func(t *testing.T) {
		svc, claim, pool := slices.Index(f.deletes, "Service shop/public"), slices.Index(f.deletes, "PersistentVolumeClaim shop/data-db-0"), slices.Index(f.deletes, "NodePool argocd-batch")
		assert.True(t, svc < claim && claim < pool, "deletes: %v", f.deletes)
	})
	t.Run("it says what it waits for", func(t *testing.T) {
		assert.Contains(t, log.String(), "EBS volumes (the EBS CSI driver deletes those with reclaim policy Delete once their claims are gone, and detaches those it keeps): none left")
		assert.Contains(t, log.String(), "destroy cleanup done")
	})
}

// TestOwnIsWhatTheStackRegistered: a copy of the stack's NodePool keeps
// its label (kubectl get nodepool general -o yaml, renamed) but is not
// the stack's, and Pulumi would never delete it: the cleanup deletes it
// and drains its nodes. A node of a pool that is neither the stack's nor
// deleted by the cleanup fails the last look, naming it. Without the
// names (a state written before they were set) the label alone decides.
// A standalone NodeClaim is deleted.
func TestOwnIsWhatTheStackRegistered(t *testing.T) {
	withCopy := func() *fakeCluster {
		f := workloadsLeftBehind()
		own := map[string]any{ownKey: ownValue}
		f.objs[kubeapi.NodePools] = append(f.objs[kubeapi.NodePools], withUID(obj("general-copy", "", own, map[string]any{}), "u-copy"))
		f.objs[kubeapi.NodeClaims] = append(f.objs[kubeapi.NodeClaims],
			withNode(obj("general-copy-q", "", map[string]any{"karpenter.sh/nodepool": "general-copy"}, map[string]any{"nodeClassRef": map[string]any{"name": "default"}}), "ip-10-0-7-7"))
		return f
	}
	registered := func(log *bytes.Buffer) Options {
		o := options(log)
		o.OwnNodePools, o.OwnNodeClasses = []string{"general"}, []string{"default"}
		return o
	}
	f := withCopy()
	var log bytes.Buffer
	require.NoError(t, Run(context.Background(), f, registered(&log)), log.String())
	assert.Contains(t, f.deletes, "NodePool general-copy")
	assert.Equal(t, []string{"general"}, names(f.objs[kubeapi.NodePools]))
	assert.Equal(t, []string{"general-abc"}, names(f.objs[kubeapi.NodeClaims]), "the copy's node is drained; the stack's keeps running")

	f = withCopy()
	log.Reset()
	require.NoError(t, Run(context.Background(), f, options(&log)))
	assert.Contains(t, names(f.objs[kubeapi.NodePools]), "general-copy", "the label alone: the copy passes for the stack's")
	assert.Contains(t, log.String(), "a copy of one of its pools passes for it", "and it says so")

	f = workloadsLeftBehind()
	f.objs[kubeapi.NodeClaims] = append(f.objs[kubeapi.NodeClaims],
		withNode(obj("ghost-1", "", map[string]any{"karpenter.sh/nodepool": "ghost"}, map[string]any{"nodeClassRef": map[string]any{"name": "default"}}), "ip-10-0-8-8"))
	log.Reset()
	err := Run(context.Background(), f, registered(&log))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NodeClaim ghost-1 of NodePool ghost")

	// A standalone NodeClaim, which no pool owns and Pulumi never deletes:
	// the nodes step deletes it, and Karpenter terminates its node.
	f = workloadsLeftBehind()
	f.objs[kubeapi.NodeClaims] = append(f.objs[kubeapi.NodeClaims],
		withNode(obj("standalone-1", "", nil, map[string]any{"nodeClassRef": map[string]any{"name": "default"}}), "ip-10-0-9-9"))
	log.Reset()
	require.NoError(t, Run(context.Background(), f, registered(&log)), log.String())
	assert.Contains(t, f.deletes, "NodeClaim standalone-1")
	assert.Equal(t, []string{"general-abc"}, names(f.objs[kubeapi.NodeClaims]), "the stack's node keeps running")

	// One a run before deleted, still going: waited for, not failed over.
	f = workloadsLeftBehind()
	going := withNode(obj("standalone-2", "", nil, map[string]any{"nodeClassRef": map[string]any{"name": "default"}}), "ip-10-0-9-10")
	going["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-01T00:00:00Z"
	f.objs[kubeapi.NodeClaims] = append(f.objs[kubeapi.NodeClaims], going)
	log.Reset()
	require.NoError(t, Run(context.Background(), f, registered(&log)), log.String())
	assert.Equal(t, []string{"general-abc"}, names(f.objs[kubeapi.NodeClaims]))
}

// ebsClasses are EKS's gp2 (in-tree, migrated), the stack's gp3 (the
// EBS CSI driver's, the default) and an EFS class.
func ebsClasses() []kubeapi.Object {
	gp3 := obj("gp3", "", nil, nil)
	gp3["provisioner"] = EBSCSIDriver
	gp3["metadata"].(map[string]any)["annotations"] = map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}
	gp2, efs := obj("gp2", "", nil, nil), obj("efs", "", nil, nil)
	gp2["provisioner"], efs["provisioner"] = "kubernetes.io/aws-ebs", "efs.csi.aws.com"
	return []kubeapi.Object{gp2, gp3, efs}
}

// cacheSet is a StatefulSet an operator made, whose claim template names
// no class.
func cacheSet() kubeapi.Object {
	set := withUID(obj("cache", "shop", nil, map[string]any{"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}}}}), "u-cache")
	set["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "shop-operator", "operation": "Update"}}
	return set
}

func pendingClaim(name, class string) kubeapi.Object {
	claim := withUID(obj(name, "shop", nil, map[string]any{"storageClassName": class}), "u-"+name)
	claim["status"] = map[string]any{"phase": "Pending"}
	return claim
}

// TestWhatMakesVolumes: a claim still Pending under WaitForFirstConsumer
// has no volume yet, and gets one once a pod needs it. The volume step
// deletes such claims, and StatefulSets of an EBS class, even where no
// EBS volume exists yet; one made after it, which the EBS CSI driver,
// gone with the cluster, would never delete, fails the last look, naming
// its maker. A StatefulSet of an EFS class is not the cleanup's.
func TestWhatMakesVolumes(t *testing.T) {
	t.Run("made after the volume step", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.objs[kubeapi.StorageClasses] = ebsClasses()
		f.lateVolumeMaker = true
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "StatefulSet shop/cache (written by field manager shop-operator)")
		assert.Contains(t, err.Error(), "PersistentVolumeClaim shop/data-cache-0")
		assert.Contains(t, err.Error(), "EBS volumes")
	})
	t.Run("there from the start, before any volume", func(t *testing.T) {
		f := runningCluster()
		efsSet := obj("files", "shop", nil, map[string]any{"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"},
			"spec": map[string]any{"storageClassName": "efs"}}}})
		f.objs = map[kubeapi.Resource][]kubeapi.Object{kubeapi.StorageClasses: ebsClasses(),
			kubeapi.StatefulSets: {cacheSet(), efsSet}, kubeapi.Claims: {pendingClaim("data-cache-0", "gp3"), pendingClaim("data-files-0", "efs")}}
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)), log.String())
		assert.Contains(t, f.deletes, "StatefulSet shop/cache")
		assert.Contains(t, f.deletes, "PersistentVolumeClaim shop/data-cache-0")
		assert.NotContains(t, f.deletes, "PersistentVolumeClaim shop/data-files-0", "an EFS claim is not the cleanup's")
		set, claim := slices.Index(f.deletes, "StatefulSet shop/cache"), slices.Index(f.deletes, "PersistentVolumeClaim shop/data-cache-0")
		assert.Less(t, set, claim, "the set first: it recreates the claims of its pending pods while it lives")
	})
	t.Run("a template that asks for no class makes no EBS volume", func(t *testing.T) {
		f := runningCluster()
		static := obj("static", "shop", nil, map[string]any{"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"},
			"spec": map[string]any{"storageClassName": ""}}}})
		f.objs = map[kubeapi.Resource][]kubeapi.Object{kubeapi.StorageClasses: ebsClasses(), kubeapi.StatefulSets: {static}}
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)), log.String())
		assert.NotContains(t, f.deletes, "StatefulSet shop/static")
	})
}

// TestRunCleansOnlyWhatIsProvenGone: only proof that the cluster is gone
// (its name no longer resolves, or EKS says so), or the user's
// PULUMI_K8S_DELETE_UNREACHABLE=true, lets an API server that cannot be
// reached count as nothing to clean; otherwise the step fails, naming the
// way out, since the load balancers and volumes would be left for good.
// TestTheLBControllersOwnObjects: bindings, accelerators and Gateway
// configurations the LB controller finalizes are deleted once the load
// balancers are gone, while the controller runs, and waited for, with the
// routes and GatewayClasses that keep the configurations in use (others'
// stay); a kind served only in its older version is found there, one not
// installed is skipped; one the controller does not let go fails the
// step, with the command that removes its finalizer.
func TestTheLBControllersOwnObjects(t *testing.T) {
	objects := func(referenced bool) *fakeCluster {
		f := &fakeCluster{lbController: true, csiDriver: true, karpenter: true,
			notServed:  map[kubeapi.Resource]bool{kubeapi.TargetGroupConfigurations: true, kubeapi.GlobalAccelerators: true},
			listErrors: map[kubeapi.Resource][]error{}}
		var held map[string]any
		if referenced {
			held = map[string]any{"referenced": "true"}
		}
		f.objs = map[kubeapi.Resource][]kubeapi.Object{
			kubeapi.TargetGroupBindings:              {withUID(obj("legacy-tg", "shop", nil, nil), "u-tgb")},
			kubeapi.ListenerRuleConfigurations:       {withUID(obj("rules", "shop", held, nil), "u-lrc")},
			kubeapi.LoadBalancerConfigurations:       {withUID(obj("lb", "shop", nil, nil), "u-lbc")},
			kubeapi.TargetGroupConfigurationsV1beta1: {withUID(obj("tg", "shop", nil, nil), "u-tgc")},
			kubeapi.HTTPRoutes: {obj("web", "shop", nil, ruleFilter("ExtensionRef", "gateway.k8s.aws", "ListenerRuleConfiguration", "rules")),
				obj("plain", "shop", nil, ruleFilter("RequestHeaderModifier", "", "", ""))},
			kubeapi.GRPCRoutes: {obj("rpc", "shop", nil, ruleFilter("ExtensionRef", "example.com", "Other", "x"))},
			kubeapi.GatewayClasses: {
				obj("aws-alb", "", nil, map[string]any{"controllerName": "gateway.k8s.aws/alb",
					"parametersRef": map[string]any{"group": "gateway.k8s.aws", "kind": "LoadBalancerConfiguration", "name": "lb", "namespace": "shop"}}),
				obj("envoy", "", nil, map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"})},
		}
		return f
	}
	f := objects(false)
	var log bytes.Buffer
	require.NoError(t, Run(context.Background(), f, options(&log)))
	for _, want := range []string{"TargetGroupBinding shop/legacy-tg", "ListenerRuleConfiguration shop/rules", "LoadBalancerConfiguration shop/lb",
		"TargetGroupConfiguration shop/tg", "HTTPRoute shop/web", "GatewayClass aws-alb"} {
		assert.Contains(t, f.deletes, want)
	}
	for _, kept := range []string{"HTTPRoute shop/plain", "GRPCRoute shop/rpc", "GatewayClass envoy"} {
		assert.NotContains(t, f.deletes, kept, "names no configuration of the LB controller")
	}
	for _, r := range []kubeapi.Resource{kubeapi.TargetGroupBindings, kubeapi.ListenerRuleConfigurations, kubeapi.LoadBalancerConfigurations,
		kubeapi.TargetGroupConfigurationsV1beta1} {
		assert.Empty(t, f.objs[r], "%s let go", r.Kind)
	}
	assert.Less(t, strings.Index(log.String(), "Gateways (the LB controller deletes their load balancers): none left"),
		strings.Index(log.String(), "deleting TargetGroupBinding shop/legacy-tg"), "after the load balancers")

	t.Run("one the controller does not let go fails the step, with the command that removes its finalizer", func(t *testing.T) {
		f := objects(true)
		err := Run(context.Background(), f, options(&bytes.Buffer{}))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "removing the LB controller's bindings, accelerators and Gateway configurations: timed out after 200ms")
		assert.Contains(t, err.Error(), "ListenerRuleConfiguration shop/rules")
		assert.Contains(t, err.Error(), `kubectl -n shop patch listenerruleconfigurations.gateway.k8s.aws rules --type merge -p '{"metadata":{"finalizers":null}}'`)
		assert.Contains(t, err.Error(), "delete the webhook configurations first (a later upgrade of the release makes them again): "+lbWebhookDelete+"; then kubectl",
			"the webhooks that refuse the patches while the controller is down go first")
	})
}

// TestAStaticDeleteVolumeIsReportedNotWaitedFor: a PersistentVolume made
// by hand (no provisioned-by annotation) with reclaim policy Delete is
// deleted by nothing once its claim goes (it turns Failed), so the
// cleanup keeps it as it keeps a Retain one: listed with the command that
// deletes its EBS volume, its claim deleted so that the driver detaches
// it, and not waited for until the bound.
func TestAStaticDeleteVolumeIsReportedNotWaitedFor(t *testing.T) {
	f := workloadsLeftBehind()
	f.objs[kubeapi.Volumes] = append(f.objs[kubeapi.Volumes], obj("static-orders", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Delete",
		"csi":      map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0static"},
		"claimRef": map[string]any{"namespace": "shop", "name": "orders", "uid": "u-orders"}}))
	f.objs[kubeapi.Claims] = append(f.objs[kubeapi.Claims], obj("orders", "shop", nil, nil))
	var log bytes.Buffer
	o := options(&log)
	o.MarkKept = func(context.Context, map[string]string) error { return errors.New("UnauthorizedOperation") }
	require.NoError(t, Run(context.Background(), f, o), log.String())
	assert.Contains(t, log.String(), "keeping EBS volume vol-0static (PersistentVolume static-orders, claim shop/orders): it was made by hand")
	assert.Contains(t, log.String(), "could not mark the kept volumes as kept in AWS (UnauthorizedOperation); the leftover audit, after "+
		"the cluster is gone, will name them", "said, not fatal: the audit fails over them")
	assert.Contains(t, log.String(), "aws ec2 delete-volume --volume-id vol-0static")
	assert.Contains(t, f.deletes, "PersistentVolumeClaim shop/orders")
	assert.Contains(t, names(f.objs[kubeapi.Volumes]), "static-orders", "nothing deletes it")
}

// TestARetainVolumeOnTheStacksOwnPool follows the destroy of a stack whose
// workload, a Deployment's pod on a node of the stack's own pool, mounts a
// volume with reclaim policy Retain: the cleanup deletes its claim (the
// volume stays, Released) and the pod, and waits until the driver has
// detached it, within the volumes' bound. Only then does the destroy go on
// to the EBS CSI add-on and the stack's pools, whose nodes Karpenter then
// terminates at once: nothing holds them until terminationGracePeriod.
// Without the driver, the wait ends at its bound, naming the attachment.
func TestARetainVolumeOnTheStacksOwnPool(t *testing.T) {
	retained := func() *fakeCluster {
		f := runningCluster()
		f.objs = map[kubeapi.Resource][]kubeapi.Object{
			kubeapi.Volumes: {obj("pvc-orders", "", nil, map[string]any{"persistentVolumeReclaimPolicy": "Retain",
				"csi": map[string]any{"driver": EBSCSIDriver, "volumeHandle": "vol-0orders"}, "claimRef": map[string]any{"namespace": "shop", "name": "orders", "uid": "u-orders"}})},
			kubeapi.Claims: {obj("orders", "shop", nil, nil)},
			kubeapi.Pods: {withOwner(obj("orders-7d9f-abcde", "shop", nil, map[string]any{"nodeName": "ip-10-0-1-1",
				"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "orders"}}}}), "ReplicaSet")},
			kubeapi.VolumeAttachments: {obj("csi-0a1b", "", nil, map[string]any{"attacher": EBSCSIDriver, "nodeName": "ip-10-0-1-1",
				"source": map[string]any{"persistentVolumeName": "pvc-orders"}})},
			kubeapi.NodePools:      {withUID(obj("general", "", map[string]any{ownKey: ownValue}, map[string]any{}), "u-general")},
			kubeapi.NodeClaims:     {withNode(obj("general-abc", "", map[string]any{"karpenter.sh/nodepool": "general"}, nil), "ip-10-0-1-1")},
			kubeapi.EC2NodeClasses: {withUID(obj("default", "", map[string]any{ownKey: ownValue}, nil), "u-default")},
		}
		return f
	}
	f := retained()
	var log bytes.Buffer
	start := time.Now()
	require.NoError(t, Run(context.Background(), f, options(&log)))
	took := time.Since(start)
	t.Log(log.String())
	assert.Less(t, took, options(nil).VolumeTimeout, "within the volumes' bound")
	assert.Empty(t, f.objs[kubeapi.VolumeAttachments], "detached while the driver ran")
	assert.Contains(t, names(f.objs[kubeapi.Volumes]), "pvc-orders", "the volume stays")
	assert.Contains(t, f.deletes, "PersistentVolumeClaim shop/orders")
	assert.Contains(t, f.deletes, "Pod shop/orders-7d9f-abcde")
	assert.Contains(t, log.String(), "keeping EBS volume vol-0orders (PersistentVolume pvc-orders, claim shop/orders): its reclaim policy is Retain")
	// Then the destroy deletes the EBS CSI add-on and the stack's pool:
	// the node has nothing attached, so Karpenter terminates it at once.
	f.csiDriver = false
	require.NoError(t, f.Delete(context.Background(), kubeapi.NodePools, "", "general"))
	_, _ = f.List(context.Background(), kubeapi.NodePools)
	assert.Empty(t, f.objs[kubeapi.NodeClaims], "the pool's node is terminated, not held by an attachment")

	t.Run("without the driver, the wait ends at its bound, naming the attachment", func(t *testing.T) {
		f := retained()
		f.csiDriver = false
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "removing EBS volumes: timed out after 200ms")
		assert.Contains(t, err.Error(), "VolumeAttachment csi-0a1b of kept PersistentVolume pvc-orders on node ip-10-0-1-1")
		// What the destroy would meet without the cleanup's detach: the
		// pool's node held by its attachment.
		require.NoError(t, f.Delete(context.Background(), kubeapi.NodePools, "", "general"))
		_, _ = f.List(context.Background(), kubeapi.NodePools)
		assert.Len(t, f.objs[kubeapi.NodeClaims], 1, "Karpenter waits for the attachment")
	})
}

func TestRunCleansOnlyWhatIsProvenGone(t *testing.T) {
	dnsGone := &net.DNSError{Err: "no such host", Name: "ABC.gr7.eu-west-1.eks.amazonaws.com", IsNotFound: true}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	eks := func(exists bool, status string, err error) func(context.Context) (bool, string, error) {
		return func(context.Context) (bool, string, error) { return exists, status, err }
	}
	tests := []struct {
		name    string
		setup   func(f *fakeCluster, o *Options)
		wantLog string // the run goes on, nothing to clean
		wantErr string // the run fails
	}{
		{name: "a cluster deleted out of band: its name no longer resolves", setup: func(f *fakeCluster, o *Options) { f.pingErr = dnsGone },
			wantLog: "the cluster's API server name no longer resolves: the cluster is gone, so nothing is left to clean"},
		{name: "a name that no longer resolves, and EKS says the cluster is gone", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = dnsGone
			o.ClusterExists = eks(false, "", nil)
		}, wantLog: "the cluster's API server name no longer resolves and EKS says the cluster does not exist: the cluster is gone"},
		{name: "a name that no longer resolves here, and EKS says the cluster is there", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = dnsGone
			o.ClusterExists = eks(true, "ACTIVE", nil)
		}, wantErr: "but EKS says the cluster exists (status ACTIVE): this machine's resolver cannot see it; run `pulumi destroy` again"},
		{name: "a name that no longer resolves, and EKS cannot be asked", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = dnsGone
			o.ClusterExists = eks(false, "", errors.New("Unable to locate credentials"))
		}, wantErr: "asking EKS whether the cluster still exists failed (Unable to locate credentials), so nothing proves it is gone"},
		{name: "an API server that does not answer, and EKS says the cluster is gone", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = refused
			o.ClusterExists = eks(false, "", nil)
		}, wantLog: "the API server does not answer (dial tcp: connection refused) and EKS says the cluster does not exist: nothing is left to clean"},
		{name: "proven gone, the audit in AWS is left to the phase after the cluster's deletion", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = dnsGone
			o.ClusterExists = eks(false, "", nil)
		}, wantLog: "the leftover audit, once Pulumi has deleted the cluster, looks in AWS"},
		{name: "an API server that does not answer, and EKS says the cluster is there", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = refused
			o.ClusterExists = eks(true, "ACTIVE", nil)
		}, wantErr: "the API server does not answer after 50ms (dial tcp: connection refused), but EKS says the cluster exists (status ACTIVE), " +
			"so the load balancers and volumes its workloads created are still there: run `pulumi destroy` again from where the API server answers"},
		{name: "an API server that does not answer, and EKS cannot be asked", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = refused
			o.ClusterExists = eks(false, "", errors.New("Unable to locate credentials"))
		}, wantErr: "asking EKS whether the cluster still exists failed too (Unable to locate credentials), so nothing proves it is gone"},
		{name: "an API server that does not answer, and no way to ask EKS", setup: func(f *fakeCluster, o *Options) { f.pingErr = refused },
			wantErr: "the API server does not answer after 50ms (dial tcp: connection refused), and nothing proves the cluster is gone: " +
				"run `pulumi destroy` again from where the API server answers"},
		{name: "PULUMI_K8S_DELETE_UNREACHABLE=true gives up at once", setup: func(f *fakeCluster, o *Options) {
			f.pingErr = refused
			o.ReachTimeout = time.Hour
			o.DeleteUnreachable = true
			o.ClusterExists = eks(true, "ACTIVE", nil)
		}, wantLog: "PULUMI_K8S_DELETE_UNREACHABLE=true says it is unreachable for good: skipping the cleanup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := workloadsLeftBehind()
			var log bytes.Buffer
			o := options(&log)
			tt.setup(f, &o)
			start := time.Now()
			err := Run(context.Background(), f, o)
			assert.Less(t, time.Since(start), time.Second)
			assert.Empty(t, f.deletes, "nothing is deleted")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true and PULUMI_K8S_DELETE_UNREACHABLE=true", "the way out")
				return
			}
			require.NoError(t, err, "proof, or the user's word, lets the destroy go on")
			assert.Contains(t, log.String(), tt.wantLog)
		})
	}
}

func TestRunNeverBlocksADestroy(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	t.Run("an API server that answers after a while is waited for", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.pingErrors = []error{refused, refused}
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)))
		assert.Contains(t, log.String(), "the API server does not answer yet")
		assert.Contains(t, f.deletes, "NodePool argocd-batch")
	})
	t.Run("Karpenter's CRDs not installed: the node step has nothing to do", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.notServed[kubeapi.NodePools], f.notServed[kubeapi.NodeClaims], f.notServed[kubeapi.EC2NodeClasses] = true, true, true
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)))
		assert.Contains(t, log.String(), "NodePool are not served")
		assert.Contains(t, f.deletes, "Service shop/public", "the other steps still run")
	})
	t.Run("transient errors are retried within the bound", func(t *testing.T) {
		f := workloadsLeftBehind()
		unavailable := &kubeapi.StatusError{Code: 503, Message: "the server is currently unable to handle the request"}
		f.listErrors[kubeapi.Services] = []error{unavailable, unavailable}
		f.listErrors[kubeapi.Volumes] = []error{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)))
		assert.Contains(t, log.String(), "listing services failed for now")
		assert.NotContains(t, names(f.objs[kubeapi.Volumes]), "pvc-data")
	})
	t.Run("an API server that answers only errors fails the cleanup instead of skipping it", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.pingErr = &kubeapi.StatusError{Code: 503, Message: "the server is currently unable to handle the request"}
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the API server still fails after 50ms: API server answered 503")
		assert.Contains(t, err.Error(), "set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true")
	})
	t.Run("a refused request fails, naming the way out", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.pingErr = &kubeapi.StatusError{Code: 401, Message: "Unauthorized"}
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "API server answered 401: Unauthorized")
		assert.Contains(t, err.Error(), "set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true")
	})
}

func TestRunFailsAtTheStepThatDoesNotFinish(t *testing.T) {
	tests := []struct {
		name    string
		stop    func(f *fakeCluster)
		wantErr string
	}{
		{"no LB controller", func(f *fakeCluster) { f.lbController = false },
			"removing load balancers: timed out after 200ms waiting for Ingresses, LoadBalancer Services and Gateways (the LB controller deletes their load balancers): 3 left (Gateway shop/web-gw, Ingress shop/web, Service shop/public)"},
		{"no EBS CSI driver", func(f *fakeCluster) { f.csiDriver = false },
			"removing EBS volumes: timed out after 200ms waiting for EBS volumes (the EBS CSI driver deletes those with reclaim policy Delete once their claims are gone, and detaches those it keeps): 3 left (PersistentVolume pvc-data (vol-0data), PersistentVolume pvc-gp2 (vol-0gp2), PersistentVolume pvc-scratch (vol-0scratch))"},
		{"no Karpenter", func(f *fakeCluster) { f.karpenter = false },
			"removing node pools and node classes the stack did not create: timed out after 200ms waiting for nodes of the deleted NodePools (Karpenter drains and terminates them): 2 left (NodeClaim argocd-batch-xyz of NodePool argocd-batch, NodePool argocd-batch)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := workloadsLeftBehind()
			tt.stop(f)
			var log bytes.Buffer
			err := Run(context.Background(), f, options(&log))
			require.Error(t, err)
			assert.Equal(t, tt.wantErr+"; fix the cause and run `pulumi destroy` again (the cleanup starts over), or set "+
				"NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to destroy without it (see docs/troubleshooting.md)", err.Error(), "what went wrong, and what to do")
			assert.Contains(t, log.String(), "waiting for ", "progress is reported while it waits")
		})
	}
}

// TestRunDoesNotWaitForeverOnAReconciler: what something still running
// recreates after the cleanup deleted it fails the step at once, naming
// what made it, since its load balancer or nodes would outlive the stack;
// the next step does not start.
func TestRunDoesNotWaitForeverOnAReconciler(t *testing.T) {
	t.Run("a Service recreated by an operator fails the step, naming its owner", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.recreate = "public"
		var log bytes.Buffer
		start := time.Now()
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Less(t, time.Since(start), 150*time.Millisecond, "well within the 200ms bound")
		assert.Contains(t, err.Error(), "removing load balancers: recreated after the cleanup deleted them, by something that still runs: "+
			"Service shop/public (owned by Shop shop/main); what they hold (a load balancer and its network interfaces) would outlive the stack")
		assert.NotContains(t, f.deletes, "StatefulSet shop/db", "the volumes' step does not start")
	})
	t.Run("a Service made during the later steps fails the last look", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.lateService = true
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "removing load balancers, volumes, node pools and nodes made since the first step: there after the cleanup's steps, by "+
			"something that still runs: Service shop/late-lb (written by field manager shop-operator)")
		assert.Contains(t, f.deletes, "NodePool argocd-batch", "after the other steps")
	})
	t.Run("a drain a budget blocks is forced halfway through the bound", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.pdbBlocks = true
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)), log.String())
		assert.Contains(t, f.deletes, "Pod batch/batch-job-1")
		assert.NotContains(t, f.deletes, "Pod kube-system/node-agent-x", "a drain does not wait for DaemonSet pods")
		assert.Contains(t, log.String(), "its node ip-10-0-9-9 of deleted NodePool argocd-batch is still not drained")
		assert.Empty(t, f.objs[kubeapi.NodeClaims][1:], "the foreign node is gone")
	})
	t.Run("a claim recreated under the same name is deleted again", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.recreateClaim = true
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)), log.String())
		count := 0
		for _, d := range f.deletes {
			if d == "PersistentVolumeClaim shop/data-db-0" {
				count++
			}
		}
		assert.Equal(t, 2, count, "deletes: %v", f.deletes)
		assert.NotContains(t, names(f.objs[kubeapi.Volumes]), "pvc-data-again")
	})
	t.Run("a pod stuck terminating that holds a claim is deleted at once", func(t *testing.T) {
		f := workloadsLeftBehind()
		stuck := obj("reader-0", "legacy", nil, map[string]any{"nodeName": "ip-10-0-1-1",
			"volumes": []any{map[string]any{"name": "logs", "persistentVolumeClaim": map[string]any{"claimName": "logs"}}}})
		stuck["metadata"].(map[string]any)["deletionTimestamp"] = time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
		f.objs[kubeapi.Pods] = append(f.objs[kubeapi.Pods], stuck)
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)), log.String())
		assert.Contains(t, f.deletes, "Pod legacy/reader-0 at once")
		assert.Contains(t, log.String(), "its grace period ended at")
		assert.NotContains(t, names(f.objs[kubeapi.Volumes]), "pvc-gp2", "its volume went once the pod did")
	})
	t.Run("a pod terminating within its grace period is waited for", func(t *testing.T) {
		f := workloadsLeftBehind()
		going := obj("reader-0", "legacy", nil, map[string]any{"nodeName": "ip-10-0-1-1",
			"volumes": []any{map[string]any{"name": "logs", "persistentVolumeClaim": map[string]any{"claimName": "logs"}}}})
		going["metadata"].(map[string]any)["deletionTimestamp"] = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		f.objs[kubeapi.Pods] = append(f.objs[kubeapi.Pods], going)
		var log bytes.Buffer
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err, "the bound passes while its kubelet still may confirm")
		assert.NotContains(t, f.deletes, "Pod legacy/reader-0 at once")
	})
	t.Run("a NodePool recreated under the same name fails the step, naming its field manager", func(t *testing.T) {
		f := workloadsLeftBehind()
		f.recreatePool = "argocd-batch"
		var log bytes.Buffer
		start := time.Now()
		err := Run(context.Background(), f, options(&log))
		require.Error(t, err)
		assert.Less(t, time.Since(start), 150*time.Millisecond, "well within the 200ms bound")
		assert.Contains(t, err.Error(), "NodePool argocd-batch (written by field manager argocd-application-controller); what they hold (nodes)")
	})
	t.Run("without a blocked drain no pod is forced", func(t *testing.T) {
		f := workloadsLeftBehind()
		var log bytes.Buffer
		require.NoError(t, Run(context.Background(), f, options(&log)))
		assert.NotContains(t, f.deletes, "Pod batch/batch-job-1")
	})
}

func TestRunReportsWhileItWaits(t *testing.T) {
	f := workloadsLeftBehind()
	f.lbController = false
	var log bytes.Buffer
	o := options(&log)
	o.LoadBalancerTimeout = 300 * time.Millisecond
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.mu.Lock()
		f.lbController = true // it deletes the load balancers late
		f.mu.Unlock()
	}()
	require.NoError(t, Run(context.Background(), f, o))
	reports := strings.Count(log.String(), "waiting for Ingresses, LoadBalancer Services and Gateways (the LB controller deletes their load balancers): 3 left (Gateway shop/web-gw, Ingress shop/web, Service shop/public)")
	assert.GreaterOrEqual(t, reports, 3, "while nothing changes, the same status is repeated every ReportEvery:\n%s", log.String())
}

func TestMain_(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	whole := func() (invocation, error) {
		return invocation{Args: []string{"pulumi", "destroy"}, Command: "destroy"}, nil
	}
	prev := findPulumi
	t.Cleanup(func() { findPulumi = prev })
	findPulumi = whole
	t.Run("the skip switch skips everything, without a kubeconfig", func(t *testing.T) {
		var log bytes.Buffer
		require.NoError(t, Main(context.Background(), env(map[string]string{EnvSkip: "true"}), &log))
		assert.Contains(t, log.String(), "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true: skipping the destroy cleanup")
	})
	t.Run("settings the program must set are checked", func(t *testing.T) {
		err := Main(context.Background(), env(map[string]string{EnvOwnLabel: "nodeless-eks/stack=x", EnvLoadBalancerTimeout: "15m",
			EnvVolumeTimeout: "10m", EnvNodeTimeout: "soon"}), &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `NODELESS_EKS_NODE_TIMEOUT is "soon"`)
	})
	t.Run("without the stack's label it refuses to run rather than delete the stack's pools", func(t *testing.T) {
		err := Main(context.Background(), env(map[string]string{}), &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "NODELESS_EKS_OWN_LABEL")
	})
	t.Run("only true skips", func(t *testing.T) {
		err := Main(context.Background(), env(map[string]string{EnvSkip: "1"}), &bytes.Buffer{})
		require.Error(t, err, "1 is not true: the cleanup ran, and found no label")
		assert.Contains(t, err.Error(), "NODELESS_EKS_OWN_LABEL")
	})
	t.Run("the report is appended to the file the program names, failures included", func(t *testing.T) {
		report := filepath.Join(t.TempDir(), "destroy-cleanup-nodeless-eks.dev.log")
		var log bytes.Buffer
		require.NoError(t, Main(context.Background(), env(map[string]string{EnvSkip: "true", EnvReport: report, EnvOwnLabel: "k=nodeless-eks.dev"}), &log))
		require.Error(t, Main(context.Background(), env(map[string]string{EnvReport: report, EnvOwnLabel: "k=nodeless-eks.dev"}), &log))
		raw, err := os.ReadFile(report)
		require.NoError(t, err)
		assert.Equal(t, 2, strings.Count(string(raw), "=== destroy cleanup of k=nodeless-eks.dev, "), "one section a run:\n%s", raw)
		assert.Contains(t, string(raw), "skipping the destroy cleanup")
		assert.Contains(t, string(raw), "failed: NODELESS_EKS_LB_TIMEOUT")
		assert.Contains(t, log.String(), "this report is also in "+report)
	})
	t.Run("a report that cannot be written does not stop the cleanup", func(t *testing.T) {
		report := filepath.Join(t.TempDir(), "no-such-dir", "destroy-cleanup-nodeless-eks.dev.log")
		var log bytes.Buffer
		require.NoError(t, Main(context.Background(), env(map[string]string{EnvSkip: "true", EnvReport: report, EnvOwnLabel: "k=nodeless-eks.dev"}), &log))
		assert.Contains(t, log.String(), "cannot write the cleanup's report to "+report)
		assert.Contains(t, log.String(), "skipping the destroy cleanup", "the cleanup ran")
		err := Main(context.Background(), env(map[string]string{EnvReport: report, EnvOwnLabel: "k=nodeless-eks.dev"}), &log)
		require.Error(t, err)
		assert.Contains(t, log.String(), "failed: NODELESS_EKS_LB_TIMEOUT", "its failure is said too")
	})
	t.Run("a targeted destroy, or an update, that reaches the cleanup is refused unless told", func(t *testing.T) {
		for _, args := range [][]string{
			{"/usr/local/bin/pulumi", "destroy", "--target", "urn:pulumi:dev::nodeless-eks::eks:index:Cluster::eks-demo", "--target-dependents", "--yes"},
			{"pulumi", "destroy", "--exclude=urn:x", "--yes"},
			{"pulumi", "up", "--yes"},
		} {
			findPulumi = func() (invocation, error) { return parseInvocation(args), nil }
			err := Main(context.Background(), env(map[string]string{}), &bytes.Buffer{})
			require.Error(t, err, "%v", args)
			assert.Contains(t, err.Error(), "`"+strings.Join(args, " ")+"`")
			assert.Contains(t, err.Error(), "Set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to let it go without cleaning")
			assert.Contains(t, err.Error(), "NODELESS_EKS_DESTROY_CLEANUP_PARTIAL=true to clean anyway")
		}
		err := Main(context.Background(), env(map[string]string{EnvPartial: "true"}), &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "NODELESS_EKS_OWN_LABEL", "told, it goes on")
		findPulumi = whole
	})
	t.Run("when it cannot tell which command deletes it, it refuses, naming the switches", func(t *testing.T) {
		for _, cause := range []error{errNoPulumi, errors.New("reading process 1, an ancestor of the cleanup: open /proc/1/stat: permission denied")} {
			findPulumi = func() (invocation, error) { return invocation{}, cause }
			err := Main(context.Background(), env(map[string]string{}), &bytes.Buffer{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "cannot tell which Pulumi command deletes the destroy cleanup ("+cause.Error()+")")
			assert.Contains(t, err.Error(), "set NODELESS_EKS_DESTROY_CLEANUP_PARTIAL=true to clean anyway")
			assert.Contains(t, err.Error(), "set NODELESS_EKS_SKIP_DESTROY_CLEANUP=true to let it go without cleaning")
			var log bytes.Buffer
			err = Main(context.Background(), env(map[string]string{EnvPartial: "true"}), &log)
			assert.Contains(t, err.Error(), "NODELESS_EKS_OWN_LABEL", "told, it goes on")
			assert.Contains(t, log.String(), "NODELESS_EKS_DESTROY_CLEANUP_PARTIAL=true: cleaning although nothing shows a whole `pulumi destroy`")
		}
		findPulumi = func() (invocation, error) { return parseInvocation([]string{"pulumi", "destroy", "-yq"}), nil }
		err := Main(context.Background(), env(map[string]string{}), &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has a flag the cleanup cannot read (-q in -yq)")
		findPulumi = whole
	})
}

func TestParseInvocation(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		whole   bool
		command string
	}{
		{[]string{"/usr/bin/pulumi", "destroy", "--yes"}, true, "destroy"},
		{[]string{"pulumi", "--non-interactive", "destroy", "--stack", "dev", "--skip-preview"}, true, "destroy"},
		{[]string{"pulumi", "down", "--yes"}, true, "destroy"},
		{[]string{"pulumi", "dn", "-y"}, true, "destroy"},
		{[]string{"pulumi", "destroy", "-t", "urn"}, false, "destroy"},
		{[]string{"pulumi", "down", "--target", "urn", "--target-dependents"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "--target=urn", "--target-dependents"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "-turn:pulumi:dev::p::t::n"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "-x", "urn"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "-x=urn"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "--exclude", "urn", "--exclude-dependents"}, false, "destroy"},
		// destroy.go turns it into an --exclude of every protected URN.
		{[]string{"pulumi", "destroy", "--exclude-protected", "--yes"}, false, "destroy"},
		{[]string{"pulumi", "up", "--yes"}, false, "up"},
		{[]string{"pulumi", "version"}, false, ""},
		// Shorthands grouped as pflag reads them.
		{[]string{"pulumi", "destroy", "-yt", "urn"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "-fyx", "urn"}, false, "destroy"},
		{[]string{"pulumi", "destroy", "-yf"}, true, "destroy"},
		{[]string{"pulumi", "destroy", "-sdev-target", "--yes"}, true, "destroy"}, // -s takes the rest: stack "dev-target"
		{[]string{"pulumi", "destroy", "-ystext", "--yes"}, true, "destroy"},      // -y, then -s "text"
		{[]string{"pulumi", "destroy", "-mtarget", "-y"}, true, "destroy"},        // a message "target"
		{[]string{"pulumi", "destroy", "-r", "-yt", "urn"}, false, "destroy"},     // -r without a value
		{[]string{"pulumi", "destroy", "-r=true", "-y"}, true, "destroy"},         // -r with one
		{[]string{"pulumi", "destroy", "-yk"}, false, "destroy"},                  // a shorthand it does not know
		{[]string{"pulumi", "--cwd", "/x", "destroy", "-C", "/y", "-y"}, true, "destroy"},
	} {
		inv := parseInvocation(tt.args)
		assert.Equal(t, tt.whole, inv.whole(), "%v", tt.args)
		assert.Equal(t, tt.command, inv.Command, "%v", tt.args)
	}
	assert.False(t, isPulumi([]string{"pulumi-resource-command"}))
	assert.False(t, isPulumi([]string{"/bin/sh", "-c", "pulumi destroy"}))
	t.Run("it walks up to the Pulumi CLI", func(t *testing.T) {
		tree := map[int]struct {
			ppid int
			args []string
		}{
			40: {30, []string{"/tmp/go-build/exe/destroy-cleanup"}},
			30: {20, []string{"go", "run", "./cmd/destroy-cleanup"}},
			20: {10, []string{"/bin/sh", "-c", "report=..."}},
			10: {5, []string{"/home/u/.pulumi/plugins/resource-command-v1.1.0/pulumi-resource-command", "127.0.0.1:4000"}},
			5:  {1, []string{"/usr/local/bin/pulumi", "destroy", "--target", "urn", "--target-dependents"}},
		}
		info := func(pid int) (int, []string, error) {
			p, ok := tree[pid]
			if !ok {
				return 0, nil, errors.New("no such process")
			}
			return p.ppid, p.args, nil
		}
		inv, err := findInvocation(40, info)
		require.NoError(t, err)
		assert.False(t, inv.whole())
		_, err = findInvocation(30, func(int) (int, []string, error) { return 0, nil, errors.New("ps: not found") })
		assert.ErrorContains(t, err, "ps: not found", "no ps: it cannot tell")
		// A Pulumi CLI it cannot read ends the walk: it is not taken for a
		// whole destroy further up.
		tree[5] = struct {
			ppid int
			args []string
		}{1, []string{"/usr/local/bin/pulumi", "frobnicate"}}
		inv, err = findInvocation(40, info)
		require.NoError(t, err)
		assert.False(t, inv.whole())

		// The CLI as PID 1: a container whose entrypoint it is.
		tree[5] = struct {
			ppid int
			args []string
		}{4, []string{"/bin/sh", "-c", "..."}}
		tree[4] = struct {
			ppid int
			args []string
		}{1, []string{"bash"}}
		tree[1] = struct {
			ppid int
			args []string
		}{0, []string{"pulumi", "destroy", "--yes"}}
		inv, err = findInvocation(40, info)
		require.NoError(t, err)
		assert.True(t, inv.whole(), "PID 1 is read too")
		tree[1] = struct {
			ppid int
			args []string
		}{0, []string{"/sbin/init"}}
		_, err = findInvocation(40, info)
		assert.ErrorIs(t, err, errNoPulumi, "no Pulumi CLI above it")
	})
}

// TestFindInvocationForReal builds a real process tree: a Pulumi CLI (a
// shell under the name pulumi, run as `pulumi destroy --target ...`) whose
// child, this test binary, reads its ancestors from /proc, and with ps.
func TestFindInvocationForReal(t *testing.T) {
	if os.Getenv("CLEANUP_INVOCATION_CHILD") == "1" {
		for name, info := range map[string]processInfo{"proc": procInfo, "ps": psInfo} {
			inv, err := findInvocation(os.Getpid(), info)
			fmt.Printf("%s: err=%v whole=%v command=%s\n", name, err, inv.whole(), inv.Command)
		}
		return
	}
	sh, errSh := exec.LookPath("sh")
	if errSh != nil {
		t.Skip("needs sh")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux's /proc")
	}
	pulumi := filepath.Join(t.TempDir(), "pulumi")
	require.NoError(t, os.Symlink(sh, pulumi))
	self, err := os.Executable()
	require.NoError(t, err)
	// "; true" keeps the shell from exec'ing the child in its own place.
	cmd := exec.Command(pulumi, "-c", self+" -test.run=^TestFindInvocationForReal$; true", "destroy", "--target", "urn", "--target-dependents")
	cmd.Env = append(os.Environ(), "CLEANUP_INVOCATION_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "proc: err=<nil> whole=false command=destroy", "from /proc")
	if _, err := exec.LookPath("ps"); err == nil {
		assert.Contains(t, string(out), "ps: err=<nil> whole=false command=destroy", "and from ps")
	}
	assert.Equal(t, "procInfo", funcName(systemInfo()), "Linux reads /proc")
}

// funcName names a processInfo for a message.
func funcName(info processInfo) string {
	if fmt.Sprint(info) == fmt.Sprint(processInfo(procInfo)) {
		return "procInfo"
	}
	return "psInfo"
}

// TestReachForReal runs the cleanup with the real client against endpoints
// on this machine: one that refuses connections is not proof the cluster
// is gone, a name that does not resolve is.
func TestReachForReal(t *testing.T) {
	kubeconfig := func(server string) string {
		return `{"clusters":[{"cluster":{"server":"` + server + `"}}],"users":[{"user":{"token":"t"}}]}`
	}
	o := Options{OwnLabelKey: ownKey, OwnLabelValue: ownValue, ReachTimeout: 300 * time.Millisecond,
		LoadBalancerTimeout: time.Second, VolumeTimeout: time.Second, NodeTimeout: time.Second,
		Interval: 50 * time.Millisecond, ReportEvery: time.Second}
	t.Run("connection refused on 127.0.0.1:1 fails, naming the way out", func(t *testing.T) {
		api, err := kubeapi.New(kubeconfig("https://127.0.0.1:1"))
		require.NoError(t, err)
		var log bytes.Buffer
		o := o
		o.Log = &log
		err = Run(context.Background(), api, o)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "connect: connection refused")
		assert.Contains(t, err.Error(), "nothing proves the cluster is gone")
		assert.Contains(t, log.String(), "the API server does not answer yet")
	})
	t.Run("a name that no longer resolves is a cluster that is gone", func(t *testing.T) {
		if _, err := net.LookupHost("gone.nodeless-eks.invalid"); err == nil || !kubeapi.IsGone(err) {
			t.Skipf("this machine's resolver does not answer NXDOMAIN for .invalid (%v)", err)
		}
		api, err := kubeapi.New(kubeconfig("https://gone.nodeless-eks.invalid"))
		require.NoError(t, err)
		var log bytes.Buffer
		o := o
		o.Log = &log
		require.NoError(t, Run(context.Background(), api, o))
		assert.Contains(t, log.String(), "the cluster is gone, so nothing is left to clean")
	})
}

func TestAskEKS(t *testing.T) {
	kubeconfig := `{"clusters":[{"cluster":{"server":"https://x"}}],"users":[{"user":{"exec":{"command":"aws",
		"args":["--region","eu-west-1","eks","get-token","--cluster-name","eks-demo","--role","arn:aws:iam::111122223333:role/deployer","--output","json"],
		"env":[{"name":"AWS_PROFILE","value":"sandbox"}]}}}]}`
	c, ok := eksClusterOf(kubeconfig)
	require.True(t, ok)
	assert.Equal(t, eksCluster{Name: "eks-demo", Region: "eu-west-1", Access: awscli.Access{Profile: "sandbox",
		Role: &awscli.Role{RoleArn: "arn:aws:iam::111122223333:role/deployer"}}, Env: []string{"AWS_PROFILE=sandbox"}}, c)
	_, ok = eksClusterOf(`{"users":[{"user":{"token":"t"}}]}`)
	assert.False(t, ok, "a token kubeconfig names no EKS cluster to ask about")
	c.Arn, c.CreatedAt = "arn:aws:eks:eu-west-1:111122223333:cluster/eks-demo", "2026-12-01T09:00:00Z"

	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	// A fake AWS CLI: the role's session, STS's account for it, and what
	// describe-cluster answers.
	fake := func(account, describe string) {
		script := "#!/bin/sh\necho \"$* key=$AWS_ACCESS_KEY_ID profile=$AWS_PROFILE\" >> " + calls + "\n" +
			"case \"$1 $2\" in\n" +
			"'sts assume-role') echo '{\"Credentials\":{\"AccessKeyId\":\"AKIAROLE\",\"SecretAccessKey\":\"s\",\"SessionToken\":\"t\"}}';;\n" +
			"'sts get-caller-identity') echo '{\"Account\":\"" + account + "\",\"Arn\":\"arn:aws:sts::" + account + ":assumed-role/deployer/x\"}';;\n" +
			"'eks describe-cluster') " + describe + ";;\nesac\n"
		require.NoError(t, os.WriteFile(filepath.Join(bin, "aws"), []byte(script), 0o755))
		require.NoError(t, os.WriteFile(calls, nil, 0o644))
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	active := `echo '{"cluster":{"name":"eks-demo","status":"ACTIVE","createdAt":"2026-12-01T09:00:00.512000+00:00"}}'`
	notFound := `echo "An error occurred (ResourceNotFoundException) when calling the DescribeCluster operation: No cluster found for name: eks-demo." >&2; exit 254`

	fake("111122223333", active)
	exists, status, err := c.exists(context.Background())
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, "ACTIVE", status)
	raw, _ := os.ReadFile(calls)
	assert.Equal(t, "sts assume-role --role-arn arn:aws:iam::111122223333:role/deployer --role-session-name nodeless-eks-destroy-cleanup --output json --region eu-west-1 key= profile=sandbox\n"+
		"sts get-caller-identity --output json --region eu-west-1 key=AKIAROLE profile=\n"+
		"eks describe-cluster --name eks-demo --output json --region eu-west-1 key=AKIAROLE profile=\n", string(raw),
		"the kubeconfig's own credentials: its profile, then its role's session")

	fake("111122223333", notFound)
	exists, _, err = c.exists(context.Background())
	require.NoError(t, err)
	assert.False(t, exists, "EKS's not found, from the cluster's own account and region, is proof")

	fake("999988887777", notFound)
	_, _, err = c.exists(context.Background())
	require.Error(t, err, "not found from another account is no answer")
	assert.Contains(t, err.Error(), "the credentials the kubeconfig uses are for account 999988887777")
	assert.NotContains(t, mustRead(t, calls), "describe-cluster", "EKS is not even asked")

	fake("111122223333", `echo '{"cluster":{"name":"eks-demo","status":"ACTIVE","createdAt":"2026-12-02T10:00:00Z"}}'`)
	_, _, err = c.exists(context.Background())
	require.Error(t, err, "a cluster of the same name created at another time may be the stack's own, replaced by a failed up")
	assert.Contains(t, err.Error(), "exists, created 2026-12-02T10:00:00Z, while the stack recorded the cluster it made as created 2026-12-01T09:00:00Z")
	assert.Contains(t, err.Error(), "run `pulumi up`, which records the live cluster")

	fake("111122223333", `echo "An error occurred (AccessDeniedException) when calling the DescribeCluster operation" >&2; exit 254`)
	_, _, err = c.exists(context.Background())
	require.Error(t, err, "any other failure is no answer")
	assert.Contains(t, err.Error(), "AccessDeniedException")

	for _, tt := range []struct{ name, arn, want string }{
		{"no ARN (a stack whose command an earlier version wrote)", "", "the program gave no cluster ARN (NODELESS_EKS_CLUSTER_ARN"},
		{"another region's cluster", "arn:aws:eks:us-east-1:111122223333:cluster/eks-demo", "the kubeconfig asks EKS in eu-west-1, and the cluster is in us-east-1"},
		{"another cluster's ARN", "arn:aws:eks:eu-west-1:111122223333:cluster/other", "the kubeconfig names cluster eks-demo, the program's ARN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := c
			c.Arn = tt.arn
			fake("111122223333", notFound)
			_, _, err := c.exists(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// mustRead is a file's content.
func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}

// roleAccess is the access of one role, assumed with nothing else.
func roleAccess(arn string) awscli.Access { return awscli.Access{Role: &awscli.Role{RoleArn: arn}} }
