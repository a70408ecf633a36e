package buildinfo

import (
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// TestGitVersionIsSemver: clients parse the server's gitVersion (kubectl's
// version skew warning uses ParseSemantic); whatever git describe says must
// keep it valid and keep the Kubernetes release in front.
func TestGitVersionIsSemver(t *testing.T) {
	defer func(v string) { gitVersion = v }(gitVersion)
	for _, describe := range []string{"dev", "a54fae6", "a54fae6-dirty", "v0.3.0", "v0.3.0-12-gabcdef0-dirty", "feature/x..y", ""} {
		gitVersion = describe
		got := Info().GitVersion
		v, err := utilversion.ParseSemantic(got)
		if err != nil {
			t.Errorf("git describe %q: gitVersion %q: %v", describe, got, err)
			continue
		}
		if v.Major() != 1 || v.Minor() != 34 || v.PreRelease() != "" || !strings.HasPrefix(v.BuildMetadata(), "skiff.") {
			t.Errorf("git describe %q: gitVersion %q parses as %v", describe, got, v)
		}
	}
}

func TestString(t *testing.T) {
	defer func(v, c, s, d string) { gitVersion, gitCommit, gitTreeState, buildDate = v, c, s, d }(gitVersion, gitCommit, gitTreeState, buildDate)
	gitVersion, gitCommit, gitTreeState, buildDate = "v0.3.0", "0123abcd", "clean", "2025-03-01T12:00:00Z"
	got := String("skiffd")
	for _, want := range []string{"skiffd v0.3.0\n", "kubernetes:  v1.34.0+skiff.v0.3.0\n", "git commit:  0123abcd (clean)\n", "built:       2025-03-01T12:00:00Z\n", "go:          go"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	gitCommit, gitTreeState, buildDate = "", "", ""
	if got := String("skiffd"); !strings.Contains(got, "git commit:  unknown\n") || !strings.Contains(got, "built:       unknown\n") {
		t.Errorf("plain go build: %q", got)
	}
}
