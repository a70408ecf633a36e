package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

func ephemeral(name string, mutate ...func(*corev1.EphemeralContainer)) corev1.EphemeralContainer {
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}}
	for _, m := range mutate {
		m(&ec)
	}
	return ec
}

func TestValidateEphemeralContainersUpdate(t *testing.T) {
	base := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}},
		Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	with := func(old []corev1.EphemeralContainer, ecs ...corev1.EphemeralContainer) (corev1.PodSpec, corev1.PodSpec) {
		o, n := *base.DeepCopy(), *base.DeepCopy()
		o.EphemeralContainers = old
		n.EphemeralContainers = ecs
		return n, o
	}
	existing := []corev1.EphemeralContainer{ephemeral("dbg")}
	tests := map[string]struct {
		old  []corev1.EphemeralContainer
		new  []corev1.EphemeralContainer
		want []string
	}{
		"first one added": {new: []corev1.EphemeralContainer{ephemeral("dbg")}},
		"one more, targeting the app": {old: existing, new: []corev1.EphemeralContainer{ephemeral("dbg"),
			ephemeral("dbg2", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "app" })}},
		"target an init container": {new: []corev1.EphemeralContainer{
			ephemeral("dbg", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "init" })}},
		"removed": {old: existing, want: []string{
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed`}},
		"changed": {old: existing, new: []corev1.EphemeralContainer{
			ephemeral("dbg", func(ec *corev1.EphemeralContainer) { ec.Image = "busybox:1.36" })},
			want: []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be changed`}},
		"name of a regular container": {new: []corev1.EphemeralContainer{ephemeral("app")},
			want: []string{`spec.ephemeralContainers[0].name: Duplicate value: "app"`}},
		"unknown target": {new: []corev1.EphemeralContainer{
			ephemeral("dbg", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "nope" })},
			want: []string{`spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`}},
		"target another ephemeral container": {old: existing, new: []corev1.EphemeralContainer{ephemeral("dbg"),
			ephemeral("dbg2", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "dbg" })},
			want: []string{`spec.ephemeralContainers[1].targetContainerName: Not found: "dbg"`}},
		"no image": {new: []corev1.EphemeralContainer{ephemeral("dbg", func(ec *corev1.EphemeralContainer) { ec.Image = "" })},
			want: []string{`spec.ephemeralContainers[0].image: Required value`}},
		"fields of regular containers": {new: []corev1.EphemeralContainer{ephemeral("dbg", func(ec *corev1.EphemeralContainer) {
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			ec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1")}
			ec.ReadinessProbe = &corev1.Probe{}
			ec.Lifecycle = &corev1.Lifecycle{}
		})}, want: []string{
			"spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
		}},
		"volume mounts": {new: []corev1.EphemeralContainer{ephemeral("dbg", func(ec *corev1.EphemeralContainer) {
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}, {Name: "nope", MountPath: "/n"}}
		})}, want: []string{
			// NOTE: kube validates the mounts as any container's first.
			`spec.ephemeralContainers[0].volumeMounts[1].name: Not found: "nope"`,
			"spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec, old := with(tc.old, tc.new...)
			var got []string
			for _, e := range ValidateEphemeralContainersUpdate(&spec, &old) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
		})
	}
}
