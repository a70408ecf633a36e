//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSeccompDefault checks the seccomp mode the kernel reports inside
// containers (/proc/self/status, 0 = none, 2 = filter): a container naming
// no profile runs Unconfined, as under a kubelet left at its default
// (Kubernetes' e2e "should support seccomp default which is unconfined"),
// and RuntimeDefault on a skiffd started with --seccomp-default, where an
// explicit Unconfined still wins.
func TestSeccompDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[*corev1.SeccompProfile]string
	}{
		{name: "kubelet default", want: map[*corev1.SeccompProfile]string{
			nil: "0\n",
			{Type: corev1.SeccompProfileTypeRuntimeDefault}: "2\n",
		}},
		{name: "seccomp-default", flags: []string{"--seccomp-default"}, want: map[*corev1.SeccompProfile]string{
			nil: "2\n",
			{Type: corev1.SeccompProfileTypeUnconfined}: "0\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSkiffd(t)
			s.extra = append(s.extra, tc.flags...)
			s.start()
			ctx := context.Background()
			names := map[string]string{}
			i := 0
			for profile, want := range tc.want {
				i++
				p := shPod("seccomp-"+string(rune('a'+i)), corev1.RestartPolicyNever, `sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status`)
				if profile != nil {
					p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: profile}
				}
				if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				names[p.Name] = want
			}
			for name, want := range names {
				waitPod(t, s.client, name, 2*time.Minute, "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
				if got := readLog(t, s, name, &corev1.PodLogOptions{}); got != want {
					t.Errorf("pod %s: Seccomp %q, want %q", name, got, want)
				}
			}
		})
	}
}
