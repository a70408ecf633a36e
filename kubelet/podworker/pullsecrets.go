package podworker

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// pullSecrets are the registry credentials of the pod's imagePullSecrets
// (their .dockerconfigjson or legacy .dockercfg), for its image pulls; as
// the kubelet's getPullSecretsForPod, secrets that cannot be read are
// skipped and named in a FailedToRetrieveImagePullSecret event.
func (r *containerRun) pullSecrets() [][]byte {
	var out [][]byte
	var failed []string
	for _, ref := range r.pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		s, err := r.w.m.sources.secret(r.pod.Namespace, ref.Name)
		if err != nil {
			failed = append(failed, ref.Name)
			continue
		}
		if data, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
			out = append(out, data)
		} else if data, ok := s.Data[corev1.DockerConfigKey]; ok {
			out = append(out, data)
		}
	}
	if len(failed) > 0 {
		r.event(corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return out
}
