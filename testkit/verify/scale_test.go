package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestScaleWorkloadNeedsKarpenterNodes(t *testing.T) {
	d := ScaleWorkload("default", "inflate", 5)
	assert.Equal(t, int32(5), *d.Spec.Replicas)
	terms := d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 1)
	assert.Equal(t, NodePoolLabel, terms[0].MatchExpressions[0].Key)
	assert.Equal(t, corev1.NodeSelectorOpExists, terms[0].MatchExpressions[0].Operator)
	assert.Equal(t, "kubernetes.io/hostname", d.Spec.Template.Spec.TopologySpreadConstraints[0].TopologyKey)
	req := d.Spec.Template.Spec.Containers[0].Resources.Requests
	assert.Equal(t, "500m", req.Cpu().String())
	assert.Equal(t, "256Mi", req.Memory().String())
}

func TestScale(t *testing.T) {
	kube := fake.NewSimpleClientset(ScaleWorkload("default", "inflate", 5))
	require.NoError(t, Scale(context.Background(), kube, "default", "inflate", 15))
	d, err := kube.AppsV1().Deployments("default").Get(context.Background(), "inflate", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(15), *d.Spec.Replicas)
	assert.Error(t, Scale(context.Background(), kube, "default", "missing", 1))
}

// advancingCluster is a fake cluster that moves one step each time pods or
// nodes are listed, the way Karpenter would catch up between polls.
type advancingCluster struct {
	kube  *fake.Clientset
	polls int
	steps map[int][]runtime.Object // objects added at a poll
	gone  map[int][]string         // nodes deleted at a poll
}

func newAdvancingCluster(objs ...runtime.Object) *advancingCluster {
	c := &advancingCluster{kube: fake.NewSimpleClientset(objs...), steps: map[int][]runtime.Object{}, gone: map[int][]string{}}
	c.kube.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		c.polls++
		for _, o := range c.steps[c.polls] {
			if err := c.kube.Tracker().Add(o); err != nil {
				return true, nil, err
			}
		}
		for _, n := range c.gone[c.polls] {
			if err := c.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("nodes"), "", n); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	return c
}

func inflatePods(from, to int, nodeName string) []runtime.Object {
	var out []runtime.Object
	for i := from; i < to; i++ {
		out = append(out, pod("default", fmt.Sprintf("inflate-%d", i), nodeName, map[string]string{"app": "inflate"}, corev1.PodRunning))
	}
	return out
}

func TestWaitScaledOut(t *testing.T) {
	start := append([]runtime.Object{node("ip-1", karpenterNode)}, inflatePods(0, 5, "ip-1")...)

	t.Run("returns the nodes Karpenter added once all pods run", func(t *testing.T) {
		c := newAdvancingCluster(start...)
		c.steps[2] = append([]runtime.Object{node("ip-2", karpenterNode)}, inflatePods(5, 10, "ip-2")...)
		c.steps[3] = append([]runtime.Object{node("ip-3", karpenterNode)}, inflatePods(10, 15, "ip-3")...)
		added, err := WaitScaledOut(context.Background(), c.kube, "default", "app=inflate", 15,
			map[string]bool{"ip-1": true}, time.Second, time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{"ip-2": true, "ip-3": true}, added)
		assert.GreaterOrEqual(t, c.polls, 3, "it kept polling until the last pods ran")
	})

	t.Run("times out with the last status when capacity never comes", func(t *testing.T) {
		c := newAdvancingCluster(start...)
		_, err := WaitScaledOut(context.Background(), c.kube, "default", "app=inflate", 15,
			map[string]bool{"ip-1": true}, 30*time.Millisecond, time.Millisecond)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "timed out")
		assert.Contains(t, err.Error(), "5 of 15 pods running, 0 Karpenter nodes added")
	})
}

func TestWaitNodesGone(t *testing.T) {
	objs := []runtime.Object{node("ip-1", karpenterNode), node("ip-2", karpenterNode), node("ip-3", karpenterNode)}
	added := map[string]bool{"ip-2": true, "ip-3": true}

	t.Run("waits until the added nodes are consolidated away", func(t *testing.T) {
		c := newAdvancingCluster(objs...)
		c.gone[2] = []string{"ip-2"}
		c.gone[4] = []string{"ip-3"}
		require.NoError(t, WaitNodesGone(context.Background(), c.kube, added, time.Second, time.Millisecond))
		assert.GreaterOrEqual(t, c.polls, 4)
		left, err := KarpenterNodes(context.Background(), c.kube)
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{"ip-1": true}, left, "nodes that were there before stay")
	})

	t.Run("times out naming the nodes that stayed", func(t *testing.T) {
		c := newAdvancingCluster(objs...)
		c.gone[2] = []string{"ip-2"}
		err := WaitNodesGone(context.Background(), c.kube, added, 30*time.Millisecond, time.Millisecond)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nodes still present: [ip-3]")
	})
}
