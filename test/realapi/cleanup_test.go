package realapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// controllers plays, against the real API server, what the cleanup relies
// on and no process here runs: the LB controller (it removes its finalizer
// from an Ingress, Gateway or LoadBalancer Service being deleted once the
// load balancer is gone), kube-controller-manager's claim and volume
// protection (a claim's finalizer goes once no pod uses it; a volume's once
// its claim is gone), the EBS CSI driver's provisioner (it deletes a
// Delete volume whose claim is gone, and the EBS volume) and Karpenter (it
// drains a deleted pool's claims, then lets the pool and, once no claim
// uses it, the class go). What it did is in done, in order.
type controllers struct {
	s    *server
	mu   sync.Mutex
	done []string
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

// run acts every 300 ms until ctx ends.
func (c *controllers) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		if err := c.tick(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("the controllers' stand-in: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (c *controllers) tick(ctx context.Context) error {
	s := c.s
	for _, kind := range []string{"Service", "Ingress", "Gateway"} {
		objs, err := s.list(ctx, kind, "", nil)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if deleting(o) && len(finalizers(o)) > 0 {
				if err := s.release(ctx, o); err != nil {
					return err
				}
				c.did("LB controller: deleted the load balancer of %s %s/%s", kind, ns(o), name(o))
			}
		}
	}
	pods, err := s.list(ctx, "Pod", "", nil)
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
	claims, err := s.list(ctx, "PersistentVolumeClaim", "", nil)
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
	volumes, err := s.list(ctx, "PersistentVolume", "", nil)
	if err != nil {
		return err
	}
	for _, pv := range volumes {
		spec := pv["spec"].(m)
		ref, _ := spec["claimRef"].(m)
		if ref == nil || present[fmt.Sprint(ref["namespace"], "/", ref["name"])] || spec["persistentVolumeReclaimPolicy"] != "Delete" {
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
	nodeClaims, err := s.list(ctx, "NodeClaim", "", nil)
	if err != nil {
		return err
	}
	pools, err := s.list(ctx, "NodePool", "", nil)
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
	classes, err := s.list(ctx, "EC2NodeClass", "", nil)
	if err != nil {
		return err
	}
	for _, cl := range classes {
		if deleting(cl) && len(finalizers(cl)) > 0 {
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
// what workloads leave in a cluster: an Ingress, a Gateway and a
// LoadBalancer Service with the LB controller's finalizers (one of them on
// the second page of a list), a StatefulSet whose pod, on a node whose
// kubelet is gone, holds the claim of a Delete volume of the EBS CSI
// driver, a claim of EKS's in-tree gp2 class, a Retain volume and a volume
// of another driver, and a NodePool and EC2NodeClass of an ArgoCD
// application with a NodeClaim, beside the stack's own. The real server
// adds the claim and volume protection finalizers itself, keeps a pod
// deleted on a node without kubelet terminating, and pages the lists.
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
	s.create(t, service("late", "zz", "LoadBalancer", "service.k8s.aws/resources"))
	s.create(t, ingress("web", "shop", "ingress.k8s.aws/resources"))
	s.create(t, gateway("web-gw", "shop", "gateway.k8s.aws/resources"))
	ebs := func(handle string) m {
		return m{"csi": m{"driver": "ebs.csi.aws.com", "volumeHandle": handle}}
	}
	s.create(t, volume("pvc-data", "shop", "data-db-0", "Delete", ebs("vol-0data")))
	s.create(t, volume("pvc-keep", "shop", "archive", "Retain", ebs("vol-0keep")))
	s.create(t, volume("pvc-efs", "shop", "shared", "Delete", m{"csi": m{"driver": "efs.csi.aws.com", "volumeHandle": "fs-1"}}))
	s.create(t, volume("pvc-gp2", "legacy", "logs", "Delete", m{"awsElasticBlockStore": m{"volumeID": "aws://eu-west-1a/vol-0gp2", "fsType": "ext4"}}))
	for _, c := range [][3]string{{"data-db-0", "shop", "pvc-data"}, {"archive", "shop", "pvc-keep"}, {"shared", "shop", "pvc-efs"}, {"logs", "legacy", "pvc-gp2"}} {
		stored := s.create(t, claim(c[0], c[1], c[2]))
		require.Contains(t, finalizers(stored), "kubernetes.io/pvc-protection", "the API server protects claims itself")
	}
	s.create(t, m{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db", "shop", nil), "spec": m{
		"serviceName": "db", "selector": m{"matchLabels": m{"app": "db"}},
		"template":             m{"metadata": m{"labels": m{"app": "db"}}, "spec": m{"containers": []m{{"name": "db", "image": "postgres:16"}}}},
		"volumeClaimTemplates": []m{{"metadata": m{"name": "data"}, "spec": m{"accessModes": []string{"ReadWriteOnce"}, "resources": m{"requests": m{"storage": "1Gi"}}}}}}})
	s.create(t, pod("db-0", "shop", "ip-10-0-1-1", "data-db-0", m{"app": "db"}))
	s.create(t, pod("logger", "legacy", "ip-10-0-1-1", "logs", nil))
	s.create(t, nodeClass("default", m{ownKey: ownValue}))
	s.create(t, nodePool("general", m{ownKey: ownValue}))
	s.create(t, nodeClass("argo-class", nil, "karpenter.k8s.aws/termination"))
	s.create(t, nodePool("argo-pool", nil, "karpenter.sh/termination"))
	argoClaim := s.create(t, nodeClaim("argo-pool", "karpenter.sh/termination"))
	s.setStatus(t, argoClaim, m{"nodeName": "ip-10-0-9-9", "conditions": []m{condition("Launched", "True", "", "", time.Now())}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := &controllers{s: s}
	go ctl.run(ctx, t)

	bin := filepath.Join(t.TempDir(), "destroy-cleanup")
	build := exec.Command("go", "build", "-o", bin, "./cmd/destroy-cleanup")
	build.Dir = "../.." // the root module
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building cmd/destroy-cleanup: %s", out)
	report := filepath.Join(t.TempDir(), "destroy-cleanup.log")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "NODELESS_EKS_KUBECONFIG="+s.Kubeconfig(execPlugin(t)), "NODELESS_EKS_OWN_LABEL="+ownKey+"="+ownValue,
		"NODELESS_EKS_LB_TIMEOUT=3m", "NODELESS_EKS_VOLUME_TIMEOUT=4m", "NODELESS_EKS_NODE_TIMEOUT=3m", "NODELESS_EKS_CLEANUP_REPORT="+report)
	start := time.Now()
	out, err = cmd.CombinedOutput()
	t.Logf("destroy-cleanup took %s:\n%s\ncontrollers:\n%s", time.Since(start).Round(time.Second), out, strings.Join(ctl.Done(), "\n"))
	require.NoError(t, err)
	log := string(out)

	t.Run("load balancers, the one on the second page included", func(t *testing.T) {
		for _, path := range []string{"/api/v1/namespaces/shop/services/public", "/api/v1/namespaces/zz/services/late",
			"/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web", "/apis/gateway.networking.k8s.io/v1/namespaces/shop/gateways/web-gw"} {
			status, _, err := s.do(ctxT(), http.MethodGet, path, "", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusNotFound, status, "%s is gone", path)
		}
		status, _, _ := s.do(ctxT(), http.MethodGet, "/api/v1/namespaces/shop/services/internal", "", nil)
		assert.Equal(t, http.StatusOK, status, "a ClusterIP Service stays")
		bulk, err := s.list(ctxT(), "Service", "bulk", nil)
		require.NoError(t, err)
		assert.Len(t, bulk, 520)
		assert.Contains(t, ctl.Done(), "LB controller: deleted the load balancer of Service zz/late")
	})
	t.Run("volumes: CSI and in-tree Delete ones go, Retain and other drivers' stay", func(t *testing.T) {
		for vol, want := range map[string]int{"pvc-data": http.StatusNotFound, "pvc-gp2": http.StatusNotFound,
			"pvc-keep": http.StatusOK, "pvc-efs": http.StatusOK} {
			status, _, err := s.do(ctxT(), http.MethodGet, "/api/v1/persistentvolumes/"+vol, "", nil)
			require.NoError(t, err)
			assert.Equal(t, want, status, vol)
		}
		assert.Contains(t, log, "keeping EBS volume vol-0keep (PersistentVolume pvc-keep, claim shop/archive): its reclaim policy is Retain")
		status, _, _ := s.do(ctxT(), http.MethodGet, "/apis/apps/v1/namespaces/shop/statefulsets/db", "", nil)
		assert.Equal(t, http.StatusNotFound, status, "the StatefulSet goes first, or it would recreate its claim")
		// No kubelet confirms the pod's deletion: it stays terminating
		// until the cleanup deletes it at once.
		assert.Contains(t, log, "kubelet has not confirmed: it holds a claim of a volume to delete")
	})
	t.Run("node pools: the foreign ones go, after their claims; the stack's stay", func(t *testing.T) {
		for path, want := range map[string]int{"/apis/karpenter.sh/v1/nodepools/argo-pool": http.StatusNotFound,
			"/apis/karpenter.k8s.aws/v1/ec2nodeclasses/argo-class": http.StatusNotFound,
			"/apis/karpenter.sh/v1/nodepools/general":              http.StatusOK, "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default": http.StatusOK} {
			status, _, err := s.do(ctxT(), http.MethodGet, path, "", nil)
			require.NoError(t, err)
			assert.Equal(t, want, status, path)
		}
		assert.Contains(t, log, "keeping NodePool general: the stack created it")
		assert.Contains(t, strings.Join(ctl.Done(), "\n"), "Karpenter: drained and terminated NodeClaim argo-pool-")
	})
	t.Run("the report file holds what the output said", func(t *testing.T) {
		raw, err := os.ReadFile(report)
		require.NoError(t, err)
		assert.Contains(t, string(raw), "keeping EBS volume vol-0keep")
		assert.Contains(t, string(raw), "destroy cleanup done")
	})
}
