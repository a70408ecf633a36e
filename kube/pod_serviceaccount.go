package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// The ServiceAccount token volume kube-apiserver's ServiceAccount admission
// adds to a pod.
const (
	// ServiceAccountVolumePrefix starts the volume's name
	// (kube-api-access-<5 random characters>).
	ServiceAccountVolumePrefix = "kube-api-access-"
	// ServiceAccountMountPath is where every container finds the token,
	// ca.crt and namespace.
	ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMap is the ConfigMap of every namespace holding the CA
	// bundle the API's serving certificate verifies against, under
	// RootCAKey.
	RootCAConfigMap = "kube-root-ca.crt"
	RootCAKey       = "ca.crt"
	// ServiceAccountTokenSeconds is the lifetime the volume asks for its
	// token (kube's WarnOnlyBoundTokenExpirationSeconds).
	ServiceAccountTokenSeconds = 3607
)

// mirrorPodAnnotation marks a kubelet's static pod's mirror.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// PodServiceAccount is the name of the ServiceAccount pod runs as once
// admitted: its spec.serviceAccountName (or the deprecated
// spec.serviceAccount), else DefaultServiceAccountName.
func PodServiceAccount(pod *corev1.Pod) string {
	switch {
	case pod.Spec.ServiceAccountName != "":
		return pod.Spec.ServiceAccountName
	case pod.Spec.DeprecatedServiceAccount != "":
		return pod.Spec.DeprecatedServiceAccount
	}
	return DefaultServiceAccountName
}

// admitServiceAccount is kube-apiserver's ServiceAccount admission of a new
// pod: it runs as PodServiceAccount, which must exist (sa is it as the
// writer's transaction reads it, nil when missing: 403 with kube's
// message); unless automounting is off on the pod or the ServiceAccount,
// every container and init container mounts the kube-api-access volume;
// a pod without imagePullSecrets takes the ServiceAccount's. A mirror
// pod is left as it is.
func admitServiceAccount(pod *corev1.Pod, sa *corev1.ServiceAccount) error {
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return nil
	}
	name := PodServiceAccount(pod)
	pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = name, name
	if sa == nil {
		return forbidPod(pod, fmt.Errorf("error looking up service account %s/%s: %w",
			pod.Namespace, name, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)))
	}
	if automount(pod, sa) {
		mountServiceAccountToken(&pod.Spec)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i] = corev1.LocalObjectReference{Name: ref.Name}
		}
	}
	return nil
}

// IsMissingDefaultServiceAccount reports whether err is the admission's
// refusal of a pod whose ServiceAccount is the default one, which the
// service account controller is about to create in a new namespace:
// kube-apiserver looks it up again for a while before refusing.
func IsMissingDefaultServiceAccount(err error) bool {
	return apierrors.IsForbidden(err) &&
		strings.Contains(err.Error(), fmt.Sprintf("serviceaccount %q not found", DefaultServiceAccountName))
}

// automount is kube's shouldAutomount: the pod's choice, else the
// ServiceAccount's, else true.
func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken mounts the token volume read-only at
// ServiceAccountMountPath in every container and init container that has
// nothing mounted there, and adds the volume if one of them mounts it (a
// volume named kube-api-access-* already there is reused).
func mountServiceAccountToken(spec *corev1.PodSpec) {
	volName := ""
	for _, v := range spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumePrefix) {
			volName = v.Name
			break
		}
	}
	hasVolume := volName != ""
	if !hasVolume {
		volName = ServiceAccountVolumePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: volName, ReadOnly: true, MountPath: ServiceAccountMountPath}
	needed := false
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if mountsAt(&list[i], ServiceAccountMountPath) {
				continue
			}
			list[i].VolumeMounts = append(list[i].VolumeMounts, mount)
			needed = true
		}
	}
	if needed && !hasVolume {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volName,
			VolumeSource: corev1.VolumeSource{Projected: ServiceAccountTokenVolume()}})
	}
}

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// ServiceAccountTokenVolume is the projected source of the token volume,
// exactly as kube-apiserver writes it: the token, the root CA and the
// namespace, with the default mode spelled out.
func ServiceAccountTokenVolume() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(ServiceAccountTokenSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: RootCAKey, Path: RootCAKey}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}
