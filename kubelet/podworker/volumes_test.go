package podworker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/runtime"
)

func TestDownwardAPIVolume(t *testing.T) {
	pod := testPod()
	pod.Labels = map[string]string{"b": "2", "a": `say "hi"`}
	src := &corev1.DownwardAPIVolumeSource{
		DefaultMode: ptr(int32(0o600)),
		Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "meta/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr(int32(0o644))},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		},
	}
	files, err := downwardAPIFiles(pod, src, testNode)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]volumeFile{
		"labels":    {content: "a=\"say \\\"hi\\\"\"\nb=\"2\"", mode: 0o600},
		"meta/name": {content: "job-a-x2k4d", mode: 0o644},
		"mem":       {content: "64", mode: 0o600},
	}
	if diff := cmp.Diff(want, files, cmp.AllowUnexported(volumeFile{})); diff != "" {
		t.Fatalf("files (-want,+got):\n%s", diff)
	}

	dir := t.TempDir()
	if err := writeAtomic(dir, files, -1); err != nil {
		t.Fatal(err)
	}
	for path, f := range want {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != f.content {
			t.Errorf("%s = %q, want %q", path, b, f.content)
		}
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.mode {
			t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), f.mode)
		}
	}
	link, err := os.Readlink(filepath.Join(dir, "meta"))
	if err != nil || link != "..data/meta" {
		t.Errorf("meta links to %q (%v), want ..data/meta", link, err)
	}
	data, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(data, "..20") {
		t.Errorf("..data links to %q (%v), want a timestamped directory", data, err)
	}
}

func TestVolumeMounts(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{vol, outside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	vols := map[string]podVolume{"data": {path: vol}, "api": {path: "/api", readOnly: true}}
	lookup := envLookup([]string{"POD=p1", "EMPTY=", "ABS=/etc", "UP=.."})
	tests := map[string]struct {
		mounts  []corev1.VolumeMount
		want    []runtime.Mount
		wantErr string
	}{
		"plain and read-only": {
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/ro", ReadOnly: true}, {Name: "api", MountPath: "/etc/api"}},
			want: []runtime.Mount{
				{Source: vol, Destination: "/data", Type: "bind"},
				{Source: vol, Destination: "/ro", Type: "bind", Options: []string{"ro"}},
				{Source: "/api", Destination: "/etc/api", Type: "bind", Options: []string{"ro"}},
			},
		},
		"subPath created": {
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "a/b"}},
			want:   []runtime.Mount{{Source: filepath.Join(vol, "a/b"), Destination: "/d", Type: "bind"}},
		},
		"subPathExpr": {
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "logs/$(POD)"}},
			want:   []runtime.Mount{{Source: filepath.Join(vol, "logs/p1"), Destination: "/d", Type: "bind"}},
		},
		"missing volume": {
			mounts:  []corev1.VolumeMount{{Name: "nope", MountPath: "/d"}},
			wantErr: `cannot find volume "nope" to mount into container "c"`,
		},
		"dot-dot": {
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "../x"}},
			wantErr: "unable to provision SubPath `../x`: must not contain '..'",
		},
		"subPathExpr of undefined and empty variables": {
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(NOPE)/$(EMPTY)/$(POD)/$(NOPE)"}},
			wantErr: "missing value for EMPTY, NOPE",
		},
		"subPathExpr made absolute": {
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$(ABS)/$(POD)"}},
			wantErr: "error SubPath `/etc/p1` must not be an absolute path",
		},
		"subPathExpr climbing out": {
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "a/$(UP)/$(UP)/x"}},
			wantErr: "unable to provision SubPath `a/../../x`: must not contain '..'",
		},
		"subPathExpr with an escaped dollar": {
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPathExpr: "$$(NOPE)"}},
			want:   []runtime.Mount{{Source: filepath.Join(vol, "$(NOPE)"), Destination: "/d", Type: "bind"}},
		},
		"symlink out of the volume": {
			// NOTE: as the kubelet's, the message leaves the host's paths out.
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "escape/x"}},
			wantErr: `failed to create subPath directory for volumeMount "data" of container "c"`,
		},
		"existing symlink out of the volume": {
			mounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "escape"}},
			wantErr: `failed to prepare subPath for volumeMount "data" of container "c"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := volumeMounts(&corev1.Container{Name: "c", VolumeMounts: tc.mounts}, vols, lookup)
			if errString(err) != tc.wantErr {
				t.Fatalf("error %q, want %q", errString(err), tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(vol, "a/b")); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("subPath dir: %v %v, want mode 0777 like the volume", fi, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("a directory was created outside the volume")
	}
}

func TestEmptyDirMemorySize(t *testing.T) {
	q := resource.MustParse
	podWith := func(limits ...string) *corev1.Pod {
		pod := &corev1.Pod{}
		for _, l := range limits {
			c := corev1.Container{}
			if l != "" {
				c.Resources.Limits = rl("memory", l)
			}
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
		return pod
	}
	tests := map[string]struct {
		sizeLimit *resource.Quantity
		pod       *corev1.Pod
		want      string
	}{
		"allocatable":                   {pod: podWith(""), want: "1Gi"},
		"pod limit":                     {pod: podWith("100Mi", "28Mi"), want: "128Mi"},
		"a container without limit":     {pod: podWith("100Mi", ""), want: "1Gi"},
		"sizeLimit below":               {sizeLimit: ptr(q("64Mi")), pod: podWith("100Mi"), want: "64Mi"},
		"sizeLimit above the pod limit": {sizeLimit: ptr(q("200Mi")), pod: podWith("100Mi"), want: "100Mi"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := emptyDirMemorySize(q("1Gi"), tc.sizeLimit, tc.pod)
			if want := q(tc.want); got.Cmp(want) != 0 {
				t.Errorf("got %s, want %s", got.String(), want.String())
			}
		})
	}
}

func TestSetUpEmptyDirOnDisk(t *testing.T) {
	root := t.TempDir()
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	vols, err := setUpVolumes(pod, root, testNode, fakeSources{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "1234/volumes/kubernetes.io~empty-dir/scratch")
	if diff := cmp.Diff(map[string]podVolume{"scratch": {path: dir}}, vols, cmp.AllowUnexported(podVolume{})); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir %v %v, want mode 0777", fi, err)
	}
	if err := tearDownVolumes(root, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "1234")); !os.IsNotExist(err) {
		t.Errorf("pod directory left behind: %v", err)
	}
}

func TestSetUpVolumeErrors(t *testing.T) {
	tests := map[string]struct {
		vol  corev1.VolumeSource
		want string
	}{
		"configMap":          {vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}, want: `MountVolume.SetUp failed for volume "v" : configmap "cm" not found`},
		"hostPath not a dir": {vol: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/null", Type: ptr(corev1.HostPathDirectory)}}, want: `MountVolume.SetUp failed for volume "v" : hostPath type check failed: /dev/null is not a directory`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tc.vol}}
			_, err := setUpVolumes(pod, t.TempDir(), testNode, fakeSources{})
			if got := errString(err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVolumesAttemptFresh(t *testing.T) {
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	a := &volumesAttempt{started: at}
	for _, tc := range []struct {
		a    *volumesAttempt
		now  time.Time
		want bool
	}{
		{a, at, true},
		{a, at.Add(attemptFreshFor - time.Millisecond), true},
		{a, at.Add(attemptFreshFor), false}, // the admission waited: made again
		{nil, at, false},
	} {
		if got := tc.a.fresh(tc.now); got != tc.want {
			t.Errorf("fresh(%v) of an attempt started at %v = %v, want %v", tc.now, at, got, tc.want)
		}
	}
}
