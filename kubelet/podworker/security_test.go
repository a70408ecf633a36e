package podworker

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime"
)

func TestSecurityContextMerge(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000)), RunAsNonRoot: ptr(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
	}}}
	tests := map[string]struct {
		container *corev1.SecurityContext
		want      *corev1.SecurityContext
	}{
		"pod only": {
			want: &corev1.SecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000)), RunAsNonRoot: ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
		},
		"container wins": {
			container: &corev1.SecurityContext{RunAsUser: ptr(int64(7)), RunAsNonRoot: ptr(false), ReadOnlyRootFilesystem: ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			want: &corev1.SecurityContext{RunAsUser: ptr(int64(7)), RunAsGroup: ptr(int64(2000)), RunAsNonRoot: ptr(false), ReadOnlyRootFilesystem: ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := securityContext(pod, &corev1.Container{SecurityContext: tc.container})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	c := &corev1.Container{Name: "c"}
	tests := map[string]struct {
		sc        corev1.SecurityContext
		imageUser string
		want      string
	}{
		"not asked":              {sc: corev1.SecurityContext{}, imageUser: ""},
		"image runs as root":     {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true)}, imageUser: "", want: `container has runAsNonRoot and image will run as root (pod: "p_ns(u1)", container: c)`},
		"image uid 0":            {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true)}, imageUser: "0:0", want: `container has runAsNonRoot and image will run as root (pod: "p_ns(u1)", container: c)`},
		"image numeric non-root": {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true)}, imageUser: "1000"},
		"image named user":       {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true)}, imageUser: "nobody", want: `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "p_ns(u1)", container: c)`},
		"runAsUser decides":      {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(5))}, imageUser: ""},
		"runAsUser 0":            {sc: corev1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(0))}, imageUser: "1000", want: `container's runAsUser breaks non-root policy (pod: "p_ns(u1)", container: c)`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := verifyRunAsNonRoot(pod, c, &tc.sc, tc.imageUser)
			if got := errString(err); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			var ce *configError
			if err != nil && !errors.As(err, &ce) {
				t.Errorf("%v is not a configError (CreateContainerConfigError)", err)
			}
		})
	}
}

func TestApplySecurity(t *testing.T) {
	tests := map[string]struct {
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		imageUser string
		// seccompDefault is the node's (the kubelet's seccompDefault).
		seccompDefault bool
		want           runtime.ContainerConfig
		wantErr        bool
	}{
		"defaults": {want: runtime.ContainerConfig{Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined}}},
		"defaults on a node with seccompDefault": {
			seccompDefault: true,
			want:           runtime.ContainerConfig{Seccomp: runtime.Seccomp{Type: runtime.SeccompRuntimeDefault}},
		},
		"an explicit profile on a node with seccompDefault": {
			seccompDefault: true,
			container:      &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			want:           runtime.ContainerConfig{Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined}},
		},
		"identity and groups": {
			pod:  &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), SupplementalGroups: []int64{4000}, FSGroup: ptr(int64(2000))},
			want: runtime.ContainerConfig{User: &runtime.User{UID: 1000, GID: ptr(uint32(3000)), Groups: []uint32{4000, 2000}}, Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined}},
		},
		"fsGroup over the image's numeric user": {
			pod: &corev1.PodSecurityContext{FSGroup: ptr(int64(2000))}, imageUser: "1000:1001",
			want: runtime.ContainerConfig{User: &runtime.User{UID: 1000, GID: ptr(uint32(1001)), Groups: []uint32{2000}}, Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined}},
		},
		"runAsGroup over a named image user": {
			pod: &corev1.PodSecurityContext{RunAsGroup: ptr(int64(5))}, imageUser: "nobody", wantErr: true,
		},
		"container settings": {
			container: &corev1.SecurityContext{
				Privileged: ptr(true), ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
				Capabilities:   &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
				ProcMount:      ptr(corev1.UnmaskedProcMount),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/a.json")},
			},
			pod: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}},
			want: runtime.ContainerConfig{
				Privileged: true, ReadOnlyRootfs: true, NoNewPrivileges: true,
				CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, UnmaskedProc: true,
				Seccomp: runtime.Seccomp{Type: runtime.SeccompLocalhost, LocalhostPath: "/seccomp/profiles/a.json"},
				Sysctls: map[string]string{"net.ipv4.tcp_syncookies": "1"},
			},
		},
		"localhost profile escaping": {
			container: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("../etc/x")}},
			wantErr:   true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.pod}}
			var got runtime.ContainerConfig
			err := applySecurity(&got, pod, &corev1.Container{SecurityContext: tc.container}, runtime.ImageInfo{User: tc.imageUser}, seccompConfig{root: "/seccomp", runtimeDefault: tc.seccompDefault})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestForbiddenSysctl(t *testing.T) {
	tests := map[string]struct {
		sysctls []corev1.Sysctl
		hostNet bool
		hostIPC bool
		want    string
	}{
		"none":                      {},
		"safe in own namespace":     {sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies"}, {Name: "kernel.shm_rmid_forced"}}},
		"slashes":                   {sysctls: []corev1.Sysctl{{Name: "net/ipv4/ip_local_port_range"}}},
		"unsafe":                    {sysctls: []corev1.Sysctl{{Name: "kernel.msgmax"}}, want: `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		"net with the host network": {sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies"}}, hostNet: true, want: `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		"ipc with the host ipc":     {sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced"}}, hostIPC: true, want: `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{HostIPC: tc.hostIPC, SecurityContext: &corev1.PodSecurityContext{Sysctls: tc.sysctls}}}
			if got := forbiddenSysctl(pod, tc.hostNet); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
