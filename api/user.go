package api

import (
	"net"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// The identities skiff knows until the API authenticates its clients.
var (
	// socketAdmin sends the requests that come over the root-only unix
	// socket: only root can connect to it. Named as k3s names its admin.
	socketAdmin = authenticationv1.UserInfo{
		Username: "system:admin",
		Groups:   []string{"system:masters", "system:authenticated"},
	}
	// anonymous sends every other request, as kube-apiserver names a
	// client that presented no credentials.
	anonymous = authenticationv1.UserInfo{
		Username: "system:anonymous",
		Groups:   []string{"system:unauthenticated"},
	}
)

// requestUser is who sent r. It is the one place that decides: request
// logs and the admin-only endpoints ask it, and authentication will answer
// here.
func requestUser(r *http.Request) authenticationv1.UserInfo {
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr.Network() == "unix" {
		return socketAdmin
	}
	return anonymous
}

// isAdmin is whether user is in system:masters, the group kube-apiserver
// lets do anything.
func isAdmin(user authenticationv1.UserInfo) bool {
	for _, g := range user.Groups {
		if g == "system:masters" {
			return true
		}
	}
	return false
}
