package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objects is a Getter of a fixed set of objects.
type objects struct {
	sas     map[string]*corev1.ServiceAccount
	pods    map[string]*corev1.Pod
	secrets map[string]*corev1.Secret
}

func (o objects) ServiceAccount(ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.sas[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}

func (o objects) Pod(ns, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (o objects) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

// newKey is a signing key as skiffd makes it (ECDSA P-256).
func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newRSAKey is a signing key as skiffd made it before (RSA 2048).
func newRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestAuthenticateToken(t *testing.T) {
	key, other, oldKey, otherRSA := newKey(t), newKey(t), newRSAKey(t), newRSAKey(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "runner", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "secret-uid"}}
	recreated := pod.DeepCopy()
	recreated.UID = "other-uid"
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Hour)}
	all := objects{
		sas:     map[string]*corev1.ServiceAccount{"ns/runner": sa},
		pods:    map[string]*corev1.Pod{"ns/p": pod},
		secrets: map[string]*corev1.Secret{"ns/s": secret},
	}
	aud := []string{DefaultIssuer}
	podUser := authenticationv1.UserInfo{
		Username: "system:serviceaccount:ns:runner", UID: "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"},
		Extra: map[string]authenticationv1.ExtraValue{
			ExtraPodName: {"p"}, ExtraPodUID: {"pod-uid"}, ExtraNodeName: {"n1"}, ExtraNodeUID: {"node-uid"},
		},
	}
	tests := map[string]struct {
		issuer    string
		key       crypto.Signer
		binding   Binding
		audiences []string
		lifetime  time.Duration
		store     objects
		raw       string // instead of an issued token
		wantMine  bool
		wantUser  *authenticationv1.UserInfo
		wantErr   string
	}{
		"pod-bound": {binding: Binding{ServiceAccount: sa, Pod: pod, Node: node}, store: all, wantMine: true, wantUser: &podUser},
		"unbound": {binding: Binding{ServiceAccount: sa}, store: all, wantMine: true, wantUser: &authenticationv1.UserInfo{
			Username: "system:serviceaccount:ns:runner", UID: "sa-uid",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"}, Extra: map[string]authenticationv1.ExtraValue{}}},
		"secret-bound":    {binding: Binding{ServiceAccount: sa, Secret: secret}, store: all, wantMine: true},
		"not a jwt":       {raw: "abcdef0123456789", store: all},
		"another issuer":  {issuer: "https://elsewhere", binding: Binding{ServiceAccount: sa}, store: all},
		"forged":          {key: other, binding: Binding{ServiceAccount: sa}, store: all, wantMine: true, wantErr: "signature"},
		"forged with RSA": {key: otherRSA, binding: Binding{ServiceAccount: sa}, store: all, wantMine: true, wantErr: "signature"},
		"of the RSA key an earlier skiffd signed with": {key: oldKey, binding: Binding{ServiceAccount: sa, Pod: pod, Node: node}, store: all, wantMine: true, wantUser: &podUser},
		"expired":           {binding: Binding{ServiceAccount: sa}, lifetime: -2 * time.Minute, store: all, wantMine: true, wantErr: "expired"},
		"wrong audience":    {binding: Binding{ServiceAccount: sa}, audiences: []string{"vault"}, store: all, wantMine: true, wantErr: "audiences"},
		"deleted account":   {binding: Binding{ServiceAccount: sa}, store: objects{}, wantMine: true, wantErr: "not found"},
		"deleted pod":       {binding: Binding{ServiceAccount: sa, Pod: pod}, store: objects{sas: all.sas}, wantMine: true, wantErr: "invalidated"},
		"pod being deleted": {binding: Binding{ServiceAccount: sa, Pod: pod}, store: objects{sas: all.sas, pods: map[string]*corev1.Pod{"ns/p": deleting}}, wantMine: true, wantErr: "invalidated"},
		"pod recreated":     {binding: Binding{ServiceAccount: sa, Pod: pod}, store: objects{sas: all.sas, pods: map[string]*corev1.Pod{"ns/p": recreated}}, wantMine: true, wantErr: "does not match"},
		"deleted secret":    {binding: Binding{ServiceAccount: sa, Secret: secret}, store: objects{sas: all.sas}, wantMine: true, wantErr: "invalidated"},
		"account recreated": {binding: Binding{ServiceAccount: sa}, store: objects{sas: map[string]*corev1.ServiceAccount{
			"ns/runner": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "runner", UID: "new"}}}}, wantMine: true, wantErr: "does not match"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var signKey crypto.Signer = key
			issuer, audiences, lifetime := DefaultIssuer, aud, time.Hour
			if tc.issuer != "" {
				issuer = tc.issuer
			}
			if tc.key != nil {
				signKey = tc.key
			}
			if tc.audiences != nil {
				audiences = tc.audiences
			}
			if tc.lifetime != 0 {
				lifetime = tc.lifetime
			}
			token := tc.raw
			if token == "" {
				is, err := NewIssuer(issuer, signKey)
				if err != nil {
					t.Fatal(err)
				}
				if token, _, err = is.Issue(tc.binding, audiences, lifetime, 0); err != nil {
					t.Fatal(err)
				}
			}
			a, err := NewAuthenticator(DefaultIssuer, []crypto.PublicKey{key.Public(), oldKey.Public()}, aud, tc.store)
			if err != nil {
				t.Fatal(err)
			}
			_, mine, _ := a.Verify(token)
			if mine != tc.wantMine {
				t.Fatalf("mine = %v, want %v", mine, tc.wantMine)
			}
			u, ok, err := a.AuthenticateToken(context.Background(), token)
			if ok != (tc.wantErr == "" && tc.wantMine) {
				t.Fatalf("AuthenticateToken ok = %v (err %v)", ok, err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantUser == nil {
				return
			}
			if cred := u.Extra[ExtraCredentialID]; len(cred) != 1 || !strings.HasPrefix(cred[0], "JTI=") {
				t.Errorf("credential-id = %v, want JTI=<id>", cred)
			}
			delete(u.Extra, ExtraCredentialID)
			if diff := cmp.Diff(*tc.wantUser, u); diff != "" {
				t.Errorf("user (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestIssueClaims(t *testing.T) {
	key := newKey(t)
	is, err := NewIssuer(DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	is.now = func() time.Time { return now }
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u2"}}
	_, c, err := is.Issue(Binding{ServiceAccount: sa, Pod: pod}, []string{"a", "b"}, time.Hour, 3607*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "system:serviceaccount:ns:default" || c.Expiry.Time() != now.Add(time.Hour) ||
		c.IssuedAt.Time() != now || c.NotBefore.Time() != now || c.ID == "" ||
		c.Kubernetes.WarnAfter.Time() != now.Add(3607*time.Second) {
		t.Errorf("claims = %+v", c)
	}
	if _, _, err := is.Issue(Binding{ServiceAccount: sa, Pod: pod, Secret: &corev1.Secret{}}, nil, time.Hour, 0); err == nil {
		t.Error("a token bound to a pod and a secret was issued")
	}
}
