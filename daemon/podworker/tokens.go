package podworker

import (
	"fmt"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TokenRequests issues ServiceAccount tokens, as the API's
// serviceaccounts/<name>/token does (serviceaccount.Requester).
type TokenRequests interface {
	Request(namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, []string, error)
}

// maxTokenAge is the oldest a pod's token gets before the node asks for a
// new one, whatever its lifetime (the kubelet's token manager: 24 h).
const maxTokenAge = 24 * time.Hour

// tokens are the ServiceAccount tokens of the pods' projected volumes, as
// the kubelet's token manager keeps them: one per pod, ServiceAccount,
// audience and lifetime, asked for again once 80 % of its life or 24 h
// have passed.
type tokens struct {
	issue TokenRequests
	now   func() time.Time

	mu    sync.Mutex
	cache map[tokenKey]*authenticationv1.TokenRequest
}

type tokenKey struct {
	pod            types.UID
	serviceAccount string
	audience       string
	expirationSecs int64
}

func newTokens(issue TokenRequests, now func() time.Time) *tokens {
	return &tokens{issue: issue, now: now, cache: map[tokenKey]*authenticationv1.TokenRequest{}}
}

// token is the token of source for pod: the cached one unless it is due.
func (t *tokens) token(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) (string, error) {
	if t == nil || t.issue == nil {
		return "", fmt.Errorf("failed to fetch token: this node issues no service account tokens")
	}
	exp := int64(3600)
	if source.ExpirationSeconds != nil {
		exp = *source.ExpirationSeconds
	}
	key := tokenKey{pod: pod.UID, serviceAccount: pod.Spec.ServiceAccountName, audience: source.Audience, expirationSecs: exp}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.cache[key]; ok && !t.due(tr) {
		return tr.Status.Token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if source.Audience != "" {
		req.Spec.Audiences = []string{source.Audience}
	}
	tr, _, err := t.issue.Request(pod.Namespace, pod.Spec.ServiceAccountName, req)
	if err != nil {
		return "", fmt.Errorf("failed to fetch token: %w", err)
	}
	t.cache[key] = tr
	return tr.Status.Token, nil
}

// refreshAt is when tr is due: at 80 % of its life, at most maxTokenAge
// after it was issued.
func refreshAt(tr *authenticationv1.TokenRequest) time.Time {
	issued := tr.CreationTimestamp.Time
	life := tr.Status.ExpirationTimestamp.Sub(issued)
	return issued.Add(min(life*8/10, maxTokenAge))
}

func (t *tokens) due(tr *authenticationv1.TokenRequest) bool { return !t.now().Before(refreshAt(tr)) }

// nextRefresh is when the first of pod's tokens is due (zero: none).
func (t *tokens) nextRefresh(pod types.UID) time.Time {
	if t == nil {
		return time.Time{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var times []time.Time
	for k, tr := range t.cache {
		if k.pod == pod {
			times = append(times, refreshAt(tr))
		}
	}
	if len(times) == 0 {
		return time.Time{}
	}
	return slices.MinFunc(times, func(a, b time.Time) int { return a.Compare(b) })
}

// forget drops pod's tokens (its volumes are torn down).
func (t *tokens) forget(pod types.UID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.cache {
		if k.pod == pod {
			delete(t.cache, k)
		}
	}
}
