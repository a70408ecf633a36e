package api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestParseRequestInfo(t *testing.T) {
	tests := map[string]struct {
		method, target string
		want           requestInfo
	}{
		"version":        {"GET", "/version", requestInfo{Verb: "get", Path: "/version"}},
		"discovery root": {"GET", "/apis/batch/v1", requestInfo{Verb: "get", Path: "/apis/batch/v1"}},
		"images":         {"POST", "/skiff/v1/images", requestInfo{Verb: "post", Path: "/skiff/v1/images"}},
		"list all pods": {"GET", "/api/v1/pods", requestInfo{IsResource: true, Verb: "list", APIVersion: "v1",
			Resource: "pods", Path: "/api/v1/pods"}},
		"list jobs in a namespace": {"GET", "/apis/batch/v1/namespaces/ns/jobs?limit=500", requestInfo{IsResource: true,
			Verb: "list", APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "jobs", Path: "/apis/batch/v1/namespaces/ns/jobs"}},
		"watch by parameter": {"GET", "/api/v1/namespaces/ns/pods?watch=true", requestInfo{IsResource: true, Verb: "watch",
			APIVersion: "v1", Namespace: "ns", Resource: "pods", Path: "/api/v1/namespaces/ns/pods"}},
		"watch=false is a list": {"GET", "/api/v1/pods?watch=false", requestInfo{IsResource: true, Verb: "list",
			APIVersion: "v1", Resource: "pods", Path: "/api/v1/pods"}},
		"an empty watch is a watch, as kube decodes it": {"GET", "/api/v1/pods?watch=", requestInfo{IsResource: true,
			Verb: "watch", APIVersion: "v1", Resource: "pods", Path: "/api/v1/pods"}},
		"legacy watch path": {"GET", "/api/v1/watch/namespaces/ns/pods/p", requestInfo{IsResource: true, Verb: "watch",
			APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p", Path: "/api/v1/watch/namespaces/ns/pods/p"}},
		"get": {"GET", "/api/v1/namespaces/ns/pods/p", requestInfo{IsResource: true, Verb: "get", APIVersion: "v1",
			Namespace: "ns", Resource: "pods", Name: "p", Path: "/api/v1/namespaces/ns/pods/p"}},
		"log subresource": {"GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", requestInfo{IsResource: true, Verb: "get",
			APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "p", Subresource: "log", Path: "/api/v1/namespaces/ns/pods/p/log"}},
		"create": {"POST", "/apis/batch/v1/namespaces/ns/jobs", requestInfo{IsResource: true, Verb: "create",
			APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "jobs", Path: "/apis/batch/v1/namespaces/ns/jobs"}},
		"status update": {"PUT", "/apis/batch/v1/namespaces/ns/jobs/j/status", requestInfo{IsResource: true, Verb: "update",
			APIGroup: "batch", APIVersion: "v1", Namespace: "ns", Resource: "jobs", Name: "j", Subresource: "status",
			Path: "/apis/batch/v1/namespaces/ns/jobs/j/status"}},
		"patch": {"PATCH", "/api/v1/namespaces/ns/pods/p", requestInfo{IsResource: true, Verb: "patch", APIVersion: "v1",
			Namespace: "ns", Resource: "pods", Name: "p", Path: "/api/v1/namespaces/ns/pods/p"}},
		"delete": {"DELETE", "/api/v1/namespaces/ns/pods/p", requestInfo{IsResource: true, Verb: "delete", APIVersion: "v1",
			Namespace: "ns", Resource: "pods", Name: "p", Path: "/api/v1/namespaces/ns/pods/p"}},
		"deletecollection": {"DELETE", "/api/v1/namespaces/ns/pods", requestInfo{IsResource: true, Verb: "deletecollection",
			APIVersion: "v1", Namespace: "ns", Resource: "pods", Path: "/api/v1/namespaces/ns/pods"}},
		"a namespace": {"GET", "/api/v1/namespaces/ns", requestInfo{IsResource: true, Verb: "get", APIVersion: "v1",
			Namespace: "ns", Resource: "namespaces", Name: "ns", Path: "/api/v1/namespaces/ns"}},
		"a namespace's finalize": {"PUT", "/api/v1/namespaces/ns/finalize", requestInfo{IsResource: true, Verb: "update",
			APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", Subresource: "finalize", Path: "/api/v1/namespaces/ns/finalize"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := parseRequestInfo(httptest.NewRequest(tc.method, tc.target, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestRequestLogNamesTheUser serves one handler over TCP and over a unix
// socket, as the daemon does, and checks who the request log says asked.
func TestRequestLogNamesTheUser(t *testing.T) {
	hook := logtest.NewGlobal()
	defer hook.Reset()
	defer logrus.SetLevel(logrus.GetLevel())
	logrus.SetLevel(logrus.DebugLevel)
	h := withLogging(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))

	tcp := httptest.NewServer(h)
	defer tcp.Close()
	socket := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	unix := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	unix.Start()
	defer unix.Close()
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}

	tests := map[string]struct {
		client *http.Client
		base   string
		want   logrus.Fields
	}{
		"tcp": {http.DefaultClient, tcp.URL, logrus.Fields{"user": "system:anonymous", "verb": "list",
			"resource": "jobs", "group": "batch", "namespace": "ns", "code": http.StatusTeapot}},
		"unix socket": {overSocket, "http://skiffd", logrus.Fields{"user": "system:admin", "verb": "list",
			"resource": "jobs", "group": "batch", "namespace": "ns", "code": http.StatusTeapot}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hook.Reset()
			resp, err := tc.client.Get(tc.base + "/apis/batch/v1/namespaces/ns/jobs")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			entry := hook.LastEntry()
			if entry == nil || entry.Level != logrus.DebugLevel {
				t.Fatalf("no debug entry logged: %+v", entry)
			}
			got := logrus.Fields{}
			for k := range tc.want {
				got[k] = entry.Data[k]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want,+got):\n%s", diff)
			}
			if d, _ := entry.Data["duration"].(string); d == "" {
				t.Errorf("no duration: %+v", entry.Data)
			}
		})
	}
}
