package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidateRuntimeClass(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	tests := map[string]struct {
		rc   nodev1.RuntimeClass
		want []string
	}{
		"valid": {rc: nodev1.RuntimeClass{Handler: "runc",
			Overhead: &nodev1.Overhead{PodFixed: rl("cpu", "10m", "memory", "1Mi", "example.com/dongle", "1")},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
				Tolerations: []corev1.Toleration{{Key: "a", Operator: "Exists"}, {Key: "a", Operator: "Equal", Value: "v"}}}}},
		"handler not a DNS label": {rc: nodev1.RuntimeClass{Handler: "run.c"},
			want: []string{`handler: Invalid value: "run.c": must not contain dots`}},
		"no handler": {rc: nodev1.RuntimeClass{},
			want: []string{`handler: Invalid value: "": a lowercase RFC 1123 label must consist of`}},
		"overhead": {rc: nodev1.RuntimeClass{Handler: "h", Overhead: &nodev1.Overhead{PodFixed: rl(
			"cpu", "-1", "pods", "1", "example.com/dongle", "500m", "hugepages-2Mi", "2Mi")}},
			want: []string{
				`overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
				`overhead.limits[example.com/dongle]: Invalid value: "500m": must be an integer`,
				`overhead.limits[pods]: Invalid value: "pods": must be a standard resource for containers`,
			}},
		"hugepages alone": {rc: nodev1.RuntimeClass{Handler: "h", Overhead: &nodev1.Overhead{PodFixed: rl("hugepages-2Mi", "2Mi")}},
			want: []string{`overhead: Forbidden: HugePages require cpu or memory`}},
		"scheduling": {rc: nodev1.RuntimeClass{Handler: "h", Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"bad key!": "v"},
			Tolerations: []corev1.Toleration{
				{Key: "k", Operator: "Exists"}, {Key: "k", Operator: "Exists"},
				{Operator: "Equal", Value: "v"},
				{Key: "k", Operator: "Exists", Value: "v"},
				{Key: "k", Operator: "Sometimes"},
				{Key: "k", Operator: "Exists", Effect: "NoSchedule", TolerationSeconds: ptr.To(int64(5))},
				{Key: "k", Operator: "Exists", Effect: "Never"},
			}}},
			want: []string{
				`scheduling.nodeSelector: Invalid value: "bad key!": name part must consist of`,
				`scheduling.tolerations.tolerations[2].operator: Invalid value: "Equal": operator must be Exists when`,
				`scheduling.tolerations.tolerations[3].operator: Invalid value: "v": value must be empty when`,
				`scheduling.tolerations.tolerations[4].operator: Unsupported value: "Sometimes": supported values: "Equal", "Exists"`,
				`scheduling.tolerations.tolerations[5].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when`,
				`scheduling.tolerations.tolerations[6].effect: Unsupported value: "Never"`,
				`scheduling.tolerations[1]: Duplicate value:`,
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateRuntimeClass(&tc.rc)
			if len(errs) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("error %d: %q, want it to start with %q", i, errs[i].Error(), want)
				}
			}
		})
	}
	old := &nodev1.RuntimeClass{Handler: "runc"}
	if errs := ValidateRuntimeClassUpdate(&nodev1.RuntimeClass{Handler: "kata"}, old); len(errs) != 1 ||
		errs[0].Error() != `handler: Invalid value: "kata": field is immutable` {
		t.Errorf("handler change: %v", errs)
	}
	warned := RuntimeClassWarnings(&nodev1.RuntimeClass{Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"beta.kubernetes.io/os": "linux"}}})
	if diff := cmp.Diff([]string{`scheduling.nodeSelector: deprecated since v1.14; use "kubernetes.io/os" instead`}, warned); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
}

func TestAdmitRuntimeClass(t *testing.T) {
	overhead := corev1.ResourceList{"cpu": resource.MustParse("10m")}
	withOverhead := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "heavy"}, Handler: "runc", Overhead: &nodev1.Overhead{PodFixed: overhead}}
	scheduled := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "placed"}, Handler: "runc", Scheduling: &nodev1.Scheduling{
		NodeSelector: map[string]string{"zone": "a"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: "Exists"}, {Key: "t", Operator: "Equal", Value: "v"}},
	}}
	tests := map[string]struct {
		class        string
		rc           *nodev1.RuntimeClass
		pod          corev1.PodSpec
		wantErr      string
		wantOverhead corev1.ResourceList
		wantSelector map[string]string
		wantTols     []corev1.Toleration
	}{
		"no class":      {},
		"missing class": {class: "ghost", wantErr: `pods "p-" is forbidden: pod rejected: RuntimeClass "ghost" not found`},
		"overhead set":  {class: "heavy", rc: withOverhead, wantOverhead: overhead},
		"same overhead": {class: "heavy", rc: withOverhead, pod: corev1.PodSpec{Overhead: overhead}, wantOverhead: overhead},
		"other overhead": {class: "heavy", rc: withOverhead, pod: corev1.PodSpec{Overhead: corev1.ResourceList{"cpu": resource.MustParse("1")}},
			wantErr: `pods "p-" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		"overhead without class": {pod: corev1.PodSpec{Overhead: overhead},
			wantErr: `pods "p-" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		"scheduling merged": {class: "placed", rc: scheduled,
			pod: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd", "zone": "a"},
				Tolerations: []corev1.Toleration{{Key: "t", Operator: "Exists"}}},
			wantSelector: map[string]string{"disk": "ssd", "zone": "a"},
			wantTols:     []corev1.Toleration{{Key: "t", Operator: "Exists"}, {Key: "gpu", Operator: "Exists"}}},
		"scheduling onto no selector": {class: "placed", rc: scheduled,
			wantSelector: map[string]string{"zone": "a"}, wantTols: scheduled.Scheduling.Tolerations},
		"selector conflict": {class: "placed", rc: scheduled, pod: corev1.PodSpec{NodeSelector: map[string]string{"zone": "b"}},
			wantErr: `pods "p-" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[zone] = a; pod.spec.nodeSelector[zone] = b`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-", Name: "p-abcde"}, Spec: tc.pod}
			if tc.class != "" {
				pod.Spec.RuntimeClassName = &tc.class
			}
			err := admitRuntimeClass(pod, tc.rc)
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want 403 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOverhead, pod.Spec.Overhead); diff != "" {
				t.Errorf("overhead (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSelector, pod.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTols, pod.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMergeTolerations(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	equal := func(key, value string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value}
	}
	noExecute := func(key string, seconds int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}
	}
	tests := map[string]struct {
		first, second, want []corev1.Toleration
	}{
		"disjoint":             {first: []corev1.Toleration{equal("a", "1")}, second: []corev1.Toleration{equal("b", "2")}, want: []corev1.Toleration{equal("a", "1"), equal("b", "2")}},
		"duplicate once":       {first: []corev1.Toleration{equal("a", "1")}, second: []corev1.Toleration{equal("a", "1")}, want: []corev1.Toleration{equal("a", "1")}},
		"exists covers equal":  {first: []corev1.Toleration{equal("a", "1")}, second: []corev1.Toleration{exists("a", "")}, want: []corev1.Toleration{exists("a", "")}},
		"any effect covers":    {first: []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, second: []corev1.Toleration{exists("a", "")}, want: []corev1.Toleration{exists("a", "")}},
		"empty key covers all": {first: []corev1.Toleration{equal("a", "1"), exists("b", "")}, second: []corev1.Toleration{exists("", "")}, want: []corev1.Toleration{exists("", "")}},
		"longer seconds kept":  {first: []corev1.Toleration{noExecute("a", 10)}, second: []corev1.Toleration{noExecute("a", 60)}, want: []corev1.Toleration{noExecute("a", 60)}},
		"none":                 {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MergeTolerations(tc.first, tc.second)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAdmitInPluginOrder: the RuntimeClass's tolerations come after the
// default ones, as kube-apiserver runs DefaultTolerationSeconds before the
// RuntimeClass plugin.
func TestAdmitInPluginOrder(t *testing.T) {
	class := "placed"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{RuntimeClassName: &class,
		Tolerations: []corev1.Toleration{{Key: "t", Operator: "Exists"}}}}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Handler: "runc",
		Scheduling: &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: "Exists"}}}}
	if err := (PodStrategy{}).Admit(pod, PodRefs{RuntimeClass: rc}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tol := range pod.Spec.Tolerations {
		keys = append(keys, tol.Key)
	}
	want := []string{"t", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "gpu"}
	if !slices.Equal(keys, want) {
		t.Errorf("tolerations %v, want %v", keys, want)
	}
}
