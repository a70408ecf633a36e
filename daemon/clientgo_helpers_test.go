//go:build integration

package daemon_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// seqAnnotation numbers the writes of the client-go tests, so that a
// reader can tell whether it saw every one of them.
const seqAnnotation = "skiff.test/seq"

// seqOf is the object's write number (-1 without one).
func seqOf(obj metav1.Object) int {
	v, ok := obj.GetAnnotations()[seqAnnotation]
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// seqPatch is a merge patch setting the write number.
func seqPatch(n int) []byte {
	return []byte(`{"metadata":{"annotations":{"` + seqAnnotation + `":"` + strconv.Itoa(n) + `"}}}`)
}

// seqLog records, per object, the distinct write numbers seen in order.
type seqLog struct {
	mu   sync.Mutex
	seen map[string][]int
}

func newSeqLog() *seqLog { return &seqLog{seen: map[string][]int{}} }

// note records obj's write number if it differs from the last one seen
// (status writes by the controllers repeat it).
func (l *seqLog) note(key string, obj metav1.Object) {
	n := seqOf(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[key]
	if len(s) == 0 || s[len(s)-1] != n {
		l.seen[key] = append(s, n)
	}
}

func (l *seqLog) get(key string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.seen[key]...)
}

// last is the newest write number seen for key (-2 if none).
func (l *seqLog) last(key string) int {
	s := l.get(key)
	if len(s) == 0 {
		return -2
	}
	return s[len(s)-1]
}

// upTo is 0, 1, …, n.
func upTo(n int) []int {
	s := make([]int, n+1)
	for i := range s {
		s[i] = i
	}
	return s
}

// contentTypes records the Content-Type of every request a client sends.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			c.mu.Lock()
			c.seen[ct]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *contentTypes) count(ct string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[ct]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// protobufClient is a clientset with client-go's default wire format
// (protobuf bodies, Accept protobuf then JSON); types records what it sends.
func (s *skiffd) protobufClient() (*kubernetes.Clientset, *contentTypes) {
	types := &contentTypes{seen: map[string]int{}}
	cfg := s.restConfig()
	cfg.ContentConfig = rest.ContentConfig{}
	cfg.WrapTransport = types.wrap
	return kubernetes.NewForConfigOrDie(cfg), types
}

// suspendedJob is a Job that runs no pods.
func suspendedJob(name string) *batchv1.Job {
	job := shJob(name, "true", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.Suspend = ptr(true)
	job.Annotations = map[string]string{seqAnnotation: "0"}
	return job
}

// sleepPod is a bare Pod whose one container sleeps.
func sleepPod(name string) *corev1.Pod {
	pod := shPod(name, corev1.RestartPolicyAlways, "exec sleep 3600")
	pod.Annotations = map[string]string{seqAnnotation: "0"}
	return pod
}

// createNamespace creates a namespace through the API.
func createNamespace(t testing.TB, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}
