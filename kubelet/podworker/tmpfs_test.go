package podworker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountsUnder(t *testing.T) {
	// /proc/self/mountinfo lines: field 5 is the mount point.
	const mountinfo = `22 1 0:21 / / rw,relatime - overlay overlay rw
30 22 0:30 / /var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/creds rw,nosuid,nodev - tmpfs tmpfs rw,size=1024k
31 22 0:31 / /var/lib/skiff/volumes/u1/volumes/kubernetes.io~empty-dir/cache rw - tmpfs tmpfs rw
32 31 0:32 / /var/lib/skiff/volumes/u1/volumes/kubernetes.io~empty-dir/cache/deeper rw - tmpfs tmpfs rw
33 22 0:33 / /var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/with\040space rw - tmpfs tmpfs rw
34 22 0:34 / /var/lib/skiff/volumes/u10/volumes/kubernetes.io~secret/other rw - tmpfs tmpfs rw
35 30 0:35 / /var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/creds rw - tmpfs tmpfs rw
short line
`
	got, err := parseMountsUnder(strings.NewReader(mountinfo), "/var/lib/skiff/volumes/u1/")
	if err != nil {
		t.Fatal(err)
	}
	// Deepest first; the pod u10 is not below u1; a path mounted twice is
	// listed twice (one unmount per layer); escapes are undone.
	want := []string{
		"/var/lib/skiff/volumes/u1/volumes/kubernetes.io~empty-dir/cache/deeper",
		"/var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/creds",
		"/var/lib/skiff/volumes/u1/volumes/kubernetes.io~empty-dir/cache",
		"/var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/with space",
		"/var/lib/skiff/volumes/u1/volumes/kubernetes.io~secret/creds",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want,+got):\n%s", diff)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	tests := map[string]string{
		`/plain`:            "/plain",
		`/a\040b`:           "/a b",
		`/tab\011and\134bs`: "/tab\tand\\bs",
		`/trailing\04`:      `/trailing\04`, // too short to be an escape
		`/not\999octal`:     `/not\999octal`,
	}
	for in, want := range tests {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
