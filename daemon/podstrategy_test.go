//go:build integration

package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJobPodAndBarePodAlike: a Job's pod and a bare pod made from the same
// template come out of skiffd with the same defaulted spec and QoS class,
// because the Job controller creates its pods through the API's pod create
// strategy (defaults, enableServiceLinks, node binding, validation,
// admission). An ephemeral-storage request beside the cpu and memory ones
// must not sway the class.
func TestJobPodAndBarePodAlike(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	for name, tc := range map[string]struct {
		limits  corev1.ResourceList
		wantQOS corev1.PodQOSClass
	}{
		"guaranteed": {limits: rl("cpu", "10m", "memory", "16Mi"), wantQOS: corev1.PodQOSGuaranteed},
		"burstable":  {limits: rl("memory", "32Mi"), wantQOS: corev1.PodQOSBurstable},
	} {
		t.Run(name, func(t *testing.T) {
			tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox:1.35", Command: []string{"true"},
					Resources: corev1.ResourceRequirements{
						Requests: rl("cpu", "10m", "memory", "16Mi", "ephemeral-storage", "1Mi"),
						Limits:   tc.limits,
					},
				}},
			}}
			job, err := s.client.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "alike-" + name},
				Spec:       batchv1.JobSpec{Template: *tmpl.DeepCopy()},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			bare, err := s.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "bare-" + name}, Spec: *tmpl.Spec.DeepCopy(),
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var jobPod corev1.Pod
			waitFor(t, time.Minute, "the Job's pod", func() (bool, error) {
				pods := jobPods(t, s.client, job)
				if len(pods) == 1 {
					jobPod = pods[0]
				}
				return len(pods) == 1, nil
			})
			// NOTE: the token volume's name ends in 5 random characters,
			// chosen for each pod as kube-apiserver does.
			if diff := cmp.Diff(sameTokenVolumeName(t, bare.Spec), sameTokenVolumeName(t, jobPod.Spec)); diff != "" {
				t.Errorf("the Job's pod spec differs from the bare pod's (-bare,+job):\n%s", diff)
			}
			if bare.Status.QOSClass != tc.wantQOS || jobPod.Status.QOSClass != tc.wantQOS {
				t.Errorf("qosClass: bare pod %q, Job's pod %q; want %q", bare.Status.QOSClass, jobPod.Status.QOSClass, tc.wantQOS)
			}
		})
	}
}

// sameTokenVolumeName is spec with its kube-api-access volume (which it
// must have) named kube-api-access-xxxxx, in its mounts too.
func sameTokenVolumeName(t *testing.T, spec corev1.PodSpec) corev1.PodSpec {
	t.Helper()
	spec = *spec.DeepCopy()
	name := ""
	for i, v := range spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			name = v.Name
			spec.Volumes[i].Name = "kube-api-access-xxxxx"
		}
	}
	if name == "" {
		t.Fatalf("no kube-api-access volume in %+v", spec.Volumes)
	}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for j := range list[i].VolumeMounts {
				if list[i].VolumeMounts[j].Name == name {
					list[i].VolumeMounts[j].Name = "kube-api-access-xxxxx"
				}
			}
		}
	}
	return spec
}
