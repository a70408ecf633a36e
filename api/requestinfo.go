package api

import (
	"net/http"
	"strings"
)

// requestInfo is what a request asks, in the terms kube-apiserver's
// authorization, audit and metrics use: a verb on a resource, or a verb on
// a non-resource path such as /version.
type requestInfo struct {
	// IsResource is false for non-resource paths (/version, /healthz,
	// discovery roots, skiff's own endpoints).
	IsResource bool
	// Verb is get, list, watch, create, update, patch, delete or
	// deletecollection for resources; the lower-case HTTP method otherwise.
	Verb        string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Path is the request's path, for non-resource requests.
	Path string
}

// namespaceSubresources are the subresources of a namespace itself:
// /api/v1/namespaces/{name}/status is the namespace's, not a resource
// called "status" in it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo reads r as kube-apiserver's RequestInfoFactory does:
// /api/{version}/… and /apis/{group}/{version}/… are resource requests,
// with an optional namespaces/{ns}/ and the legacy watch/ prefix; a GET
// without a name is a list (a watch with ?watch=true), a DELETE without
// one a deletecollection.
func parseRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.APIVersion, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.APIGroup, info.APIVersion, parts = parts[1], parts[2], parts[3:]
	default:
		return info
	}
	info.IsResource = true
	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	}
	if parts[0] == "watch" {
		info.Verb, parts = "watch", parts[1:]
	}
	if len(parts) > 0 && parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	if len(parts) > 0 {
		info.Resource = parts[0]
	}
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if info.Name == "" {
		switch info.Verb {
		case "get":
			info.Verb = "list"
		case "delete":
			info.Verb = "deletecollection"
		}
	}
	if info.Verb == "list" && isWatchParam(r) {
		info.Verb = "watch"
	}
	return info
}

// isWatchParam is whether ?watch= asks for a watch: any value but false
// or 0, the empty one included, as kube decodes the bool parameter.
func isWatchParam(r *http.Request) bool {
	v, ok := r.URL.Query()["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

// resourceName is "pods/log" style: the resource and its subresource.
func (i requestInfo) resourceName() string {
	if i.Subresource == "" {
		return i.Resource
	}
	return i.Resource + "/" + i.Subresource
}
