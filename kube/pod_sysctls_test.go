package kube

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateSysctls(t *testing.T) {
	const nameMsg = `must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`
	spec := func(hostNetwork bool, names ...string) *corev1.PodSpec {
		s := &corev1.PodSpec{HostNetwork: hostNetwork, SecurityContext: &corev1.PodSecurityContext{}}
		for _, n := range names {
			s.SecurityContext.Sysctls = append(s.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return s
	}
	tests := map[string]struct {
		spec, old *corev1.PodSpec
		want      []string
	}{
		// The e2e spec's four: unsafe or unknown names are the kubelet's
		// question, not validation's.
		"e2e names": {spec: spec(false, "foo-", "kernel.shmmax", "safe-and-unsafe", "bar.."), want: []string{
			`s[0].name: Invalid value: "foo-": ` + nameMsg,
			`s[3].name: Invalid value: "bar..": ` + nameMsg,
		}},
		"slashes":   {spec: spec(false, "kernel/shm_rmid_forced", "net.ipv4.ip_local_port_range")},
		"empty":     {spec: spec(false, ""), want: []string{"s[0].name: Required value"}},
		"duplicate": {spec: spec(false, "kernel.msgmax", "kernel.msgmax"), want: []string{`s[1].name: Duplicate value: "kernel.msgmax"`}},
		"too long":  {spec: spec(false, strings.Repeat("a", 254)), want: []string{`s[0].name: Invalid value: "` + strings.Repeat("a", 254) + `": ` + nameMsg}},
		"host network": {spec: spec(true, "net.core.somaxconn", "kernel.shm_rmid_forced"), want: []string{
			`s[0].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true`}},
		"host IPC": {spec: func() *corev1.PodSpec { s := spec(false, "kernel.shmmax"); s.HostIPC = true; return s }(), want: []string{
			`s[0].name: Invalid value: "kernel.shmmax": may not be specified when 'hostIPC' is true`}},
		"host network kept on update": {spec: spec(true, "net.core.somaxconn"), old: spec(true, "net.core.somaxconn")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range validateSysctls(tc.spec, tc.old, field.NewPath("s")) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
