package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEphemeralContainersSubresource(t *testing.T) {
	pod := runningPod("p", "app")
	srv := newStreamServer(t, &fakeStreams{}, pod)
	do := func(method, body, contentType string) (int, *corev1.Pod, metav1.Status) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/default/pods/p/ephemeralcontainers", strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var p corev1.Pod
		var st metav1.Status
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatalf("decoding pod: %v", err)
			}
		} else if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("decoding status: %v", err)
		}
		return resp.StatusCode, &p, st
	}

	// NOTE: the patch kubectl debug sends: a two-way strategic merge patch.
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger-x","image":"busybox:1.35","stdin":true,"tty":true,"targetContainerName":"app","terminationMessagePolicy":"File"}]}}`
	code, got, st := do(http.MethodPatch, patch, "application/strategic-merge-patch+json")
	if code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, st.Message)
	}
	want := []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger-x", Image: "busybox:1.35", Stdin: true, TTY: true,
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}}}
	if diff := cmp.Diff(want, got.Spec.EphemeralContainers); diff != "" {
		t.Errorf("ephemeral containers after PATCH (-want,+got):\n%s", diff)
	}
	if got.Generation != 2 {
		t.Errorf("generation %d after PATCH, want 2", got.Generation)
	}

	code, got, _ = do(http.MethodGet, "", "")
	if code != http.StatusOK || len(got.Spec.EphemeralContainers) != 1 || got.Kind != "Pod" {
		t.Errorf("GET: %d, %d ephemeral containers, kind %q", code, len(got.Spec.EphemeralContainers), got.Kind)
	}

	// A PUT changes nothing but the ephemeral containers.
	put := got.DeepCopy()
	put.Labels = map[string]string{"ignored": "yes"}
	put.Spec.Containers[0].Image = "ignored:1"
	put.Spec.EphemeralContainers = append(put.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "second", Image: "busybox:1.35",
			ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}})
	body, _ := json.Marshal(put)
	code, got, st = do(http.MethodPut, string(body), "application/json")
	if code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, st.Message)
	}
	if len(got.Spec.EphemeralContainers) != 2 || got.Labels["ignored"] != "" || got.Spec.Containers[0].Image != "busybox:1.35" {
		t.Errorf("PUT kept %d ephemeral containers, labels %v, image %q", len(got.Spec.EphemeralContainers), got.Labels, got.Spec.Containers[0].Image)
	}

	// A stale resourceVersion conflicts; changing an existing one is invalid.
	code, _, _ = do(http.MethodPut, string(body), "application/json")
	if code != http.StatusConflict {
		t.Errorf("PUT with a stale resourceVersion: %d, want 409", code)
	}
	code, _, st = do(http.MethodPatch, `{"spec":{"ephemeralContainers":[{"name":"debugger-x","image":"busybox:1.36"}]}}`,
		"application/strategic-merge-patch+json")
	wantSt := metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-x" may not be changed`}
	if diff := cmp.Diff(wantSt, metav1.Status{Code: st.Code, Reason: st.Reason, Message: st.Message}); diff != "" {
		t.Errorf("changing one (-want,+got):\n%s", diff)
	}
}

func TestPodCreateWithEphemeralContainers(t *testing.T) {
	srv := newStreamServer(t, &fakeStreams{})
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"app","image":"busybox:1.35"}],` +
		`"ephemeralContainers":[{"name":"dbg","image":"busybox:1.35"}]}}`
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/default/pods", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	want := `Pod "p" is invalid: spec.ephemeralContainers: Forbidden: cannot be set on create`
	if resp.StatusCode != http.StatusUnprocessableEntity || st.Message != want {
		t.Errorf("create: %d %q, want 422 %q", resp.StatusCode, st.Message, want)
	}
}
