package podworker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeSources holds ConfigMaps and Secrets by "namespace/name".
type fakeSources map[string]any

func (f fakeSources) configMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f[ns+"/"+name].(*corev1.ConfigMap); ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
}

func (f fakeSources) secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f[ns+"/"+name].(*corev1.Secret); ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
}

// token is a made-up token naming the pod, its account and its audience.
func (f fakeSources) token(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) (string, error) {
	return "token:" + pod.Spec.ServiceAccountName + ":" + pod.Name + ":" + source.Audience, nil
}

func (f fakeSources) services(ns string, links bool) ([]*corev1.Service, error) {
	var out []*corev1.Service
	for _, obj := range f {
		if svc, ok := obj.(*corev1.Service); ok && (svc.Namespace == ns && links || svc.Namespace == "default" && svc.Name == "kubernetes") {
			out = append(out, svc)
		}
	}
	return out, nil
}

func testSources() fakeSources {
	return fakeSources{
		"team/app": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"},
			Data: map[string]string{"mode": "fast", "1bad-name": "x"}, BinaryData: map[string][]byte{"blob": {0, 1, 2}}},
		"team/creds": &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "team"},
			Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("hunter2")}},
	}
}

func cmRef(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

func TestResolveEnvFromSources(t *testing.T) {
	pod := testPod()
	c := &pod.Spec.Containers[0]
	c.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("app")}},
		{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("creds")}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("absent"), Optional: ptr(true)}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("app"), Key: "mode"}}},
		{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("creds"), Key: "pass"}}},
		{Name: "URL", Value: "$(DB_user)@$(MODE)"},
		{Name: "mode", Value: "overridden"},
		{Name: "NOKEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("app"), Key: "nope", Optional: ptr(true)}}},
		{Name: "NOSECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("gone"), Key: "k", Optional: ptr(true)}}},
	}
	got, err := resolveEnv(pod, c, testNode, testSources())
	if err != nil {
		t.Fatal(err)
	}
	// Keys that are not C identifiers stay (1.34's relaxed names); a later
	// definition replaces an earlier one in place.
	want := []string{"1bad-name=x", "mode=overridden", "DB_pass=hunter2", "DB_user=admin", "MODE=fast", "PASS=hunter2", "URL=admin@fast"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want,+got):\n%s", diff)
	}
}

func TestResolveEnvSourceErrors(t *testing.T) {
	tests := map[string]struct {
		from corev1.EnvFromSource
		env  corev1.EnvVar
		want string
	}{
		"missing configmap": {env: corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("x"), Key: "k"}}},
			want: `configmap "x" not found`},
		"missing secret": {env: corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("x"), Key: "k"}}},
			want: `secret "x" not found`},
		"missing key": {env: corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("app"), Key: "k"}}},
			want: `couldn't find key k in ConfigMap team/app`},
		"missing secret key": {env: corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("creds"), Key: "k"}}},
			want: `couldn't find key k in Secret team/creds`},
		"missing envFrom": {from: corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("x")}},
			want: `secret "x" not found`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			c := &pod.Spec.Containers[0]
			if tc.env.Name != "" {
				c.Env = []corev1.EnvVar{tc.env}
			} else {
				c.EnvFrom = []corev1.EnvFromSource{tc.from}
			}
			_, err := resolveEnv(pod, c, testNode, testSources())
			var ce *configError
			if !errors.As(err, &ce) || err.Error() != tc.want {
				t.Errorf("got %v, want the configError %q", err, tc.want)
			}
		})
	}
}

func TestSourceVolumeFiles(t *testing.T) {
	tests := map[string]struct {
		vol     corev1.VolumeSource
		want    map[string]volumeFile
		wantErr string
	}{
		"configMap, all keys": {vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}},
			want: map[string]volumeFile{"mode": {"fast", 0o644}, "1bad-name": {"x", 0o644}, "blob": {"\x00\x01\x02", 0o644}}},
		"configMap items": {vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"), DefaultMode: ptr(int32(0o400)),
			Items: []corev1.KeyToPath{{Key: "mode", Path: "conf/mode"}, {Key: "blob", Path: "b", Mode: ptr(int32(0o600))}}}},
			want: map[string]volumeFile{"conf/mode": {"fast", 0o400}, "b": {"\x00\x01\x02", 0o600}}},
		"configMap missing key": {vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app"),
			Items: []corev1.KeyToPath{{Key: "nope", Path: "x"}}}}, wantErr: "configmap references non-existent config key: nope"},
		"optional configMap missing": {vol: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("x"), Optional: ptr(true)}},
			want: map[string]volumeFile{}},
		"secret": {vol: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "pass", Path: "p"}}}},
			want: map[string]volumeFile{"p": {"hunter2", 0o644}}},
		"secret missing": {vol: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}, wantErr: `secret "x" not found`},
		"projected": {vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr(int32(0o440)), Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("app"), Items: []corev1.KeyToPath{{Key: "mode", Path: "mode"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("creds"), Items: []corev1.KeyToPath{{Key: "user", Path: "user", Mode: ptr(int32(0o400))}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}, want: map[string]volumeFile{"mode": {"fast", 0o440}, "user": {"admin", 0o400}, "name": {"job-a-x2k4d", 0o440}}},
		"projected errors together": {vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("x")}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("y")}},
		}}}, wantErr: `[configmap "x" not found, secret "y" not found]`},
		"projected token": {vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr(int32(0o420)), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr(int64(3600))}},
		}}}, want: map[string]volumeFile{"token": {"token:runner:job-a-x2k4d:vault", 0o420}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			v := &corev1.Volume{Name: "v", VolumeSource: tc.vol}
			got, err := sourceVolumeFiles(pod, v, testNode, testSources())
			if errString(err) != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(volumeFile{})); err == nil && diff != "" {
				t.Errorf("files (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWritePayloadSwapsVersions(t *testing.T) {
	dir := t.TempDir()
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	changed, err := writePayload(dir, map[string]volumeFile{"a": {"1", 0o644}, "sub/b": {"2", 0o600}}, -1)
	if err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	first, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if link, _ := os.Readlink(filepath.Join(dir, "sub")); link != "..data/sub" || read("sub/b") != "2" || read("a") != "1" {
		t.Fatalf("after the first write: sub -> %q, a=%q, sub/b=%q", link, read("a"), read("sub/b"))
	}

	// The same payload again publishes nothing.
	if changed, err := writePayload(dir, map[string]volumeFile{"a": {"1", 0o644}, "sub/b": {"2", 0o600}}, -1); err != nil || changed {
		t.Fatalf("same payload: %v %v", changed, err)
	}
	// A mode change alone is a change.
	if changed, _ := writePayload(dir, map[string]volumeFile{"a": {"1", 0o600}, "sub/b": {"2", 0o600}}, -1); !changed {
		t.Fatal("a new mode was not written")
	}

	// A new payload swaps ..data, drops the links of removed paths and the
	// old version.
	if _, err := writePayload(dir, map[string]volumeFile{"a": {"3", 0o644}, "c": {"4", 0o644}}, -1); err != nil {
		t.Fatal(err)
	}
	if read("a") != "3" || read("c") != "4" {
		t.Errorf("after the update: a=%q c=%q", read("a"), read("c"))
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("the link of a removed path stays: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	cur, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if want := []string{cur, "..data", "a", "c"}; !cmp.Equal(want, names) || cur == first {
		t.Errorf("directory holds %v, want %v", names, want)
	}

	for _, bad := range []string{"../x", "/abs", "..hidden"} {
		if _, err := writePayload(dir, map[string]volumeFile{bad: {"x", 0o644}}, -1); err == nil || !strings.Contains(err.Error(), "invalid path") {
			t.Errorf("path %q: %v, want refused", bad, err)
		}
	}
}

func TestSourcesWakeTheirNamespace(t *testing.T) {
	s := newSources(nil, nil)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	team, other := s.changed("team"), s.changed("other")
	if s.changed("team") != team {
		t.Error("two waiters of one namespace got different channels")
	}
	s.notify("team")
	if !closed(team) || closed(other) {
		t.Errorf("a change in team: team woken %v, other woken %v", closed(team), closed(other))
	}
	next := s.changed("team")
	if closed(next) {
		t.Error("the wait taken after a change is already over")
	}
	// A watch that ended may have missed changes anywhere: all are woken.
	s.notify("")
	if !closed(next) || !closed(other) {
		t.Error("notify of every namespace left a waiter asleep")
	}
}

// TestWritePayloadLeftovers: a version an interrupted write left (skiffd
// killed before it swapped ..data) goes with the next published version.
func TestWritePayloadLeftovers(t *testing.T) {
	dir := t.TempDir()
	if _, err := writePayload(dir, map[string]volumeFile{"a": {"1", 0o644}}, -1); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "..2026_01_02_03_04_05.999")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2026_01_02_03_04_05.999", filepath.Join(dir, newDataDirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := writePayload(dir, map[string]volumeFile{"a": {"2", 0o644}}, -1); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	cur, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if want := []string{cur, "..data", "a"}; !cmp.Equal(want, names) {
		t.Errorf("directory holds %v, want %v", names, want)
	}
}

// TestWritePayloadFSGroup: with an fsGroup, files belong to the group and
// the group may read them whatever their mode, as the kubelet leaves them;
// an unchanged payload is still recognised as such.
func TestWritePayloadFSGroup(t *testing.T) {
	dir := t.TempDir()
	gid := os.Getgid()
	files := map[string]volumeFile{"key": {"k", 0o400}, "sub/pub": {"p", 0o644}}
	if _, err := writePayload(dir, files, gid); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{"key": 0o440, "sub/pub": 0o644} {
		info, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
	}
	if files["key"].mode != 0o400 {
		t.Error("the caller's payload was changed")
	}
	if changed, err := writePayload(dir, files, gid); err != nil || changed {
		t.Errorf("same payload with an fsGroup: changed %v, %v", changed, err)
	}
}

// TestSetUpSourceVolumeKeepsPublished: a volume an earlier run published
// is kept when its object is gone (the pod may be running on it); one never
// published waits for the object.
func TestSetUpSourceVolumeKeepsPublished(t *testing.T) {
	root := t.TempDir()
	pod := testPod()
	v := &corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}}}
	if _, err := setUpSourceVolume(pod, v, root, testNode, testSources()); err != nil {
		t.Fatal(err)
	}
	pv, err := setUpSourceVolume(pod, v, root, testNode, fakeSources{})
	if err != nil {
		t.Fatalf("set up again without the ConfigMap: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(pv.path, "mode")); err != nil || string(b) != "fast" {
		t.Errorf("kept file: %q %v", b, err)
	}
	other := &corev1.Volume{Name: "other", VolumeSource: v.VolumeSource}
	if _, err := setUpSourceVolume(pod, other, root, testNode, fakeSources{}); errString(err) != `configmap "app" not found` {
		t.Errorf("a volume never published: %v, want the NotFound", err)
	}
}
