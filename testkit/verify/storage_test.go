package verify

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestStorageWorkloadUsesTheDefaultClass(t *testing.T) {
	pvc, pod := StorageWorkload("acc", "data")
	assert.Nil(t, pvc.Spec.StorageClassName, "no class: the cluster's default must take the claim")
	require.Len(t, pod.Spec.Volumes, 1)
	assert.Equal(t, "data", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, "the pod mounts the claim, so a WaitForFirstConsumer class binds it")
}

func TestWaitBound(t *testing.T) {
	gp3 := "gp3"
	tests := []struct {
		name    string
		phase   corev1.PersistentVolumeClaimPhase
		class   *string
		wantErr string
	}{
		{"bound through gp3", corev1.ClaimBound, &gp3, ""},
		{"still pending", corev1.ClaimPending, nil, "timed out"},
		{"bound through another class", corev1.ClaimBound, func() *string { s := "gp2"; return &s }(), `bound through class "gp2", want the default "gp3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc, _ := StorageWorkload("acc", "data")
			pvc.Spec.StorageClassName = tt.class
			pvc.Status.Phase = tt.phase
			kube := fake.NewSimpleClientset(pvc)
			err := WaitBound(context.Background(), kube, "acc", "data", "gp3", 50*time.Millisecond, 10*time.Millisecond)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNodeMetrics(t *testing.T) {
	n, err := NodeMetrics(context.Background(), func(_ context.Context, path string) ([]byte, error) {
		assert.Equal(t, "/apis/metrics.k8s.io/v1beta1/nodes", path)
		return []byte(`{"kind":"NodeMetricsList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = NodeMetrics(context.Background(), func(context.Context, string) ([]byte, error) {
		return nil, errors.New("the server could not find the requested resource")
	})
	assert.ErrorContains(t, err, "reading node metrics")
}

func TestRetainStorageClass(t *testing.T) {
	class := RetainStorageClass("keep")
	assert.Equal(t, "ebs.csi.aws.com", class.Provisioner, "the EBS CSI driver provisions it")
	assert.Equal(t, corev1.PersistentVolumeReclaimRetain, *class.ReclaimPolicy, "its volumes outlive their claims")
	assert.Equal(t, storagev1.VolumeBindingWaitForFirstConsumer, *class.VolumeBindingMode, "made in the zone of the pod")
}
