package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

var userBob = authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}}

func httptestRequest(method, path string) *http.Request {
	return httptest.NewRequest(method, path, nil)
}

// authBenchCallers are the ways BenchmarkAuthz sends its requests: an API
// without authentication (the floor), the token of a system:masters user
// (authorized before RBAC), and a user allowed by a RoleBinding among
// fifty others, after every default ClusterRoleBinding was looked at.
var authBenchCallers = []struct{ name, token string }{{"open", ""}, {"masters", "root"}, {"rbac", "bob"}}

// newAuthBenchServer is newAuthTestServer (or, without a token, a server
// that does not authenticate) holding jobs Jobs in default, where bob may
// do anything with Jobs through the last of fifty RoleBindings.
func newAuthBenchServer(b *testing.B, token string, jobs int) *testServer {
	b.Helper()
	var ts *testServer
	if token == "" {
		ts = newTestServer(b)
	} else {
		ts = newAuthTestServer(b)
	}
	err := ts.store.Write(func(tx *db.Tx) error {
		if err := tx.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
			return err
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jobs"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}}}}
		if err := tx.Create(db.Roles, role); err != nil {
			return err
		}
		for i := range 50 {
			user := fmt.Sprintf("user-%d", i)
			if i == 49 {
				user = "bob"
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("rb-%02d", i)},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "jobs"},
				Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: user}}}
			if err := tx.Create(db.RoleBindings, rb); err != nil {
				return err
			}
		}
		for i := range jobs {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("job-%04d", i)},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}}}}}
			if err := tx.Create(db.Jobs, job); err != nil {
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

// BenchmarkAuthz measures what authentication and RBAC add to a request:
// creating a Job (p50 and p99 of each request) and listing 2000 Jobs, for
// each of authBenchCallers.
func BenchmarkAuthz(b *testing.B) {
	for _, caller := range authBenchCallers {
		b.Run("create/"+caller.name, func(b *testing.B) {
			ts := newAuthBenchServer(b, caller.token, 0)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				body := fmt.Sprintf(`{"metadata":{"name":"bench-%d"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`, i)
				start := time.Now()
				benchDo(b, ts, "POST", "/apis/batch/v1/namespaces/default/jobs", body, caller.token, http.StatusCreated)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		b.Run("list2000/"+caller.name, func(b *testing.B) {
			ts := newAuthBenchServer(b, caller.token, 2000)
			b.ResetTimer()
			for range b.N {
				benchDo(b, ts, "GET", "/apis/batch/v1/namespaces/default/jobs", "", caller.token, http.StatusOK)
			}
		})
	}
}

func benchDo(b *testing.B, ts *testServer, method, path, body, token string, want int) {
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: code %d", method, path, resp.StatusCode)
	}
}

// BenchmarkAuthorizeFromStore is RBAC's decision alone, reading the
// store, for a user allowed by the last of fifty RoleBindings: what every
// request of such a user paid before the daemon's RBAC cache
// (rbaccontroller.Cache has the in-memory benchmark).
func BenchmarkAuthorizeFromStore(b *testing.B) {
	ts := newAuthBenchServer(b, "bob", 0)
	s := &server{store: ts.store}
	a := attributesOf(httptestRequest("GET", "/apis/batch/v1/namespaces/default/jobs"), userBob)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.authorize(a); err != nil {
			b.Fatal(err)
		}
	}
}
