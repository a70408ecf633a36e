package rbaccontroller

import (
	"context"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
	"github.com/skiff-sh/skiff/rbac/rbacstore"
)

// Cache is RBAC's view of the store kept in memory, as kube's RBAC
// authorizer reads informer caches: every request is authorized without a
// store read or a decode. Like kube's, it follows the store: a binding
// just written takes effect within moments, not in the write's answer.
// Before its first lists are done it reads the store. Safe for concurrent
// use; start it with Run.
type Cache struct {
	store *db.Store
	loop  *controller.Loop[string]

	mu     sync.RWMutex
	listed int // Watches whose list was handed in; synced at 4
	// byNamespace holds Roles and RoleBindings, cluster holds the
	// cluster-scoped kinds; keys are names.
	roles        map[string]map[string]*rbacv1.Role
	clusterRoles map[string]*rbacv1.ClusterRole
	rbs          map[string][]*rbacv1.RoleBinding // by namespace, rebuilt on change
	crbs         []*rbacv1.ClusterRoleBinding     // rebuilt on change
}

var _ rbac.Source = (*Cache)(nil)

// NewCache returns a Cache of store's roles and bindings.
func NewCache(store *db.Store) *Cache {
	c := &Cache{store: store, roles: map[string]map[string]*rbacv1.Role{},
		clusterRoles: map[string]*rbacv1.ClusterRole{}, rbs: map[string][]*rbacv1.RoleBinding{}}
	watch := func(r db.Resource) controller.Watch {
		return controller.Watch{Resource: r, OnList: c.onList, OnEvent: func(ev db.Event) { c.apply(ev.Type, ev.Object) }}
	}
	c.loop = controller.New(controller.Config[string]{Name: "rbac cache", Store: store,
		Watches: []controller.Watch{watch(db.Roles), watch(db.ClusterRoles), watch(db.RoleBindings), watch(db.ClusterRoleBindings)}})
	return c
}

// Run follows the store until ctx ends (nil) or the store closes.
func (c *Cache) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Cache) onList(objs []db.Object) {
	for _, o := range objs {
		c.apply(watch.Added, o)
	}
	c.mu.Lock()
	c.listed++
	c.mu.Unlock()
}

// synced reports whether every kind was listed; the caller holds mu.
func (c *Cache) synced() bool { return c.listed == 4 }

// apply records one change.
func (c *Cache) apply(t watch.EventType, obj db.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gone := t == watch.Deleted
	switch o := obj.(type) {
	case *rbacv1.Role:
		byName := c.roles[o.Namespace]
		if byName == nil {
			byName = map[string]*rbacv1.Role{}
			c.roles[o.Namespace] = byName
		}
		if gone {
			delete(byName, o.Name)
		} else {
			byName[o.Name] = o
		}
	case *rbacv1.ClusterRole:
		if gone {
			delete(c.clusterRoles, o.Name)
		} else {
			c.clusterRoles[o.Name] = o
		}
	case *rbacv1.RoleBinding:
		c.rbs[o.Namespace] = replaced(c.rbs[o.Namespace], o, gone, func(b *rbacv1.RoleBinding) string { return b.Name })
	case *rbacv1.ClusterRoleBinding:
		c.crbs = replaced(c.crbs, o, gone, func(b *rbacv1.ClusterRoleBinding) string { return b.Name })
	}
}

// replaced is a new slice of list with obj put in (or, gone, taken out)
// by name: readers keep the slice they were handed.
func replaced[T any](list []T, obj T, gone bool, name func(T) string) []T {
	out := make([]T, 0, len(list)+1)
	for _, have := range list {
		if name(have) != name(obj) {
			out = append(out, have)
		}
	}
	if !gone {
		out = append(out, obj)
	}
	return out
}

// read answers from the store while the cache has not listed yet.
func (c *Cache) read(fn func(rbac.Source) error) (bool, error) {
	c.mu.RLock()
	ok := c.synced()
	c.mu.RUnlock()
	if ok {
		return false, nil
	}
	return true, c.store.Read(func(tx *db.Tx) error { return fn(rbacstore.TxSource{Tx: tx}) })
}

// ClusterRoleBindings returns every ClusterRoleBinding.
func (c *Cache) ClusterRoleBindings() (out []*rbacv1.ClusterRoleBinding, err error) {
	if read, err := c.read(func(s rbac.Source) (e error) { out, e = s.ClusterRoleBindings(); return e }); read {
		return out, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.crbs, nil
}

// RoleBindings returns the RoleBindings of namespace.
func (c *Cache) RoleBindings(namespace string) (out []*rbacv1.RoleBinding, err error) {
	if read, err := c.read(func(s rbac.Source) (e error) { out, e = s.RoleBindings(namespace); return e }); read {
		return out, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rbs[namespace], nil
}

// ClusterRole returns a ClusterRole, or kube's NotFound.
func (c *Cache) ClusterRole(name string) (out *rbacv1.ClusterRole, err error) {
	if read, err := c.read(func(s rbac.Source) (e error) { out, e = s.ClusterRole(name); return e }); read {
		return out, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r, ok := c.clusterRoles[name]; ok {
		return r, nil
	}
	return nil, rbacstore.NotFound("clusterrole", name)
}

// Role returns a Role, or kube's NotFound.
func (c *Cache) Role(namespace, name string) (out *rbacv1.Role, err error) {
	if read, err := c.read(func(s rbac.Source) (e error) { out, e = s.Role(namespace, name); return e }); read {
		return out, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r, ok := c.roles[namespace][name]; ok {
		return r, nil
	}
	return nil, rbacstore.NotFound("role", name)
}
