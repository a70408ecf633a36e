package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestPodSourceWarnings(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	items := func(paths ...string) []corev1.KeyToPath {
		var out []corev1.KeyToPath
		for _, p := range paths {
			out = append(out, corev1.KeyToPath{Key: "k", Path: p})
		}
		return out
	}
	tests := map[string]struct {
		spec corev1.PodSpec
		fld  *field.Path
		want []string
	}{
		"nothing to say": {spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{ref("a"), ref("b")},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: ref("c"), Items: items("a", "ab", "b/c")}}}}}},
		"pull secrets of a pod": {spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{ref("reg"), ref(""), ref("reg"), ref("")}},
			want: []string{
				`spec.imagePullSecrets[2].name: duplicate name "reg"`,
				`spec.imagePullSecrets[3].name: duplicate name ""`,
				`spec.imagePullSecrets[1].name: invalid empty name ""`,
				`spec.imagePullSecrets[3].name: invalid empty name ""`,
			}},
		"negative grace period of a template": {fld: field.NewPath("spec", "template"), spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](-5)},
			want: []string{"spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"}},
		"pull secrets of a template": {fld: field.NewPath("spec", "template"), spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{ref("reg"), ref("reg")}},
			want: []string{`spec.template.spec.imagePullSecrets[1].name: duplicate name "reg"`}},
		"configMap and secret items": {spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("conf"), Items: items("a", "a/b", "a/")}}},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: items("x/y/z", "x/y")}}},
		}}, want: []string{
			`volume "cfg" (ConfigMap "conf"): overlapping paths: "a/b" with "a"`,
			`volume "cfg" (ConfigMap "conf"): overlapping paths: "a" with "a"`,
			`volume "cfg" (ConfigMap "conf"): overlapping paths: "a" with "a/b"`,
			`volume "sec" (Secret "creds"): overlapping paths: "x/y" with "x/y/z"`,
		}},
		"projected": {spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("conf"), Items: items("etc")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: ref("creds"), Items: items("etc/key")}},
				{},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels"}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "labels"}},
			}}}}}},
			want: []string{
				`volume "all" (Projected): overlapping paths: "etc/key" (Secret "creds") with "etc" (ConfigMap "conf")`,
				`volume "all" (Projected) has no sources provided`,
				`volume "all" (Projected): overlapping paths: "labels" (ServiceAccountToken) with "labels" (DownwardAPI)`,
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodSourceWarnings(&tc.spec, tc.fld)); diff != "" {
				t.Errorf("warnings (-want,+got):\n%s", diff)
			}
		})
	}
}
