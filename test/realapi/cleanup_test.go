package realapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/kubeapi"
)

// controllers plays, against the real API server, what the cleanup relies
// on and no process here runs: the LB controller (it removes its finalizer
// from an Ingress, Gateway or LoadBalancer Service being deleted once the
// load balancer is gone, and from its own bindings, accelerators and
// configurations once what they hold in AWS is), kube-controller-manager's claim protection (a
// claim's finalizer goes once no pod uses it), the volume provisioners of
// EBS (the EBS CSI driver, and for in-tree volumes under CSI migration the
// same): a Delete volume whose claim is gone is deleted, and with it its
// protection finalizer, and Karpenter (it drains the claims of a pool
// deleted or gone, then lets the pool go, and a deleted class once no
// claim uses it). lbController false stops the LB controller; recreate
// names a Service ("namespace/name") that an operator recreates once after
// it is gone. What they did is in done, in order; what failed, in errs.
type controllers struct {
	s            *server
	lbController bool
	recreate     string

	mu         sync.Mutex
	done, errs []string
	recreated  bool
}

func (c *controllers) did(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = append(c.done, fmt.Sprintf(format, args...))
}

func (c *controllers) Done() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.done)
}

// start acts every 300 ms until the returned stop is called, which waits
// for the last tick and returns what failed: a controller that errs keeps
// trying, as a real one does.
// start runs the controllers until stop is called, or the test ends
// (when it fails before it calls stop); stop returns their errors.
func (c *controllers) start(t *testing.T) (stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := c.tick(ctx); err != nil && ctx.Err() == nil {
				c.mu.Lock()
				c.errs = append(c.errs, err.Error())
				c.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	stop = func() []string {
		cancel()
		wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Clone(c.errs)
	}
	t.Cleanup(func() { stop() })
	return stop
}

// lbInUse are the LB controller v3.5.0's rules for keeping the finalizer of
// one of its Gateway API kinds while it is deleted: a GatewayClass while a
// Gateway names it (controllers/gateway/gatewayclass_controller.go), a
// LoadBalancerConfiguration while a GatewayClass's parametersRef or a
// Gateway's infrastructure.parametersRef names it
// (pkg/gateway/gatewayutils/lb_config_utils.go), a ListenerRuleConfiguration
// while an HTTPRoute's or GRPCRoute's ExtensionRef filter names it
// (controllers/gateway/listenerrule_configuration_controller.go,
// pkg/gateway/routeutils/listener_rule_config_utils.go). The others it lets
// go once what they hold in AWS is gone.
func lbInUse(kind string, o m, all map[string][]m) string {
	refersTo := func(ref any, group, kind, name, ns string) bool {
		r, _ := ref.(m)
		return r != nil && r["group"] == group && r["kind"] == kind && r["name"] == name &&
			(r["namespace"] == nil || r["namespace"] == ns)
	}
	switch kind {
	case "GatewayClass":
		for _, g := range all["Gateway"] {
			if g["spec"].(m)["gatewayClassName"] == name(o) {
				return "Gateway " + ns(g) + "/" + name(g)
			}
		}
	case "LoadBalancerConfiguration":
		for _, c := range all["GatewayClass"] {
			if refersTo(c["spec"].(m)["parametersRef"], "gateway.k8s.aws", kind, name(o), ns(o)) {
				return "GatewayClass " + name(c)
			}
		}
		for _, g := range all["Gateway"] {
			infra, _ := g["spec"].(m)["infrastructure"].(m)
			if infra != nil && refersTo(infra["parametersRef"], "gateway.k8s.aws", kind, name(o), ns(g)) && ns(g) == ns(o) {
				return "Gateway " + ns(g) + "/" + name(g)
			}
		}
	case "TargetGroupConfiguration":
		// A default one (no targetReference) while a LoadBalancerConfiguration
		// in use names it (controllers/gateway/targetgroup_configuration_controller.go).
		if o["spec"].(m)["targetReference"] != nil {
			break
		}
		for _, lb := range all["LoadBalancerConfiguration"] {
			d, _ := lb["spec"].(m)["defaultTargetGroupConfiguration"].(m)
			if d != nil && d["name"] == name(o) && ns(lb) == ns(o) && lbInUse("LoadBalancerConfiguration", lb, all) != "" {
				return "LoadBalancerConfiguration " + ns(lb) + "/" + name(lb)
			}
		}
	case "ListenerRuleConfiguration":
		for _, rk := range []string{"HTTPRoute", "GRPCRoute"} {
			for _, r := range all[rk] {
				for _, rule := range asList(r["spec"].(m)["rules"]) {
					for _, f := range asList(rule.(m)["filters"]) {
						if ns(r) == ns(o) && refersTo(f.(m)["extensionRef"], "gateway.k8s.aws", kind, name(o), ns(o)) {
							return rk + " " + ns(r) + "/" + name(r)
						}
					}
				}
			}
		}
	}
	return ""
}

func (c *controllers) tick(ctx context.Context) error {
	s := c.s
	all := map[string][]m{}
	for _, kind := range []string{"Gateway", "GatewayClass", "HTTPRoute", "GRPCRoute", "LoadBalancerConfiguration"} {
		objs, err := s.list(ctx, kind, "")
		if err != nil {
			return err
		}
		all[kind] = objs
	}
	for _, kind := range []string{"Service", "Ingress", "Gateway", "GatewayClass", "TargetGroupBinding", "GlobalAccelerator",
		"TargetGroupConfiguration", "LoadBalancerConfiguration", "ListenerRuleConfiguration"} {
		objs, err := s.list(ctx, kind, "")
		if err != nil {
			return err
		}
		if kind == "Service" && c.recreate != "" && !c.recreated {
			gone := true
			for _, o := range objs {
				gone = gone && ns(o)+"/"+name(o) != c.recreate
			}
			if gone {
				namespace, svc, _ := strings.Cut(c.recreate, "/")
				obj := service(svc, namespace, "LoadBalancer", "service.k8s.aws/resources")
				if status, out, err := s.do(ctx, http.MethodPost, collection(obj)+"?fieldManager=shop-operator", "", obj); err != nil || status != http.StatusCreated {
					return fmt.Errorf("recreating Service %s: %v %d %s", c.recreate, err, status, out)
				}
				c.recreated = true
				c.did("operator: recreated Service %s", c.recreate)
			}
		}
		for _, o := range objs {
			if !c.lbController || !deleting(o) || len(finalizers(o)) == 0 {
				continue
			}
			if by := lbInUse(kind, o, all); by != "" {
				if msg := fmt.Sprintf("LB controller: keeps %s %s/%s, in use by %s", kind, ns(o), name(o), by); !slices.Contains(c.Done(), msg) {
					c.did("%s", msg)
				}
				continue
			}
			if err := s.release(ctx, o); err != nil {
				return err
			}
			c.did("LB controller: let %s %s/%s go", kind, ns(o), name(o))
		}
	}
	pods, err := s.list(ctx, "Pod", "")
	if err != nil {
		return err
	}
	inUse := map[string]bool{}
	for _, p := range pods {
		for _, v := range asList(p["spec"].(m)["volumes"]) {
			if pvc, ok := v.(m)["persistentVolumeClaim"].(m); ok {
				inUse[ns(p)+"/"+pvc["claimName"].(string)] = true
			}
		}
	}
	claims, err := s.list(ctx, "PersistentVolumeClaim", "")
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, cl := range claims {
		present[ns(cl)+"/"+name(cl)] = true
		if deleting(cl) && !inUse[ns(cl)+"/"+name(cl)] && len(finalizers(cl)) > 0 {
			if err := s.release(ctx, cl); err != nil {
				return err
			}
			c.did("claim protection: released claim %s/%s", ns(cl), name(cl))
		}
	}
	volumes, err := s.list(ctx, "PersistentVolume", "")
	if err != nil {
		return err
	}
	for _, pv := range volumes {
		spec := pv["spec"].(m)
		ref, _ := spec["claimRef"].(m)
		csi, _ := spec["csi"].(m)
		_, inTree := spec["awsElasticBlockStore"]
		// Only through the provisioner the volume names
		// (pv_controller.go deleteVolumeOperation): a static one goes Failed.
		annotations, _ := pv["metadata"].(m)["annotations"].(m)
		by, _ := annotations["pv.kubernetes.io/provisioned-by"].(string)
		if ref == nil || present[fmt.Sprint(ref["namespace"], "/", ref["name"])] || spec["persistentVolumeReclaimPolicy"] != "Delete" ||
			(!inTree && (csi == nil || csi["driver"] != "ebs.csi.aws.com")) || by == "" {
			continue
		}
		if err := s.release(ctx, pv); err != nil {
			return err
		}
		if status, out, err := s.do(ctx, http.MethodDelete, "/api/v1/persistentvolumes/"+name(pv), "", nil); err != nil || (status >= 300 && status != http.StatusNotFound) {
			return fmt.Errorf("deleting volume %s: %v %d %s", name(pv), err, status, out)
		}
		c.did("volume provisioner: deleted volume %s, its claim gone", name(pv))
	}
	nodeClaims, err := s.list(ctx, "NodeClaim", "")
	if err != nil {
		return err
	}
	pools, err := s.list(ctx, "NodePool", "")
	if err != nil {
		return err
	}
	// Karpenter drains and terminates the claims of a pool being deleted,
	// or gone, then lets the pool go.
	alive := map[string]bool{}
	for _, p := range pools {
		alive[name(p)] = !deleting(p)
	}
	left := map[string]int{}
	for _, nc := range nodeClaims {
		pool := label(nc, "karpenter.sh/nodepool")
		if alive[pool] {
			continue
		}
		left[pool]++
		if err := s.release(ctx, nc); err != nil {
			return err
		}
		if status, out, err := s.do(ctx, http.MethodDelete, "/apis/karpenter.sh/v1/nodeclaims/"+name(nc), "", nil); err != nil ||
			(status >= 300 && status != http.StatusNotFound) {
			return fmt.Errorf("deleting NodeClaim %s: %v %d %s", name(nc), err, status, out)
		}
		c.did("Karpenter: drained and terminated NodeClaim %s of NodePool %s", name(nc), pool)
	}
	for _, p := range pools {
		if deleting(p) && left[name(p)] == 0 && len(finalizers(p)) > 0 {
			if err := s.release(ctx, p); err != nil {
				return err
			}
			c.did("Karpenter: let NodePool %s go", name(p))
		}
	}
	classes, err := s.list(ctx, "EC2NodeClass", "")
	if err != nil {
		return err
	}
	usedClass := map[string]bool{}
	for _, nc := range nodeClaims {
		if ref, ok := nc["spec"].(m)["nodeClassRef"].(m); ok {
			usedClass[fmt.Sprint(ref["name"])] = true
		}
	}
	for _, cl := range classes {
		if deleting(cl) && len(finalizers(cl)) > 0 && !usedClass[name(cl)] {
			if err := s.release(ctx, cl); err != nil {
				return err
			}
			c.did("Karpenter: removed the instance profiles of EC2NodeClass %s", name(cl))
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

const (
	ownKey   = "nodeless-eks/stack"
	ownValue = "nodeless-eks.realapi"
)

// TestDestroyCleanupAgainstARealServer runs cmd/destroy-cleanup, built,
// with the environment the program gives it and a kubeconfig that
// authenticates as pulumi-eks's does (an exec credential plugin), against
// what workloads leave in a cluster: an Ingress, a Gateway and
// LoadBalancer Services with the LB controller's finalizers (one of them
// on the second page of a list, one that an operator recreates), a
// StatefulSet whose pod, on a node whose kubelet is gone, holds the claim
// of a Delete volume of the EBS CSI driver, a claim of EKS's in-tree gp2
// class, Retain volumes of both, a volume of another driver, a pod without
// a claim, and a NodePool and EC2NodeClass of an ArgoCD application with a
// NodeClaim, beside the stack's own with theirs. The real server adds the
// claim and volume protection finalizers itself, keeps a pod deleted on a
// node without kubelet terminating, assigns the UIDs and pages the lists.
func TestDestroyCleanupAgainstARealServer(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	for _, n := range []string{"shop", "legacy", "bulk", "zz"} {
		s.create(t, namespace(n))
	}
	// More Services than one page of the cleanup's lists (500), with a
	// LoadBalancer one on the second page.
	for i := range 520 {
		s.create(t, service(fmt.Sprintf("svc-%03d", i), "bulk", "ClusterIP"))
	}
	s.create(t, service("public", "shop", "LoadBalancer", "service.k8s.aws/resources"))
	s.create(t, service("internal", "shop", "ClusterIP"))
	s.create(t, service("operator-lb", "shop", "LoadBalancer", "service.k8s.aws/resources"))
	s.create(t, service("late", "zz", "LoadBalancer", "service.k8s.aws/resources"))
	s.create(t, ingress("web", "shop", "ingress.k8s.aws/resources"))
	// A Gateway of an ALB GatewayClass, whose parameters and rules are the
	// LB controller's configurations, finalized by their real names.
	s.create(t, gatewayClass("aws-alb", "gateway.k8s.aws/alb", "shop", "web-lb"))
	s.create(t, gateway("web-gw", "shop", "aws-alb", "gateway.k8s.aws/alb"))
	s.create(t, route("HTTPRoute", "web-route", "shop", "web-gw", "web-rule"))
	s.create(t, route("GRPCRoute", "rpc-route", "shop", "web-gw", "rpc-rule"))
	// The LB controller's own kinds, finalized as it finalizes them (its
	// v3.5.0 sources): a binding a user made, an accelerator, and the
	// Gateway API configurations, at the versions the CRDs serve.
	for _, o := range []m{
		lbObject("TargetGroupBinding", "elbv2.k8s.aws/v1beta1", "legacy-tg", "shop", "elbv2.k8s.aws/resources"),
		lbObject("GlobalAccelerator", "aga.k8s.aws/v1beta1", "edge", "shop", "aga.k8s.aws/resources"),
		lbObject("TargetGroupConfiguration", "gateway.k8s.aws/v1beta1", "web-tg", "shop", "gateway.k8s.aws/targetgroupconfigurations"),
		withSpec(lbObject("LoadBalancerConfiguration", "gateway.k8s.aws/v1", "web-lb", "shop", "gateway.k8s.aws/loadbalancerconfigurations"),
			m{"defaultTargetGroupConfiguration": m{"name": "web-tg"}}),
		lbObject("ListenerRuleConfiguration", "gateway.k8s.aws/v1", "web-rule", "shop", "gateway.k8s.aws/listenerruleconfigurations"),
		lbObject("ListenerRuleConfiguration", "gateway.k8s.aws/v1", "rpc-rule", "shop", "gateway.k8s.aws/listenerruleconfigurations"),
	} {
		s.create(t, o)
	}
	ebs := func(handle string) m {
		return m{"csi": m{"driver": "ebs.csi.aws.com", "volumeHandle": handle}}
	}
	gp2 := func(id string) m { return m{"awsElasticBlockStore": m{"volumeID": id, "fsType": "ext4"}} }
	for _, v := range []m{
		volume("pvc-data", "shop", "data-db-0", "Delete", ebs("vol-0data")),
		volume("pvc-keep", "shop", "archive", "Retain", ebs("vol-0keep")),
		volume("pvc-efs", "shop", "shared", "Delete", m{"csi": m{"driver": "efs.csi.aws.com", "volumeHandle": "fs-1"}}),
		volume("pvc-gp2", "legacy", "logs", "Delete", gp2("aws://eu-west-1a/vol-0gp2")),
		volume("pvc-gp2-keep", "legacy", "audit", "Retain", gp2("vol-0gp2keep")),
		static(volume("pv-orders", "shop", "orders", "Delete", ebs("vol-0orders"))),
	} {
		stored := s.create(t, v)
		require.Contains(t, finalizers(stored), "kubernetes.io/pv-protection", "the API server protects volumes itself")
	}
	for _, c := range [][3]string{{"data-db-0", "shop", "pvc-data"}, {"archive", "shop", "pvc-keep"}, {"shared", "shop", "pvc-efs"},
		{"logs", "legacy", "pvc-gp2"}, {"audit", "legacy", "pvc-gp2-keep"}, {"orders", "shop", "pv-orders"}} {
		stored := s.create(t, claim(c[0], c[1], c[2]))
		require.Contains(t, finalizers(stored), "kubernetes.io/pvc-protection", "the API server protects claims itself")
		// The volume names its claim by UID, as the binder writes it: the
		// cleanup tells a claim from one recreated under its name by it.
		s.must(t, http.MethodPatch, "/api/v1/persistentvolumes/"+c[2], "application/merge-patch+json",
			m{"spec": m{"claimRef": m{"uid": stored["metadata"].(m)["uid"]}}})
	}
	s.create(t, m{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db", "shop", nil), "spec": m{
		"serviceName": "db", "selector": m{"matchLabels": m{"app": "db"}},
		"template":             m{"metadata": m{"labels": m{"app": "db"}}, "spec": m{"containers": []m{{"name": "db", "image": "postgres:16"}}}},
		"volumeClaimTemplates": []m{{"metadata": m{"name": "data"}, "spec": m{"accessModes": []string{"ReadWriteOnce"}, "resources": m{"requests": m{"storage": "1Gi"}}}}}}})
	s.create(t, pod("db-0", "shop", "ip-10-0-1-1", "data-db-0", m{"app": "db"}))
	// The default class, an EBS one, and a claim that names none: the real
	// server's admission gives it the default, and it is Pending (no
	// volume yet, as under WaitForFirstConsumer). The other claims name
	// no class ("") and stay the cleanup's only through their volumes.
	gp3 := s.create(t, m{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "ebs.csi.aws.com",
		"volumeBindingMode": "WaitForFirstConsumer",
		"metadata":          m{"name": "realapi-gp3", "annotations": m{"storageclass.kubernetes.io/is-default-class": "true"}}})
	pending := s.create(t, m{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("cache-0", "zz", nil),
		"spec": m{"accessModes": []string{"ReadWriteOnce"}, "resources": m{"requests": m{"storage": "1Gi"}}}})
	require.Equal(t, "realapi-gp3", pending["spec"].(m)["storageClassName"], "DefaultStorageClass admission")
	require.Equal(t, "Pending", pending["status"].(m)["phase"])
	// A copy of the stack's pool, under another name, with its label.
	s.create(t, nodePool("realapi-own-copy", m{ownKey: ownValue}))
	s.create(t, pod("logger", "legacy", "ip-10-0-1-1", "logs", nil))
	s.create(t, pod("web-1", "shop", "ip-10-0-1-1", "", nil))
	s.create(t, nodeClass("realapi-own", m{ownKey: ownValue}))
	s.create(t, nodePool("realapi-own", m{ownKey: ownValue}))
	ownClaim := s.create(t, nodeClaim("realapi-own", "realapi-own", "karpenter.sh/termination"))
	s.create(t, nodeClass("argo-class", nil, "karpenter.k8s.aws/termination"))
	s.create(t, nodePool("argo-pool", nil, "karpenter.sh/termination"))
	argoClaim := s.create(t, nodeClaim("argo-pool", "argo-class", "karpenter.sh/termination"))
	s.setStatus(t, argoClaim, m{"nodeName": "ip-10-0-9-9", "conditions": []m{condition("Launched", "True", "", "", time.Now())}})
	t.Cleanup(func() {
		for _, o := range []m{ownClaim, {"kind": "NodePool", "metadata": m{"name": "realapi-own"}}, {"kind": "EC2NodeClass", "metadata": m{"name": "realapi-own"}}, gp3,
			{"kind": "Service", "metadata": m{"name": "operator-lb", "namespace": "shop"}}} {
			_ = s.release(ctxT(), o)
			s.do(ctxT(), http.MethodDelete, collection(o)+"/"+name(o), "", nil)
		}
	})

	bin := destroyCleanup(t)
	ctl := &controllers{s: s, lbController: true}
	stop := ctl.start(t)
	report := filepath.Join(t.TempDir(), "destroy-cleanup.log")
	// Bounds that the one-minute wait for a pod whose kubelet never
	// confirms fits in, and a deadline within go test's.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Run as the delete command of a whole `pulumi destroy`, under a real
	// process of that name: the guard reads it from /proc. A pod whose
	// kubelet never confirms is deleted at once 5 s past its grace period
	// (a minute by default).
	cmd := underPulumi(ctx, t, bin, false, "destroy", "--yes", "--stack", "dev")
	cmd.Env = append(cmd.Env, "NODELESS_EKS_KUBECONFIG="+s.Kubeconfig(execPlugin(t)), "NODELESS_EKS_OWN_LABEL="+ownKey+"="+ownValue,
		"NODELESS_EKS_OWN_NODEPOOLS=realapi-own", "NODELESS_EKS_OWN_NODECLASSES=realapi-own",
		"NODELESS_EKS_LB_TIMEOUT=1m", "NODELESS_EKS_VOLUME_TIMEOUT=2m30s", "NODELESS_EKS_NODE_TIMEOUT=1m", "NODELESS_EKS_CLEANUP_REPORT="+report,
		"NODELESS_EKS_STUCK_POD_WAIT=5s")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	errs := stop()
	t.Logf("destroy-cleanup took %s:\n%s\ncontrollers:\n%s", time.Since(start).Round(time.Second), out, strings.Join(ctl.Done(), "\n"))
	require.Empty(t, errs, "the controllers' stand-in failed")
	require.NoError(t, err)
	log := string(out)
	before := func(a, b string) {
		t.Helper()
		i, j := strings.Index(log, a), strings.Index(log, b)
		assert.True(t, i >= 0 && j >= 0 && i < j, "%q comes before %q", a, b)
	}

	t.Run("load balancers, the one on the second page included", func(t *testing.T) {
		for _, path := range []string{"/api/v1/namespaces/shop/services/public", "/api/v1/namespaces/zz/services/late",
			"/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web", "/apis/gateway.networking.k8s.io/v1/namespaces/shop/gateways/web-gw"} {
			status, _, err := s.do(ctxT(), http.MethodGet, path, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusNotFound, status, "%s is gone", path)
		}
		status, _, _ := s.do(ctxT(), http.MethodGet, "/api/v1/namespaces/shop/services/internal", "", nil)
		assert.Equal(t, http.StatusOK, status, "a ClusterIP Service stays")
		bulk, err := s.list(ctxT(), "Service", "bulk")
		require.NoError(t, err)
		assert.Len(t, bulk, 520)
		assert.Contains(t, ctl.Done(), "LB controller: let Service zz/late go")
	})
	t.Run("the LB controller's own objects go while it runs, before the volumes", func(t *testing.T) {
		for _, path := range []string{"/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings/legacy-tg",
			"/apis/aga.k8s.aws/v1beta1/namespaces/shop/globalaccelerators/edge",
			"/apis/gateway.k8s.aws/v1beta1/namespaces/shop/targetgroupconfigurations/web-tg",
			"/apis/gateway.k8s.aws/v1/namespaces/shop/loadbalancerconfigurations/web-lb",
			"/apis/gateway.k8s.aws/v1/namespaces/shop/listenerruleconfigurations/web-rule",
			"/apis/gateway.k8s.aws/v1/namespaces/shop/listenerruleconfigurations/rpc-rule",
			"/apis/gateway.networking.k8s.io/v1/gatewayclasses/aws-alb",
			"/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/web-route",
			"/apis/gateway.networking.k8s.io/v1/namespaces/shop/grpcroutes/rpc-route"} {
			status, _, err := s.do(ctxT(), http.MethodGet, path, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusNotFound, status, "%s is gone", path)
		}
		for _, o := range []string{"TargetGroupBinding shop/legacy-tg", "GlobalAccelerator shop/edge", "TargetGroupConfiguration shop/web-tg",
			"LoadBalancerConfiguration shop/web-lb", "ListenerRuleConfiguration shop/web-rule", "HTTPRoute shop/web-route",
			"GRPCRoute shop/rpc-route", "GatewayClass aws-alb"} {
			assert.Contains(t, log, "deleting "+o)
		}
		done := strings.Join(ctl.Done(), "\n")
		assert.Contains(t, done, "LB controller: let LoadBalancerConfiguration shop/web-lb go")
		assert.Contains(t, done, "LB controller: let TargetGroupConfiguration shop/web-tg go")
		before("deleting Service shop/public", "deleting TargetGroupBinding shop/legacy-tg")
		before("deleting TargetGroupBinding shop/legacy-tg", "deleting StatefulSet shop/db")
	})
	t.Run("volumes: CSI and in-tree Delete ones go, Retain and other drivers' stay", func(t *testing.T) {
		for vol, want := range map[string]int{"pvc-data": http.StatusNotFound, "pvc-gp2": http.StatusNotFound,
			"pvc-keep": http.StatusOK, "pvc-gp2-keep": http.StatusOK, "pvc-efs": http.StatusOK, "pv-orders": http.StatusOK} {
			status, _, err := s.do(ctxT(), http.MethodGet, "/api/v1/persistentvolumes/"+vol, "", nil)
			require.NoError(t, err)
			assert.Equal(t, want, status, vol)
		}
		for _, kept := range []string{"shop/persistentvolumeclaims/shared", "shop/pods/web-1"} {
			status, _, err := s.do(ctxT(), http.MethodGet, "/api/v1/namespaces/"+kept, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status, "%s stays", kept)
		}
		// A Retain volume's claim goes, so that the driver detaches the
		// volume while it runs; the volume stays, Released.
		for _, gone := range []string{"shop/persistentvolumeclaims/archive", "legacy/persistentvolumeclaims/audit"} {
			status, _, err := s.do(ctxT(), http.MethodGet, "/api/v1/namespaces/"+gone, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusNotFound, status, "%s is deleted, its volume kept", gone)
		}
		assert.Contains(t, log, "deleting PersistentVolumeClaim shop/archive (its EBS volume is kept")
		assert.Contains(t, log, "deleting PersistentVolumeClaim zz/cache-0 (Pending: its EBS volume is made once a pod needs it)")
		assert.NotContains(t, log, "deleting PersistentVolumeClaim shop/shared", "a claim of no class, of another driver's volume")
		// A static volume (made by hand) with reclaim policy Delete: nothing
		// deletes it, so it is kept and named, not waited for.
		assert.Contains(t, log, "keeping EBS volume vol-0orders (PersistentVolume pv-orders, claim shop/orders): it was made by hand")
		assert.Contains(t, log, "keeping EBS volume vol-0keep (PersistentVolume pvc-keep, claim shop/archive): its reclaim policy is Retain. "+
			"It is billed until you delete it: aws ec2 delete-volume --volume-id vol-0keep")
		assert.Contains(t, log, "keeping EBS volume vol-0gp2keep (PersistentVolume pvc-gp2-keep, claim legacy/audit)")
		before("deleting StatefulSet shop/db", "deleting PersistentVolumeClaim shop/data-db-0")
		// No kubelet confirms the pods' deletion: they stay terminating
		// until the cleanup deletes them at once, a minute past their
		// grace period; meanwhile it says what it waits for.
		assert.Contains(t, log, "deleting Pod shop/db-0 at once")
		assert.Contains(t, log, "kubelet has not confirmed: it holds a claim of a volume to delete")
		assert.Regexp(t, `2 left \(PersistentVolume pvc-data \(vol-0data\), PersistentVolume pvc-gp2 \(vol-0gp2\)\), \d+s of 2m30s`, log)
	})
	t.Run("node pools: the foreign ones go, after their claims; the stack's stay, with theirs", func(t *testing.T) {
		for path, want := range map[string]int{"/apis/karpenter.sh/v1/nodepools/argo-pool": http.StatusNotFound,
			"/apis/karpenter.k8s.aws/v1/ec2nodeclasses/argo-class": http.StatusNotFound,
			"/apis/karpenter.sh/v1/nodepools/realapi-own":          http.StatusOK, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/realapi-own": http.StatusOK,
			"/apis/karpenter.sh/v1/nodeclaims/" + name(ownClaim): http.StatusOK} {
			status, _, err := s.do(ctxT(), http.MethodGet, path, "", nil)
			require.NoError(t, err)
			assert.Equal(t, want, status, path)
		}
		assert.Contains(t, log, "keeping NodePool realapi-own: the stack created it")
		assert.Contains(t, log, "deleting NodePool realapi-own-copy (the stack did not create it)", "a copy keeps the label, not the name")
		before("deleting NodePool argo-pool", "deleting EC2NodeClass argo-class")
		assert.Contains(t, strings.Join(ctl.Done(), "\n"), "Karpenter: drained and terminated NodeClaim argo-pool-")
	})
	t.Run("the steps run in order: load balancers, volumes, node pools", func(t *testing.T) {
		before("deleting Service shop/public", "deleting StatefulSet shop/db")
		before("deleting Pod shop/db-0 at once", "deleting NodePool argo-pool")
	})
	t.Run("the report file holds what the output said", func(t *testing.T) {
		raw, err := os.ReadFile(report)
		require.NoError(t, err)
		assert.Contains(t, string(raw), "keeping EBS volume vol-0keep")
		assert.Contains(t, string(raw), "destroy cleanup done")
	})
}

// loadBalancerIn makes namespace ns and a LoadBalancer Service name in it,
// finalized as the LB controller finalizes it; the test's end lets it go
// and deletes it.
func loadBalancerIn(t *testing.T, s *server, ns, name string) {
	t.Helper()
	s.create(t, namespace(ns))
	s.create(t, service(name, ns, "LoadBalancer", "service.k8s.aws/resources"))
	t.Cleanup(func() {
		_ = s.release(ctxT(), m{"kind": "Service", "metadata": m{"name": name, "namespace": ns}})
		s.do(ctxT(), http.MethodDelete, "/api/v1/namespaces/"+ns+"/services/"+name, "", nil)
	})
}

// TestDestroyCleanupFailsAtTheStepThatDoesNotFinish: with the LB
// controller gone, a load balancer's finalizer stays, and the cleanup
// fails at that step within its bound, naming what is left and the way
// out, instead of going on to delete volumes and nodes.
func TestDestroyCleanupFailsAtTheStepThatDoesNotFinish(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	loadBalancerIn(t, s, "stuck", "stuck-lb")
	api, err := kubeapi.New(s.Kubeconfig(""))
	require.NoError(t, err)
	ctl := &controllers{s: s} // no LB controller
	stop := ctl.start(t)
	var log strings.Builder
	start := time.Now()
	err = cleanup.Run(context.Background(), api, cleanup.Options{OwnLabelKey: ownKey, OwnLabelValue: ownValue,
		ReachTimeout: 10 * time.Second, LoadBalancerTimeout: 3 * time.Second, VolumeTimeout: time.Minute, NodeTimeout: time.Minute,
		Interval: 200 * time.Millisecond, ReportEvery: time.Second, Log: &log})
	require.Empty(t, stop())
	t.Log(log.String())
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second, "within its bound")
	assert.Contains(t, err.Error(), "removing load balancers: timed out after 3s")
	assert.Contains(t, err.Error(), "Service stuck/stuck-lb")
	assert.Contains(t, err.Error(), "NODELESS_EKS_SKIP_DESTROY_CLEANUP=true")
	assert.NotContains(t, log.String(), "EBS volume", "no later step runs")
}

// TestARecreatedLoadBalancerFailsTheCleanup: a LoadBalancer Service that an
// operator the stack does not own recreates after the cleanup deleted it
// would get a new load balancer that outlives the LB controller, so the
// step fails once it sees it, within the settle that follows the wait
// (told by the UID the server gave it), naming the field manager that
// created it, and no later step runs.
func TestARecreatedLoadBalancerFailsTheCleanup(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	loadBalancerIn(t, s, "operated", "operator-lb")
	api, err := kubeapi.New(s.Kubeconfig(""))
	require.NoError(t, err)
	ctl := &controllers{s: s, lbController: true, recreate: "operated/operator-lb"}
	stop := ctl.start(t)
	var log strings.Builder
	start := time.Now()
	err = cleanup.Run(context.Background(), api, cleanup.Options{OwnLabelKey: ownKey, OwnLabelValue: ownValue,
		ReachTimeout: 10 * time.Second, LoadBalancerTimeout: time.Minute, VolumeTimeout: time.Minute, NodeTimeout: time.Minute,
		Settle: 5 * time.Second, Interval: 200 * time.Millisecond, ReportEvery: time.Second, Log: &log})
	require.Empty(t, stop())
	t.Log(log.String())
	require.Error(t, err)
	assert.Less(t, time.Since(start), 30*time.Second, "within the settle, well within the minute's bound")
	assert.Contains(t, ctl.Done(), "operator: recreated Service operated/operator-lb")
	assert.Contains(t, err.Error(), "removing load balancers: recreated after the cleanup deleted them, by something that still runs: "+
		"Service operated/operator-lb (written by field manager shop-operator)")
	assert.NotContains(t, log.String(), "EBS volume", "no later step runs")
}

// TestTheTargetedDestroyGuardUnderARealProcessTree runs the built cleanup
// as the delete command of Pulumi commands that are not a whole destroy,
// under a real process named pulumi (and as PID 1 of a PID namespace,
// where unshare can make one): it refuses, naming the command and the
// switch, and deletes nothing of a cluster that stays.
func TestTheTargetedDestroyGuardUnderARealProcessTree(t *testing.T) {
	s := need(t)
	installCRDs(t, s)
	loadBalancerIn(t, s, "guard", "stays")
	bin := destroyCleanup(t)
	target := "urn:pulumi:dev::nodeless-eks::nodeless-eks:cluster:Cluster::eks-demo"
	pid1, whyNot := canBePID1()
	for name, tc := range map[string]struct {
		args   []string
		asPID1 bool
		want   string
	}{
		"--target with --target-dependents": {args: []string{"destroy", "--yes", "--target", target, "--target-dependents"},
			want: "is a destroy of some resources only"},
		"shorthands combined (-yt)": {args: []string{"destroy", "-yt", target, "--target-dependents"}, want: "is a destroy of some resources only"},
		"an up that deletes it":     {args: []string{"up", "--yes"}, want: "is not a destroy, yet it deletes the destroy cleanup"},
		"the CLI as PID 1":          {args: []string{"destroy", "--yes", "--target", target, "--target-dependents"}, asPID1: true, want: "is a destroy of some resources only"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.asPID1 && !pid1 {
				t.Skip(whyNot)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := underPulumi(ctx, t, bin, tc.asPID1, tc.args...)
			cmd.Env = append(cmd.Env, "NODELESS_EKS_KUBECONFIG="+s.Kubeconfig(""), "NODELESS_EKS_OWN_LABEL="+ownKey+"="+ownValue,
				"NODELESS_EKS_OWN_NODEPOOLS=realapi-own", "NODELESS_EKS_OWN_NODECLASSES=realapi-own",
				"NODELESS_EKS_LB_TIMEOUT=1m", "NODELESS_EKS_VOLUME_TIMEOUT=1m", "NODELESS_EKS_NODE_TIMEOUT=1m")
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "%s", out)
			assert.Contains(t, string(out), tc.want)
			assert.Contains(t, string(out), "NODELESS_EKS_DESTROY_CLEANUP_PARTIAL=true")
			assert.Contains(t, string(out), "/pulumi "+strings.Join(tc.args, " ")+"`", "it names the command it read")
			svc, err := s.list(ctxT(), "Service", "guard")
			require.NoError(t, err)
			require.Len(t, svc, 1)
			assert.Nil(t, svc[0]["metadata"].(m)["deletionTimestamp"], "nothing of the cluster that stays is deleted")
		})
	}
}
