package serviceaccount

import (
	"context"
	"crypto"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkIssue is the cost of a pod's token: what every pod start with
// the kube-api-access volume pays once (and each refresh).
func BenchmarkIssue(b *testing.B) {
	is, err := NewIssuer(DefaultIssuer, newKey(b))
	if err != nil {
		b.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u2"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := is.Issue(Binding{ServiceAccount: sa, Pod: pod}, []string{DefaultIssuer}, time.Hour, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate is the cost of authenticating a request bearing a
// pod's token (the object lookups aside).
func BenchmarkAuthenticate(b *testing.B) {
	key := newKey(b)
	is, err := NewIssuer(DefaultIssuer, key)
	if err != nil {
		b.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u2"}}
	tok, _, err := is.Issue(Binding{ServiceAccount: sa, Pod: pod}, []string{DefaultIssuer}, time.Hour, 0)
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewAuthenticator(DefaultIssuer, []crypto.PublicKey{key.Public()}, []string{DefaultIssuer},
		objects{sas: map[string]*corev1.ServiceAccount{"ns/default": sa}, pods: map[string]*corev1.Pod{"ns/p": pod}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
