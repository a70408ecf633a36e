package podworker

import (
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// countingIssuer issues numbered tokens valid for life from its clock.
type countingIssuer struct {
	n    int
	life time.Duration
	now  func() time.Time
	last *authenticationv1.TokenRequest
}

func (c *countingIssuer) Request(ns, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, []string, error) {
	c.n++
	out := req.DeepCopy()
	out.CreationTimestamp = metav1.NewTime(c.now())
	out.Status = authenticationv1.TokenRequestStatus{Token: string(rune('a' + c.n - 1)), ExpirationTimestamp: metav1.NewTime(c.now().Add(c.life))}
	c.last = out
	return out, nil, nil
}

func TestTokensRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	tests := map[string]struct {
		life      time.Duration
		wantDueIn time.Duration
	}{
		"at 80 % of its life": {life: time.Hour, wantDueIn: 48 * time.Minute},
		"at 24 h at most":     {life: 30 * 24 * time.Hour, wantDueIn: 24 * time.Hour},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now = time.Unix(1_800_000_000, 0)
			iss := &countingIssuer{life: tc.life, now: clock}
			tk := newTokens(iss, clock)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: corev1.PodSpec{ServiceAccountName: "default"}}
			src := &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}
			first, err := tk.token(pod, src)
			if err != nil {
				t.Fatal(err)
			}
			ref := iss.last.Spec.BoundObjectRef
			if ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "u1" || *iss.last.Spec.ExpirationSeconds != 3607 {
				t.Errorf("request: %+v", iss.last.Spec)
			}
			if got := tk.nextRefresh("u1").Sub(now); got != tc.wantDueIn {
				t.Errorf("due in %v, want %v", got, tc.wantDueIn)
			}
			now = now.Add(tc.wantDueIn - time.Second)
			if again, _ := tk.token(pod, src); again != first || iss.n != 1 {
				t.Errorf("a token not yet due was asked for again (%d requests)", iss.n)
			}
			now = now.Add(time.Second)
			if next, _ := tk.token(pod, src); next == first || iss.n != 2 {
				t.Errorf("a due token was kept (%d requests)", iss.n)
			}
			tk.forget("u1")
			if !tk.nextRefresh("u1").IsZero() {
				t.Error("a forgotten pod's token is still due")
			}
		})
	}
}
