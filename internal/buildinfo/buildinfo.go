// Package buildinfo says which skiff this binary is: the version, git
// commit and build date the Makefile writes in with -ldflags -X, and the
// Kubernetes version skiff serves. Both skiffd and the skiff CLI report it.
package buildinfo

import (
	"fmt"
	goruntime "runtime"
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// Set at link time by the Makefile (LDFLAGS); the defaults describe a plain
// `go build`.
var (
	// gitVersion is skiff's own version: `git describe --tags --always --dirty`.
	gitVersion = "dev"
	// gitCommit is the full commit hash the binary was built from.
	gitCommit = ""
	// gitTreeState is "clean" or "dirty" (uncommitted changes were built).
	gitTreeState = ""
	// buildDate is the build time in UTC, RFC 3339 ("2006-01-02T15:04:05Z"),
	// as Kubernetes' buildDate.
	buildDate = ""
)

// Kubernetes release whose API skiff serves.
const (
	kubeMajor   = "1"
	kubeMinor   = "34"
	kubeVersion = "v1.34.0"
	// minCompatibilityMinor is the oldest minor release whose behaviour this
	// one keeps, as kube-apiserver 1.34 reports (n-1).
	minCompatibilityMinor = "33"
)

// Version is skiff's own version ("dev" when not built by the Makefile).
func Version() string { return gitVersion }

// Info is what /version serves, shaped as kube-apiserver's answer. Its
// GitVersion is the Kubernetes version with skiff's in the build metadata,
// as k3s does ("v1.34.0+skiff.v0.3.0-2-gabc1234"), so that clients
// comparing versions see the Kubernetes release and people see skiff's.
func Info() version.Info {
	return version.Info{
		Major:                 kubeMajor,
		Minor:                 kubeMinor,
		EmulationMajor:        kubeMajor,
		EmulationMinor:        kubeMinor,
		MinCompatibilityMajor: kubeMajor,
		MinCompatibilityMinor: minCompatibilityMinor,
		GitVersion:            kubeVersion + "+skiff." + semverMetadata(gitVersion),
		GitCommit:             gitCommit,
		GitTreeState:          gitTreeState,
		BuildDate:             buildDate,
		GoVersion:             goruntime.Version(),
		Compiler:              goruntime.Compiler,
		Platform:              goruntime.GOOS + "/" + goruntime.GOARCH,
	}
}

// String describes the binary named program in a few lines, for --version.
func String(program string) string {
	info := Info()
	commit := orUnknown(info.GitCommit)
	if info.GitTreeState != "" {
		commit += " (" + info.GitTreeState + ")"
	}
	return fmt.Sprintf("%s %s\n  kubernetes:  %s\n  git commit:  %s\n  built:       %s\n  go:          %s %s\n",
		program, Version(), info.GitVersion, commit, orUnknown(info.BuildDate), info.GoVersion, info.Platform)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// semverMetadata makes s a valid semver build-metadata string: dot-separated
// identifiers of [0-9A-Za-z-], anything else becoming "-".
func semverMetadata(s string) string {
	ids := strings.Split(s, ".")
	for i, id := range ids {
		id = strings.Map(func(r rune) rune {
			switch {
			case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
				return r
			}
			return '-'
		}, id)
		if id == "" {
			id = "0"
		}
		ids[i] = id
	}
	return strings.Join(ids, ".")
}
