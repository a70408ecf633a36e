package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// benchServer is a server holding n pods.
func benchServer(b *testing.B, n int) *testServer {
	b.Helper()
	ts := newTestServer(b)
	err := ts.store.Write(func(tx *db.Tx) error {
		for i := 0; i < n; i++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: "default",
					Labels: map[string]string{"app": "bench", "i": fmt.Sprint(i % 10)}},
				Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			}
			if err := tx.Create(db.Pods, pod); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ts
}

func benchGet(b *testing.B, ts *testServer, path string, headers ...string) {
	b.Helper()
	benchGetWith(b, http.DefaultClient, ts.URL, path, headers...)
}

// benchGetWith is benchGet through client to the server at url.
func benchGetWith(b *testing.B, client *http.Client, url, path string, headers ...string) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("GET", url+path, nil)
		for _, h := range headers {
			req.Header.Set("Accept", h)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("code %d", resp.StatusCode)
		}
	}
}

func BenchmarkList1000Pods(b *testing.B) {
	benchGet(b, benchServer(b, 1000), podsPath)
}

func BenchmarkList1000PodsTable(b *testing.B) {
	benchGet(b, benchServer(b, 1000), podsPath+"?limit=500", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
}

func BenchmarkList1000PodsLabelSelector(b *testing.B) {
	benchGet(b, benchServer(b, 1000), podsPath+"?labelSelector=i%3D3")
}

func BenchmarkGetPodOf1000(b *testing.B) {
	benchGet(b, benchServer(b, 1000), podsPath+"/pod-0500")
}

// jobServer is a server holding n finished Jobs shaped as the Job
// controller leaves them (template, selector, status with conditions).
func jobServer(b *testing.B, n int) *testServer {
	b.Helper()
	ts := newTestServer(b)
	one := int32(1)
	for first := 0; first < n; first += 1000 {
		err := ts.store.Write(func(tx *db.Tx) error {
			for i := first; i < min(first+1000, n); i++ {
				name := fmt.Sprintf("job-%05d", i)
				labels := map[string]string{"batch.kubernetes.io/job-name": name, "job-name": name}
				now := metav1.Now()
				job := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
					Spec: batchv1.JobSpec{Completions: &one, Parallelism: &one, BackoffLimit: &one,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": name}},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
								Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: []string{"true"},
									TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ImagePullPolicy: "IfNotPresent"}}}}},
					Status: batchv1.JobStatus{Succeeded: 1, StartTime: &now, CompletionTime: &now,
						Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now}}},
				}
				if err := tx.Create(db.Jobs, job); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ts
}

// BenchmarkList10000Jobs and BenchmarkList10000JobsTable are issue 15's
// lists (≤ 100 ms as JSON, ≤ 150 ms as a Table) through the API handler
// alone, client included: what the API costs without the daemon around it.
func BenchmarkList10000Jobs(b *testing.B) {
	benchGet(b, jobServer(b, 10000), "/apis/batch/v1/namespaces/default/jobs")
}

func BenchmarkList10000JobsTable(b *testing.B) {
	benchGet(b, jobServer(b, 10000), "/apis/batch/v1/namespaces/default/jobs", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
}

// BenchmarkList10000JobsTablePage is kubectl get's first request: a Table
// page of 500 (kubectl's --chunk-size) of 10000 Jobs.
func BenchmarkList10000JobsTablePage(b *testing.B) {
	benchGet(b, jobServer(b, 10000), "/apis/batch/v1/namespaces/default/jobs?limit=500", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
}

// BenchmarkList10000JobsTLS and BenchmarkList10000JobsTableTLS are the
// lists over HTTP/2 and TLS, as kubectl and client-go reach skiffd.
func BenchmarkList10000JobsTLS(b *testing.B) {
	srv := tlsServer(b, jobServer(b, 10000))
	benchGetWith(b, srv.Client(), srv.URL, "/apis/batch/v1/namespaces/default/jobs")
}

func BenchmarkList10000JobsTableTLS(b *testing.B) {
	srv := tlsServer(b, jobServer(b, 10000))
	benchGetWith(b, srv.Client(), srv.URL, "/apis/batch/v1/namespaces/default/jobs", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
}

// tlsServer serves ts's handler over HTTP/2 and TLS.
func tlsServer(b *testing.B, ts *testServer) *httptest.Server {
	srv := httptest.NewUnstartedServer(ts.Config.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	b.Cleanup(srv.Close)
	return srv
}
