package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestValidatePodSources(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	tests := map[string]struct {
		volume corev1.VolumeSource
		env    []corev1.EnvVar
		from   []corev1.EnvFromSource
		want   string
	}{
		"item mode out of range": {volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("c"),
			Items: []corev1.KeyToPath{{Key: "k", Path: "p", Mode: ptr.To(int32(0o1000))}}}},
			want: "spec.volumes[0].configMap.items[0].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive"},
		"defaultMode out of range": {volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To(int32(-1))}},
			want: "spec.volumes[0].secret.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive"},
		"path traversal": {volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s",
			Items: []corev1.KeyToPath{{Key: "k", Path: "../x"}}}},
			want: `spec.volumes[0].secret.items[0].path: Invalid value: "../x": must not contain '..'`},
		"reserved path": {volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("c"),
			Items: []corev1.KeyToPath{{Key: "k", Path: "..data"}}}},
			want: `spec.volumes[0].configMap.items[0].path: Invalid value: "..data": must not start with '..'`},
		"no secret name": {volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}},
			want: "spec.volumes[0].secret.secretName: Required value"},
		"projected duplicate path": {volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("c"), Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: ref("s"), Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}},
		}}}, want: `spec.volumes[0].projected: Invalid value: "s": conflicting duplicate paths`},
		"short token": {volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(60))}},
		}}}, want: "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"},
		"secret key traversal": {env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("s"), Key: "../x"}}}},
			want: `[spec.containers[0].env[0].valueFrom.secretKeyRef.key: Invalid value: "../x": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'), spec.containers[0].env[0].valueFrom.secretKeyRef.key: Invalid value: "../x": must not start with '..']`},
		"value and source": {env: []corev1.EnvVar{{Name: "X", Value: "v", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("c"), Key: "k"}}}},
			want: `spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when ` + "`value`" + ` is not empty`},
		"env name with =": {env: []corev1.EnvVar{{Name: "A=B", Value: "v"}},
			want: `spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		"envFrom without source": {from: []corev1.EnvFromSource{{Prefix: "P_"}},
			want: "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"},
		"fine": {volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}, env: []corev1.EnvVar{
			{Name: "1.relaxed-name", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Env: tc.env, EnvFrom: tc.from}}}}
			if tc.volume != (corev1.VolumeSource{}) {
				pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tc.volume}}
			}
			defaultPod(pod)
			got := ""
			if errs := ValidatePodCreate(pod); len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
