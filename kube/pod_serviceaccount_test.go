package kube

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAdmitServiceAccount(t *testing.T) {
	def := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}}
	noMount := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false)}
	withPull := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "puller"},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "reg"}}}
	newPod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
		}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	tests := map[string]struct {
		pod        *corev1.Pod
		sa         *corev1.ServiceAccount
		wantErr    string
		wantSA     string
		wantMounts int // containers (init included) mounting the token volume
		wantVolume bool
		wantPulls  []corev1.LocalObjectReference
	}{
		"default account": {pod: newPod(nil), sa: def, wantSA: "default", wantMounts: 3, wantVolume: true},
		"missing account": {pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" }),
			wantErr: `pods "p" is forbidden: error looking up service account ns/ghost: serviceaccount "ghost" not found`},
		"deprecated field names it": {pod: newPod(func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "quiet" }), sa: noMount, wantSA: "quiet"},
		"pod opts out":              {pod: newPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) }), sa: def, wantSA: "default"},
		"pod opts in over the account": {pod: newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "quiet"
			p.Spec.AutomountServiceAccountToken = ptr.To(true)
		}), sa: noMount, wantSA: "quiet", wantMounts: 3, wantVolume: true},
		"a mount at the path is kept": {pod: newPod(func(p *corev1.Pod) {
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: ServiceAccountMountPath}}
			}
			p.Spec.InitContainers = nil
		}), sa: def, wantSA: "default"},
		"account's pull secrets": {pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "puller" }), sa: withPull,
			wantSA: "puller", wantMounts: 3, wantVolume: true, wantPulls: []corev1.LocalObjectReference{{Name: "reg"}}},
		"pod's own pull secrets win": {pod: newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "puller"
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "own"}}
		}), sa: withPull, wantSA: "puller", wantMounts: 3, wantVolume: true, wantPulls: []corev1.LocalObjectReference{{Name: "own"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := PodStrategy{ServiceAccounts: true}.Admit(tc.pod, PodRefs{ServiceAccount: tc.sa})
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want 403 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := tc.pod.Spec
			if spec.ServiceAccountName != tc.wantSA || spec.DeprecatedServiceAccount != tc.wantSA {
				t.Errorf("serviceAccountName %q, serviceAccount %q, want %q", spec.ServiceAccountName, spec.DeprecatedServiceAccount, tc.wantSA)
			}
			var vol string
			for _, v := range spec.Volumes {
				if strings.HasPrefix(v.Name, ServiceAccountVolumePrefix) {
					vol = v.Name
					if diff := cmp.Diff(ServiceAccountTokenVolume(), v.Projected); diff != "" {
						t.Errorf("volume (-want,+got):\n%s", diff)
					}
				}
			}
			if (vol != "") != tc.wantVolume || (vol != "" && len(vol) != len(ServiceAccountVolumePrefix)+5) {
				t.Errorf("token volume %q, want one: %v", vol, tc.wantVolume)
			}
			mounts := 0
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if m.Name == vol && vol != "" {
						if m != (corev1.VolumeMount{Name: vol, ReadOnly: true, MountPath: ServiceAccountMountPath}) {
							t.Errorf("mount %+v", m)
						}
						mounts++
					}
				}
			}
			if mounts != tc.wantMounts {
				t.Errorf("%d containers mount the token, want %d", mounts, tc.wantMounts)
			}
			if diff := cmp.Diff(tc.wantPulls, spec.ImagePullSecrets); diff != "" {
				t.Errorf("imagePullSecrets (-want,+got):\n%s", diff)
			}
		})
	}
}
