package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			for _, e := range validatePodSpec(&spec, field.NewPath("spec")) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPodCreateRefusesBacksteps is the case: a pod whose hostPath
// or subPath climbs out with '..' is refused with kube's 422.
func TestPodCreateRefusesBacksteps(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", podsPath, `{"metadata":{"name":"p"},"spec":{"restartPolicy":"Never",
		"volumes":[{"name":"h","hostPath":{"path":"../../etc"}},{"name":"e","emptyDir":{}}],
		"containers":[{"name":"c","image":"busybox:1.35","volumeMounts":[{"name":"e","mountPath":"/e","subPath":"../../../../etc"}]}]}}`)
	if r.code != 422 {
		t.Fatalf("code %d, want 422: %s", r.code, r.body)
	}
	want := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  `Pod "p" is invalid: [spec.volumes[0].hostPath.path: Invalid value: "../../etc": must not contain '..', spec.containers[0].volumeMounts.subPath: Invalid value: "../../../../etc": must not contain '..']`,
		Reason:   metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Name: "p", Kind: "Pod", Causes: []metav1.StatusCause{
			{Type: "FieldValueInvalid", Field: "spec.volumes[0].hostPath.path", Message: `Invalid value: "../../etc": must not contain '..'`},
			{Type: "FieldValueInvalid", Field: "spec.containers[0].volumeMounts.subPath", Message: `Invalid value: "../../../../etc": must not contain '..'`},
		}},
		Code: 422,
	}
	if diff := cmp.Diff(want, statusOf(t, r.body)); diff != "" {
		t.Errorf("Status (-want,+got):\n%s", diff)
	}
}

func TestPodStatusValidation(t *testing.T) {
	const merge = "Content-Type: application/merge-patch+json"
	tests := map[string]struct {
		restartPolicy string
		first, second string // status patches: the first must pass
		want          []metav1.StatusCause
	}{
		"a Never pod's terminated container may not run again": {
			restartPolicy: "Never",
			first:         `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0}}}]}}`,
			second:        `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":true,"restartCount":0,"state":{"running":{}}}]}}`,
			want:          []metav1.StatusCause{{Type: "FieldValueForbidden", Field: "status.containerStatuses[0].state", Message: "Forbidden: may not be transitioned to non-terminated state"}},
		},
		"an OnFailure pod's failed container may": {
			restartPolicy: "OnFailure",
			first:         `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":1}}}]}}`,
			second:        `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":true,"restartCount":1,"state":{"running":{}}}]}}`,
		},
		"bad condition type, negative generation, bad IPs": {
			restartPolicy: "Never",
			first:         `{"status":{"podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"}]}}`,
			second:        `{"status":{"observedGeneration":-1,"conditions":[{"type":"not a type","status":"True"}],"podIPs":[{"ip":"10.0.0.2"},{"ip":"nope"}]}}`,
			want: []metav1.StatusCause{
				{Type: "FieldValueInvalid", Field: "status.conditions[0].Type", Message: `Invalid value: "not a type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
				{Type: "FieldValueInvalid", Field: "status.observedGeneration", Message: "Invalid value: -1: must be a non-negative integer"},
				{Type: "FieldValueInvalid", Field: "status.podIPs[1]", Message: `Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
				{Type: "FieldValueInvalid", Field: "status.podIPs", Message: `Invalid value: [{"IP":"10.0.0.2"},{"IP":"nope"}]: may specify no more than one IP for each IP family`},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.mustDo(t, "POST", podsPath, `{"metadata":{"name":"p"},"spec":{"restartPolicy":"`+tc.restartPolicy+`","containers":[{"name":"c","image":"busybox:1.35"}]}}`)
			if r := ts.do(t, "PATCH", podsPath+"/p/status", tc.first, merge); r.code != 200 {
				t.Fatalf("first patch: %d %s", r.code, r.body)
			}
			r := ts.do(t, "PATCH", podsPath+"/p/status", tc.second, merge)
			if tc.want == nil {
				if r.code != 200 {
					t.Fatalf("second patch: %d %s", r.code, r.body)
				}
				return
			}
			if r.code != 422 {
				t.Fatalf("code %d, want 422: %s", r.code, r.body)
			}
			if diff := cmp.Diff(tc.want, statusOf(t, r.body).Details.Causes); diff != "" {
				t.Errorf("causes (-want,+got):\n%s", diff)
			}
		})
	}
}
