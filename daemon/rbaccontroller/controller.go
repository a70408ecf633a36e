// Package rbaccontroller keeps kube's RBAC defaults in the store: at start
// it puts back the default cluster roles and bindings (kube-apiserver's
// rbac/bootstrap-roles hook), and while skiffd runs it fills every
// ClusterRole that has an aggregationRule with the rules of the roles its
// selectors pick (kube-controller-manager's clusterrole-aggregation
// controller). It talks only to the store, on package controller's
// skeleton.
package rbaccontroller

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// Config configures the aggregation controller.
type Config struct {
	Store *db.Store
}

// Controller fills aggregated ClusterRoles. Create it with New, start it
// with Run.
type Controller struct {
	store *db.Store
	loop  *controller.Loop[string] // keys: names of ClusterRoles with an aggregationRule
	// aggregated are the names of the ClusterRoles with an aggregationRule,
	// kept by the watch handler (one goroutine).
	aggregated map[string]bool
}

// New returns an aggregation controller.
func New(cfg Config) *Controller {
	c := &Controller{store: cfg.Store, aggregated: map[string]bool{}}
	c.loop = controller.New(controller.Config[string]{Name: "clusterrole-aggregation", Store: cfg.Store,
		Watches: []controller.Watch{{Resource: db.ClusterRoles, OnEvent: c.onEvent}}, Sync: c.sync})
	return c
}

// Run follows ClusterRoles until ctx ends (nil) or the store closes.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// onEvent: any change of any ClusterRole (its labels, its rules) may
// change what an aggregated role gathers, so every aggregated role is
// synced again, as kube's controller does.
func (c *Controller) onEvent(ev db.Event) {
	role := ev.Object.(*rbacv1.ClusterRole)
	switch {
	case ev.Type == watch.Deleted || role.AggregationRule == nil:
		delete(c.aggregated, role.Name)
	default:
		c.aggregated[role.Name] = true
	}
	for name := range c.aggregated {
		c.loop.Add(name)
	}
}

// sync writes an aggregated role's rules when they differ from what its
// selectors gather.
func (c *Controller) sync(_ context.Context, name string) error {
	return c.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.ClusterRoles, "", name)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		role := obj.(*rbacv1.ClusterRole)
		if role.AggregationRule == nil {
			return nil
		}
		all, err := tx.List(db.ClusterRoles, "", nil)
		if err != nil {
			return err
		}
		roles := make([]*rbacv1.ClusterRole, len(all))
		for i, o := range all {
			roles[i] = o.(*rbacv1.ClusterRole)
		}
		rules := rbac.AggregatedRules(role, roles)
		if equality.Semantic.DeepEqual(rules, role.Rules) {
			return nil
		}
		role = role.DeepCopy()
		role.Rules = rules
		if err := tx.Update(db.ClusterRoles, role); err != nil {
			return fmt.Errorf("aggregating clusterrole %s: %w", name, err)
		}
		return nil
	})
}
