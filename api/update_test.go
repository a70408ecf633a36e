package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

func decodeJob(t *testing.T, body string) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	if err := json.Unmarshal([]byte(body), &job); err != nil {
		t.Fatalf("decoding Job %q: %v", body, err)
	}
	return &job
}

func TestPatchTypes(t *testing.T) {
	tests := map[string]struct {
		contentType, patch string
		wantParallel       int32
		wantContainers     []string
	}{
		"merge": {
			contentType: "application/merge-patch+json", patch: `{"spec":{"parallelism":3}}`,
			wantParallel: 3, wantContainers: []string{"c"},
		},
		"strategic merges containers by name": {
			contentType:  "application/strategic-merge-patch+json",
			patch:        `{"spec":{"parallelism":2}}`,
			wantParallel: 2, wantContainers: []string{"c"},
		},
		"json patch": {
			contentType: "application/json-patch+json", patch: `[{"op":"replace","path":"/spec/parallelism","value":4}]`,
			wantParallel: 4, wantContainers: []string{"c"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			created := decodeJob(t, ts.do(t, "POST", jobsPath, jobJSON("a")).body)
			r := ts.do(t, "PATCH", jobsPath+"/a", tc.patch, "Content-Type: "+tc.contentType)
			if r.code != 200 {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			job := decodeJob(t, r.body)
			var names []string
			for _, c := range job.Spec.Template.Spec.Containers {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tc.wantContainers, names); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if *job.Spec.Parallelism != tc.wantParallel {
				t.Errorf("parallelism = %d, want %d", *job.Spec.Parallelism, tc.wantParallel)
			}
			if job.Generation != created.Generation+1 {
				t.Errorf("generation = %d, want %d", job.Generation, created.Generation+1)
			}
			if job.ResourceVersion == created.ResourceVersion {
				t.Errorf("resourceVersion unchanged")
			}
		})
	}
}

func TestStrategicPatchMergesListByKey(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", podsPath, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}`)
	r := ts.do(t, "PATCH", podsPath+"/p", `{"spec":{"containers":[{"name":"b","image":"y:2"}]}}`,
		"Content-Type: application/strategic-merge-patch+json")
	if r.code != 200 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(r.body), &pod); err != nil {
		t.Fatal(err)
	}
	got := []string{pod.Spec.Containers[0].Image, pod.Spec.Containers[1].Image}
	if diff := cmp.Diff([]string{"x:1", "y:2"}, got); diff != "" {
		t.Errorf("images (-want,+got):\n%s", diff)
	}
}

func TestUpdateKeepsStatusAndStatusKeepsSpec(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", jobsPath, jobJSON("a"))

	// A status update through /status changes the status only.
	r := ts.do(t, "PATCH", jobsPath+"/a/status", `{"spec":{"parallelism":9},"status":{"active":1}}`,
		"Content-Type: application/merge-patch+json")
	if r.code != 200 {
		t.Fatalf("status patch: %d %s", r.code, r.body)
	}
	job := decodeJob(t, r.body)
	if job.Status.Active != 1 || *job.Spec.Parallelism != 1 || job.Generation != 1 {
		t.Errorf("status patch: active %d parallelism %d generation %d, want 1 1 1", job.Status.Active, *job.Spec.Parallelism, job.Generation)
	}

	// A main-resource update keeps the status.
	job.Status = batchv1.JobStatus{}
	job.Spec.Parallelism = ptrTo(int32(2))
	body, _ := json.Marshal(job)
	r = ts.do(t, "PUT", jobsPath+"/a", string(body))
	if r.code != 200 {
		t.Fatalf("put: %d %s", r.code, r.body)
	}
	job = decodeJob(t, r.body)
	if job.Status.Active != 1 || *job.Spec.Parallelism != 2 || job.Generation != 2 {
		t.Errorf("put: active %d parallelism %d generation %d, want 1 2 2", job.Status.Active, *job.Spec.Parallelism, job.Generation)
	}

	// A PUT of the status with a stale resourceVersion conflicts.
	r = ts.do(t, "PUT", jobsPath+"/a/status", strings.Replace(string(body), `"resourceVersion":"`, `"resourceVersion":"9`, 1))
	if r.code != 409 {
		t.Errorf("stale status put: %d %s", r.code, r.body)
	}
}

func TestDeleteJob(t *testing.T) {
	tests := map[string]struct {
		body          string
		wantJobGone   bool
		wantOwnerRefs int // on the job's pod afterwards
		wantFinalizer []string
	}{
		"default orphans the pods": {body: "", wantJobGone: true, wantOwnerRefs: 0},
		"orphan":                   {body: `{"propagationPolicy":"Orphan"}`, wantJobGone: true, wantOwnerRefs: 0},
		"background leaves pods to the collector": {
			body: `{"propagationPolicy":"Background"}`, wantJobGone: true, wantOwnerRefs: 1,
		},
		"foreground marks the job": {
			body: `{"propagationPolicy":"Foreground"}`, wantOwnerRefs: 1, wantFinalizer: []string{metav1.FinalizerDeleteDependents},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			job := decodeJob(t, ts.do(t, "POST", jobsPath, jobJSON("a")).body)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-x", Namespace: "default",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "a", UID: job.UID, Controller: ptrTo(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
			if err := ts.store.Create(db.Pods, pod); err != nil {
				t.Fatal(err)
			}
			r := ts.do(t, "DELETE", jobsPath+"/a", tc.body)
			if r.code != 200 {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			stored, err := ts.store.Get(db.Jobs, "default", "a")
			if gone := err != nil; gone != tc.wantJobGone {
				t.Fatalf("job gone = %v, want %v (%v)", gone, tc.wantJobGone, err)
			}
			if tc.wantJobGone {
				st := statusOf(t, r.body)
				want := metav1.StatusDetails{Name: "a", Group: "batch", Kind: "jobs", UID: job.UID}
				if st.Status != metav1.StatusSuccess || st.Details == nil || !cmp.Equal(*st.Details, want) {
					t.Errorf("response %s, want Success Status with %+v", r.body, want)
				}
			} else {
				if diff := cmp.Diff(tc.wantFinalizer, stored.GetFinalizers()); diff != "" {
					t.Errorf("finalizers (-want,+got):\n%s", diff)
				}
				if stored.GetDeletionTimestamp() == nil {
					t.Errorf("no deletionTimestamp")
				}
				if got := decodeJob(t, r.body); got.DeletionTimestamp == nil {
					t.Errorf("response is not the marked job: %s", r.body)
				}
			}
			p, err := ts.store.Get(db.Pods, "default", "a-x")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.GetOwnerReferences()); got != tc.wantOwnerRefs {
				t.Errorf("pod ownerReferences = %d, want %d", got, tc.wantOwnerRefs)
			}
		})
	}
}

func TestDeletePod(t *testing.T) {
	tests := map[string]struct {
		nodeName   string
		phase      corev1.PodPhase
		finalizers []string
		query      string
		wantGone   bool
		wantGrace  int64
	}{
		"running pod is deleted gracefully":     {nodeName: "n", phase: corev1.PodRunning, wantGrace: 30},
		"requested grace period":                {nodeName: "n", phase: corev1.PodRunning, query: "?gracePeriodSeconds=5", wantGrace: 5},
		"unscheduled pod goes now":              {phase: corev1.PodPending, wantGone: true},
		"finished pod goes now":                 {nodeName: "n", phase: corev1.PodSucceeded, wantGone: true},
		"grace 0 goes now":                      {nodeName: "n", phase: corev1.PodRunning, query: "?gracePeriodSeconds=0", wantGone: true},
		"grace 0 with a finalizer waits for it": {nodeName: "n", phase: corev1.PodFailed, finalizers: []string{"batch.kubernetes.io/job-tracking"}, wantGrace: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Finalizers: tc.finalizers},
				Spec:   corev1.PodSpec{NodeName: tc.nodeName, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
				Status: corev1.PodStatus{Phase: tc.phase}}
			if err := ts.store.Create(db.Pods, pod); err != nil {
				t.Fatal(err)
			}
			r := ts.do(t, "DELETE", podsPath+"/p"+tc.query, "")
			if r.code != 200 {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			var got corev1.Pod
			if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Kind != "Pod" {
				t.Fatalf("response is not a Pod: %s", r.body)
			}
			stored, err := ts.store.Get(db.Pods, "default", "p")
			if gone := err != nil; gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v", gone, tc.wantGone)
			}
			if tc.wantGone {
				return
			}
			if stored.GetDeletionTimestamp() == nil || stored.GetDeletionGracePeriodSeconds() == nil ||
				*stored.GetDeletionGracePeriodSeconds() != tc.wantGrace {
				t.Errorf("deletionTimestamp %v grace %v, want grace %d", stored.GetDeletionTimestamp(),
					stored.GetDeletionGracePeriodSeconds(), tc.wantGrace)
			}
		})
	}
}

func TestCreatePodDefaultsAndBinds(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", podsPath, podJSON("p"))
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(r.body), &pod); err != nil {
		t.Fatal(err)
	}
	got := []string{pod.Spec.NodeName, string(pod.Spec.RestartPolicy), string(pod.Status.Phase),
		string(pod.Status.QOSClass), string(pod.Spec.Containers[0].ImagePullPolicy)}
	want := []string{"node-a", "Always", "Pending", "BestEffort", "IfNotPresent"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestPodUpdateOnlyImage(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", podsPath, podJSON("p"))
	ok := ts.do(t, "PATCH", podsPath+"/p", `{"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`,
		"Content-Type: application/strategic-merge-patch+json")
	if ok.code != 200 {
		t.Errorf("image change: %d %s", ok.code, ok.body)
	}
	bad := ts.do(t, "PATCH", podsPath+"/p", `{"spec":{"restartPolicy":"Never"}}`, "Content-Type: application/merge-patch+json")
	if bad.code != 422 {
		t.Errorf("restartPolicy change: %d %s", bad.code, bad.body)
	}
}

// TestCreatePodQOSClass: a created pod's qosClass is the kubelet's, from
// cpu and memory alone (an ephemeral-storage request leaves it BestEffort).
func TestCreatePodQOSClass(t *testing.T) {
	ts := newTestServer(t)
	tests := map[string]struct{ resources, want string }{
		"nothing":                   {`{}`, "BestEffort"},
		"ephemeral-storage only":    {`{"requests":{"ephemeral-storage":"1Gi"}}`, "BestEffort"},
		"limits only":               {`{"limits":{"cpu":"1","memory":"64Mi"}}`, "Guaranteed"},
		"memory request only":       {`{"requests":{"memory":"64Mi"}}`, "Burstable"},
		"requests below the limits": {`{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"1","memory":"64Mi"}}`, "Burstable"},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			r := ts.do(t, "POST", podsPath, fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"busybox:1.35","resources":%s}]}}`, i, tc.resources))
			var pod corev1.Pod
			if err := json.Unmarshal([]byte(r.body), &pod); r.code != 201 || err != nil {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			if pod.Status.QOSClass != corev1.PodQOSClass(tc.want) {
				t.Errorf("qosClass %s, want %s", pod.Status.QOSClass, tc.want)
			}
		})
	}
}

// TestPodDefaultsOnCreateAndUpdate: a pod's defaults (kube's
// SetDefaults_Pod) apply to what a client sends on create and on update
// alike: requests follow limits, enableServiceLinks is true, a hostNetwork
// pod's ports are host ports. A PUT of the manifest as the client first
// wrote it (bound to the node) changes nothing and is accepted.
func TestPodDefaultsOnCreateAndUpdate(t *testing.T) {
	ts := newTestServer(t)
	const manifest = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostNetwork":true,
		"initContainers":[{"name":"i","image":"busybox:1.35","resources":{"limits":{"cpu":"1"}}}],
		"containers":[{"name":"c","image":"busybox:1.35","ports":[{"containerPort":8080}],
			"resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"1","memory":"64Mi"}}}]}}`
	r := ts.do(t, "POST", podsPath, manifest)
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(r.body), &pod); err != nil {
		t.Fatal(err)
	}
	c, i := pod.Spec.Containers[0], pod.Spec.InitContainers[0]
	got := []string{c.Resources.Requests.Cpu().String(), c.Resources.Requests.Memory().String(), i.Resources.Requests.Cpu().String(),
		fmt.Sprint(c.Ports[0].HostPort), fmt.Sprint(pod.Spec.EnableServiceLinks != nil && *pod.Spec.EnableServiceLinks)}
	want := []string{"100m", "64Mi", "1", "8080", "true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want,+got):\n%s", diff)
	}
	bound := strings.Replace(manifest, `"hostNetwork":true,`, `"hostNetwork":true,"nodeName":"node-a",`, 1)
	if r := ts.do(t, "PUT", podsPath+"/p", bound); r.code != 200 {
		t.Errorf("update with the manifest as first written: %d %s", r.code, r.body)
	}
}
