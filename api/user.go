package api

import (
	"context"
	"net"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/skiff-sh/skiff/authn"
)

// socketAdmin sends the requests that come over the root-only unix socket:
// only root can connect to it. Named as k3s names its admin.
var socketAdmin = authenticationv1.UserInfo{
	Username: "system:admin",
	Groups:   []string{authn.GroupMasters, authn.GroupAuthenticated},
}

// userSlot holds who sent a request once authentication has decided, for
// the middleware outside it (the request log) as well as the handlers.
type userSlot struct {
	user authenticationv1.UserInfo
	set  bool
}

type userSlotKey struct{}

// withUserSlot gives every request an empty userSlot.
func withUserSlot(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userSlotKey{}, &userSlot{}))
}

// setRequestUser records user as r's sender.
func setRequestUser(r *http.Request, user authenticationv1.UserInfo) {
	if slot, ok := r.Context().Value(userSlotKey{}).(*userSlot); ok {
		slot.user, slot.set = user, true
	}
}

// requestUser is who sent r: the user authentication (and impersonation)
// settled on. It is the one place that decides: request logs, writes
// (escalation checks, field managers) and the admin-only endpoints ask it.
// Before authentication it is the transport's: the socket's admin, or
// anonymous.
func requestUser(r *http.Request) authenticationv1.UserInfo {
	if slot, ok := r.Context().Value(userSlotKey{}).(*userSlot); ok && slot.set {
		return slot.user
	}
	if isSocket(r) {
		return socketAdmin
	}
	return authn.Anonymous()
}

// isSocket is whether r came over the unix socket.
func isSocket(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && addr.Network() == "unix"
}

// isAdmin is whether user is in system:masters, the group kube-apiserver
// lets do anything.
func isAdmin(user authenticationv1.UserInfo) bool {
	return slices.Contains(user.Groups, authn.GroupMasters)
}
