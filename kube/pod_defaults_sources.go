package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultVolumeSources applies kube's defaults of the volume sources that
// show files: a defaultMode of 0644, field selectors of version v1, and a
// service account token valid for an hour.
func defaultVolumeSources(volumes []corev1.Volume) {
	for i := range volumes {
		v := &volumes[i].VolumeSource
		switch {
		case v.ConfigMap != nil:
			defaultMode(&v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
		case v.Secret != nil:
			defaultMode(&v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
		case v.DownwardAPI != nil:
			defaultMode(&v.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
			defaultDownwardFiles(v.DownwardAPI.Items)
		case v.Projected != nil:
			defaultMode(&v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
			for j := range v.Projected.Sources {
				s := &v.Projected.Sources[j]
				if s.DownwardAPI != nil {
					defaultDownwardFiles(s.DownwardAPI.Items)
				}
				if t := s.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
					t.ExpirationSeconds = ptr.To(int64(3600))
				}
			}
		}
	}
}

func defaultMode(m **int32, mode int32) {
	if *m == nil {
		*m = ptr.To(mode)
	}
}

func defaultDownwardFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		defaultFieldSelector(items[i].FieldRef)
	}
}

// defaultFieldSelector is kube's SetDefaults_ObjectFieldSelector.
func defaultFieldSelector(fs *corev1.ObjectFieldSelector) {
	if fs != nil && fs.APIVersion == "" {
		fs.APIVersion = "v1"
	}
}

// defaultEnvSources defaults the field selectors of a container's env.
func defaultEnvSources(env []corev1.EnvVar) {
	for i := range env {
		if from := env[i].ValueFrom; from != nil {
			defaultFieldSelector(from.FieldRef)
		}
	}
}
