package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"nodeless-eks/internal/cleanup"
	"nodeless-eks/internal/poll"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StorageWorkload is a claim with no storage class (so the cluster's
// default takes it) and a pod that mounts it; with WaitForFirstConsumer
// the volume is made only once the pod is scheduled.
func StorageWorkload(namespace, name string) (*corev1.PersistentVolumeClaim, *corev1.Pod) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "writer", Image: "public.ecr.aws/docker/library/busybox:1.37",
				Command:      []string{"sh", "-c", "echo ok > /data/ok && sleep 3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
	return pvc, pod
}

// RetainStorageClass is an EBS CSI class whose volumes outlive their
// claims: destroy must keep such a volume and say so.
func RetainStorageClass(name string) *storagev1.StorageClass {
	retain := corev1.PersistentVolumeReclaimRetain
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       cleanup.EBSCSIDriver,
		Parameters:        map[string]string{"type": "gp3", "encrypted": "true"},
		ReclaimPolicy:     &retain,
		VolumeBindingMode: &wait,
	}
}

// WaitBound waits until the claim is Bound through storage class want.
func WaitBound(ctx context.Context, kube kubernetes.Interface, namespace, name, want string, timeout, interval time.Duration) error {
	return poll.Until(ctx, timeout, interval, func(ctx context.Context) (bool, string, error) {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		class := ""
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		if pvc.Status.Phase == corev1.ClaimBound && class != want {
			return false, "", fmt.Errorf("claim %s/%s bound through class %q, want the default %q", namespace, name, class, want)
		}
		return pvc.Status.Phase == corev1.ClaimBound, fmt.Sprintf("claim %s/%s is %s", namespace, name, pvc.Status.Phase), nil
	})
}

// NodeMetrics reads the metrics API (metrics.k8s.io) that metrics-server
// serves: how many nodes it reports. raw fetches an API path.
func NodeMetrics(ctx context.Context, raw func(ctx context.Context, path string) ([]byte, error)) (int, error) {
	body, err := raw(ctx, "/apis/metrics.k8s.io/v1beta1/nodes")
	if err != nil {
		return 0, fmt.Errorf("reading node metrics: %w", err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("decoding node metrics: %w", err)
	}
	return len(list.Items), nil
}
