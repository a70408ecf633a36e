package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodVolumes(t *testing.T) {
	hostPath := func(path string) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}
	}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	badType := corev1.HostPathType("Dir")
	negative := apiresource.MustParse("-1")
	tests := map[string]struct {
		volumes []corev1.Volume
		mounts  []corev1.VolumeMount
		want    []string
	}{
		"valid": {
			volumes: []corev1.Volume{{Name: "h", VolumeSource: hostPath("/var/data/x..y")}, {Name: "e", VolumeSource: emptyDir}},
			mounts:  []corev1.VolumeMount{{Name: "h", MountPath: "/h", SubPath: "a/b..c"}, {Name: "e", MountPath: "/e", SubPathExpr: "$(POD)"}},
		},
		"a volume with an invalid source cannot be mounted": {
			volumes: []corev1.Volume{{Name: "h", VolumeSource: hostPath("/var/../x")}},
			mounts:  []corev1.VolumeMount{{Name: "h", MountPath: "/h"}},
			want:    []string{`spec.volumes[0].hostPath.path: Invalid value: "/var/../x": must not contain '..'`, `spec.containers[0].volumeMounts[0].name: Not found: "h"`},
		},
		"hostPath climbing out": {
			volumes: []corev1.Volume{{Name: "h", VolumeSource: hostPath("../../etc")}},
			want:    []string{`spec.volumes[0].hostPath.path: Invalid value: "../../etc": must not contain '..'`},
		},
		"subPath climbing out, once per mount": {
			volumes: []corev1.Volume{{Name: "e", VolumeSource: emptyDir}},
			mounts:  []corev1.VolumeMount{{Name: "e", MountPath: "/e", SubPath: "../../../../etc"}, {Name: "e", MountPath: "/f", SubPathExpr: "/abs/.."}},
			want: []string{
				`spec.containers[0].volumeMounts.subPath: Invalid value: "../../../../etc": must not contain '..'`,
				`spec.containers[0].volumeMounts.subPathExpr: Invalid value: "/abs/..": must be a relative path`,
				`spec.containers[0].volumeMounts.subPathExpr: Invalid value: "/abs/..": must not contain '..'`,
			},
		},
		"mounts: unknown volume, duplicate path, both subPath kinds": {
			volumes: []corev1.Volume{{Name: "e", VolumeSource: emptyDir}},
			mounts:  []corev1.VolumeMount{{Name: "x", MountPath: "/e"}, {Name: "e", MountPath: "/e", SubPath: "a", SubPathExpr: "b"}},
			want: []string{
				`spec.containers[0].volumeMounts[0].name: Not found: "x"`,
				`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/e": must be unique`,
				`spec.containers[0].volumeMounts[1].subPathExpr: Invalid value: "b": subPathExpr and subPath are mutually exclusive`,
			},
		},
		"volumes: no source, two sources, bad names, bad type, negative size": {
			volumes: []corev1.Volume{
				{Name: "none"},
				{Name: "two", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}, EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "Bad_Name", VolumeSource: emptyDir},
				{Name: "t", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x", Type: &badType}}},
				{Name: "t", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &negative}}},
			},
			want: []string{
				"spec.volumes[0]: Required value: must specify a volume type",
				"spec.volumes[1].hostPath: Forbidden: may not specify more than 1 volume type",
				`spec.volumes[2].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.volumes[3].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`,
				"spec.volumes[4].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := corev1.PodSpec{
				Volumes:       tc.volumes,
				RestartPolicy: corev1.RestartPolicyNever,
				DNSPolicy:     corev1.DNSClusterFirst,
				Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35", VolumeMounts: tc.mounts,
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}},
			}
			var got []string
			for _, e := range validatePodSpec(&spec, nil, field.NewPath("spec")) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
		})
	}
}
