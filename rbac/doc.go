// Package rbac decides what a user may do as Kubernetes' RBAC authorizer
// does: the rules of the (Cluster)Roles that (Cluster)RoleBindings give a
// user, matched against a request's verb, API group, resource,
// subresource, name or non-resource path. It also holds kube's default
// cluster roles and bindings, the aggregation of aggregated ClusterRoles
// and the escalation check of role and binding writes. It reads roles and
// bindings through a Source and knows nothing of the store or HTTP.
package rbac
