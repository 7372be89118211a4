package realapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"nodeless-eks/internal/kubeapi"
)

// The objects a test writes, in the shapes the API server takes. m is a
// JSON object.
type m = map[string]any

func meta(name, namespace string, labels m, finalizers ...string) m {
	md := m{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	if labels != nil {
		md["labels"] = labels
	}
	if len(finalizers) > 0 {
		md["finalizers"] = finalizers
	}
	return md
}

func namespace(name string) m {
	return m{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, "", nil)}
}

func service(name, ns, typ string, finalizers ...string) m {
	spec := m{"type": typ, "ports": []m{{"port": 80, "targetPort": 8080}}}
	if typ == "LoadBalancer" {
		spec["allocateLoadBalancerNodePorts"] = false
	}
	return m{"apiVersion": "v1", "kind": "Service", "metadata": meta(name, ns, nil, finalizers...), "spec": spec}
}

func ingress(name, ns string, finalizers ...string) m {
	return m{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta(name, ns, nil, finalizers...),
		"spec": m{"ingressClassName": "alb", "defaultBackend": m{"service": m{"name": "internal", "port": m{"number": 80}}}}}
}

func gateway(name, ns, class string, finalizers ...string) m {
	return m{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": meta(name, ns, nil, finalizers...),
		"spec": m{"gatewayClassName": class, "listeners": []m{{"name": "http", "port": 80, "protocol": "HTTP"}}}}
}

// gatewayClass is a GatewayClass of the LB controller (controllerName
// gateway.k8s.aws/alb or /nlb) whose parameters are a
// LoadBalancerConfiguration, finalized as the controller finalizes it
// (gateway.k8s.aws/gatewayclass).
func gatewayClass(name, controller, lbConfigNS, lbConfig string) m {
	return m{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": meta(name, "", nil, "gateway.k8s.aws/gatewayclass"),
		"spec": m{"controllerName": controller, "parametersRef": m{"group": "gateway.k8s.aws", "kind": "LoadBalancerConfiguration",
			"name": lbConfig, "namespace": lbConfigNS}}}
}

// route is an HTTPRoute or GRPCRoute of a Gateway whose rule's filter is
// a ListenerRuleConfiguration (an ExtensionRef of group gateway.k8s.aws).
func route(kind, name, ns, gw, ruleConfig string) m {
	return m{"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": meta(name, ns, nil),
		"spec": m{"parentRefs": []m{{"name": gw}}, "rules": []m{{"filters": []m{{"type": "ExtensionRef",
			"extensionRef": m{"group": "gateway.k8s.aws", "kind": "ListenerRuleConfiguration", "name": ruleConfig}}}}}}}
}

// volume is a PersistentVolume bound to ns/claim; source is its volume
// source (csi or awsElasticBlockStore).
func volume(name, ns, claim, policy string, source m) m {
	spec := m{"capacity": m{"storage": "1Gi"}, "accessModes": []string{"ReadWriteOnce"},
		"persistentVolumeReclaimPolicy": policy, "claimRef": m{"namespace": ns, "name": claim}}
	for k, v := range source {
		spec[k] = v
	}
	md := meta(name, "", nil)
	// The provisioner names itself (pv.kubernetes.io/provisioned-by): the
	// EBS CSI driver, or the in-tree one CSI migration hands to it.
	if csi, _ := source["csi"].(m); csi != nil {
		md["annotations"] = m{"pv.kubernetes.io/provisioned-by": csi["driver"]}
	} else if source["awsElasticBlockStore"] != nil {
		md["annotations"] = m{"pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs"}
	}
	return m{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": md, "spec": spec}
}

// static is a volume made by hand: no provisioner named it.
func static(pv m) m {
	delete(pv["metadata"].(m), "annotations")
	return pv
}

func claim(name, ns, volume string) m {
	return m{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(name, ns, nil),
		"spec": m{"accessModes": []string{"ReadWriteOnce"}, "resources": m{"requests": m{"storage": "1Gi"}}, "volumeName": volume, "storageClassName": ""}}
}

// pod is a pod scheduled on node (none: unscheduled), mounting claim.
func pod(name, ns, node, claimName string, labels m) m {
	spec := m{"containers": []m{{"name": "app", "image": "public.ecr.aws/docker/library/busybox:1.36"}}, "terminationGracePeriodSeconds": 1}
	if node != "" {
		spec["nodeName"] = node
	}
	if claimName != "" {
		spec["volumes"] = []m{{"name": "data", "persistentVolumeClaim": m{"claimName": claimName}}}
	}
	return m{"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, ns, labels), "spec": spec}
}

func nodePool(name string, labels m, finalizers ...string) m {
	return m{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": meta(name, "", labels, finalizers...),
		"spec": m{"template": m{"spec": m{"nodeClassRef": m{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
			"requirements": []m{{"key": "kubernetes.io/arch", "operator": "In", "values": []string{"arm64"}}}}}}}
}

func nodeClass(name string, labels m, finalizers ...string) m {
	return m{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": meta(name, "", labels, finalizers...),
		"spec": m{"role": "eks-demo-karpenter-node", "amiSelectorTerms": []m{{"alias": "bottlerocket@latest"}},
			"subnetSelectorTerms": []m{{"id": "subnet-0a1b2c3d"}}, "securityGroupSelectorTerms": []m{{"id": "sg-0a1b2c3d"}}}}
}

// nodeClaim is a claim of pool and class, named by the API server from
// "<pool>-" as Karpenter names them (generateName).
func nodeClaim(pool, class string, finalizers ...string) m {
	md := meta("", "", m{"karpenter.sh/nodepool": pool}, finalizers...)
	delete(md, "name")
	md["generateName"] = pool + "-"
	return m{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": md,
		"spec": m{"nodeClassRef": m{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class},
			"requirements": []m{{"key": "kubernetes.io/arch", "operator": "In", "values": []string{"arm64"}}}}}
}

// condition is a status condition as Karpenter writes it.
func condition(typ, status, reason, message string, at time.Time) m {
	if reason == "" {
		reason = typ
	}
	return m{"type": typ, "status": status, "reason": reason, "message": message, "lastTransitionTime": at.UTC().Format(time.RFC3339)}
}

// event is a core/v1 Event about an object, from component, recorded in
// namespace ns; a cluster-scoped object's (a NodeClaim's) has no
// namespace of its own, and Kubernetes records it in default.
func event(ns, kind, name, typ, reason, message, component string, at time.Time) m {
	involved := m{"kind": kind, "name": name}
	if kind == "Pod" {
		involved["namespace"] = ns
	}
	return m{"apiVersion": "v1", "kind": "Event", "metadata": m{"generateName": "realapi-", "namespace": ns},
		"involvedObject": involved, "type": typ, "reason": reason, "message": message,
		"source": m{"component": component}, "firstTimestamp": at.UTC().Format(time.RFC3339), "lastTimestamp": at.UTC().Format(time.RFC3339), "count": 1}
}

// paths of the API, by kind.
var paths = map[string]string{
	"Namespace": "/api/v1/namespaces", "Service": "/api/v1/namespaces/%s/services", "Pod": "/api/v1/namespaces/%s/pods",
	"PersistentVolume": "/api/v1/persistentvolumes", "PersistentVolumeClaim": "/api/v1/namespaces/%s/persistentvolumeclaims",
	"Event":        "/api/v1/namespaces/%s/events",
	"Ingress":      "/apis/networking.k8s.io/v1/namespaces/%s/ingresses",
	"Gateway":      "/apis/gateway.networking.k8s.io/v1/namespaces/%s/gateways",
	"GatewayClass": "/apis/gateway.networking.k8s.io/v1/gatewayclasses",
	"HTTPRoute":    "/apis/gateway.networking.k8s.io/v1/namespaces/%s/httproutes",
	"GRPCRoute":    "/apis/gateway.networking.k8s.io/v1/namespaces/%s/grpcroutes",
	"NodePool":     "/apis/karpenter.sh/v1/nodepools", "NodeClaim": "/apis/karpenter.sh/v1/nodeclaims",
	"EC2NodeClass": "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
	"StatefulSet":  "/apis/apps/v1/namespaces/%s/statefulsets",
	"StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
	// The LB controller's own kinds, at the versions the tier's CRDs serve.
	"TargetGroupBinding":        "/apis/elbv2.k8s.aws/v1beta1/namespaces/%s/targetgroupbindings",
	"GlobalAccelerator":         "/apis/aga.k8s.aws/v1beta1/namespaces/%s/globalaccelerators",
	"TargetGroupConfiguration":  "/apis/gateway.k8s.aws/v1beta1/namespaces/%s/targetgroupconfigurations",
	"LoadBalancerConfiguration": "/apis/gateway.k8s.aws/v1/namespaces/%s/loadbalancerconfigurations",
	"ListenerRuleConfiguration": "/apis/gateway.k8s.aws/v1/namespaces/%s/listenerruleconfigurations",
}

// lbObject is one of the LB controller's own kinds, finalized as the
// controller finalizes it.
func lbObject(kind, apiVersion, name, ns, finalizer string) m {
	return m{"apiVersion": apiVersion, "kind": kind, "metadata": meta(name, ns, nil, finalizer), "spec": m{}}
}

// withSpec is obj with spec.
func withSpec(obj, spec m) m {
	obj["spec"] = spec
	return obj
}

// collection is the path of obj's kind, in its namespace.
func collection(obj m) string {
	p := paths[obj["kind"].(string)]
	if ns, _ := obj["metadata"].(m)["namespace"].(string); ns != "" {
		p = fmt.Sprintf(p, ns)
	}
	return p
}

// create creates obj and returns it as stored.
func (s *server) create(t *testing.T, obj m) m {
	t.Helper()
	return s.must(t, http.MethodPost, collection(obj), "", obj)
}

// setStatus writes obj's status through the status subresource, as a
// controller does.
func (s *server) setStatus(t *testing.T, stored m, status m) m {
	t.Helper()
	name := stored["metadata"].(m)["name"].(string)
	return s.must(t, http.MethodPatch, collection(stored)+"/"+name+"/status", "application/merge-patch+json", m{"status": status})
}

// resources are the kinds the controllers' stand-in lists.
var resources = map[string]kubeapi.Resource{
	"Service": kubeapi.Services, "Ingress": kubeapi.Ingresses, "Gateway": kubeapi.Gateways, "Pod": kubeapi.Pods,
	"GatewayClass": kubeapi.GatewayClasses, "HTTPRoute": kubeapi.HTTPRoutes, "GRPCRoute": kubeapi.GRPCRoutes,
	"PersistentVolumeClaim": kubeapi.Claims, "PersistentVolume": kubeapi.Volumes,
	"NodePool": kubeapi.NodePools, "NodeClaim": kubeapi.NodeClaims, "EC2NodeClass": kubeapi.EC2NodeClasses,
	"TargetGroupBinding": kubeapi.TargetGroupBindings, "GlobalAccelerator": kubeapi.GlobalAccelerators,
	"TargetGroupConfiguration":  kubeapi.TargetGroupConfigurationsV1beta1,
	"LoadBalancerConfiguration": kubeapi.LoadBalancerConfigurations, "ListenerRuleConfiguration": kubeapi.ListenerRuleConfigurations,
}

// list lists the objects of kind in namespace ns ("" for all namespaces
// or a cluster-wide kind), every page, with the client the cleanup uses;
// the API leaves kind out of list items, list puts it back.
func (s *server) list(ctx context.Context, kind, ns string) ([]m, error) {
	r, ok := resources[kind]
	if !ok {
		return nil, fmt.Errorf("listing %s: not a kind of the stand-in", kind)
	}
	objs, err := s.client.ListIn(ctx, r, ns, nil)
	out := make([]m, len(objs))
	for i, o := range objs {
		o["kind"] = kind
		out[i] = o
	}
	return out, err
}

func name(o m) string      { s, _ := o["metadata"].(m)["name"].(string); return s }
func ns(o m) string        { s, _ := o["metadata"].(m)["namespace"].(string); return s }
func deleting(o m) bool    { _, ok := o["metadata"].(m)["deletionTimestamp"]; return ok }
func finalizers(o m) []any { f, _ := o["metadata"].(m)["finalizers"].([]any); return f }

func label(o m, key string) string {
	labels, _ := o["metadata"].(m)["labels"].(m)
	s, _ := labels[key].(string)
	return s
}

// norm is v as JSON decodes it, so that objects built in Go and objects
// read from the API compare (int64 and float64 alike).
func norm(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// release removes an object's finalizers, as the controller that owns
// them does once its work is done.
func (s *server) release(ctx context.Context, o m) error {
	kind, _ := o["kind"].(string)
	if kind == "" {
		return fmt.Errorf("object %s has no kind", name(o))
	}
	status, out, err := s.do(ctx, http.MethodPatch, collection(o)+"/"+name(o), "application/merge-patch+json",
		m{"metadata": m{"finalizers": nil}})
	if err == nil && status >= 300 && status != http.StatusNotFound {
		err = fmt.Errorf("removing the finalizers of %s %s: %d: %s", kind, name(o), status, out)
	}
	return err
}
