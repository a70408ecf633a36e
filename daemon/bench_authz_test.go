//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BenchmarkAuthzRequests measures what authentication and RBAC add to a
// request through a running skiffd, with three callers taking turns in
// the same run so that the machine's load falls on all three alike: the
// unix socket (the admin, neither authenticated nor looked up in RBAC),
// the token file's system:masters user (a token compared, RBAC skipped),
// and alice, allowed by the last of fifty RoleBindings (a token compared,
// RBAC's cache walked). It reports each caller's p50 and p99 of creating a
// (suspended) Job and of listing 2000 Jobs.
func BenchmarkAuthzRequests(b *testing.B) {
	s := newAuthSkiffd(b)
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "jobs"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}}}}
	if _, err := s.client.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		user := fmt.Sprintf("user-%d", i)
		if i == 49 {
			user = "alice"
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rb-%02d", i)},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "jobs"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
		if _, err := s.client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	socket := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://localhost", QPS: -1,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
		},
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	callers := []struct {
		name   string
		client *kubernetes.Clientset
	}{{"socket", socket}, {"masters", s.clientWithToken(adminToken)}, {"rbac", s.clientWithToken(aliceToken)}}
	waitFor(b, time.Minute, "alice's binding in RBAC's cache", func() (bool, error) {
		_, err := callers[2].client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})

	creates := make([][]time.Duration, len(callers))
	const jobs = 2000
	for i := 0; i < jobs; i++ {
		c := i % len(callers)
		start := time.Now()
		if _, err := callers[c].client.BatchV1().Jobs("default").Create(ctx, suspendedJob(fmt.Sprintf("bench-%04d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		creates[c] = append(creates[c], time.Since(start))
	}
	lists := make([][]time.Duration, len(callers))
	b.ResetTimer()
	for i := 0; i < b.N*len(callers); i++ {
		c := i % len(callers)
		start := time.Now()
		l, err := callers[c].client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != jobs {
			b.Fatalf("listing: %v", err)
		}
		lists[c] = append(lists[c], time.Since(start))
	}
	b.StopTimer()
	for i, c := range callers {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(percentiles(creates[i]).median), c.name+"-create-p50-ms")
		b.ReportMetric(ms(percentiles(creates[i]).p99), c.name+"-create-p99-ms")
		b.ReportMetric(ms(percentiles(lists[i]).median), c.name+"-list2000-p50-ms")
	}
}
