package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/daemon/events"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// DefaultNodeLeaseDuration is the kubelet's nodeLeaseDurationSeconds: how
// long the node's Lease holds without a renewal.
const DefaultNodeLeaseDuration = 40 * time.Second

// NodeLeaseRenewInterval is how often the kubelet renews a lease of
// duration d: a quarter of it (nodeLeaseRenewIntervalFraction), 10 s by
// default.
func NodeLeaseRenewInterval(d time.Duration) time.Duration { return d / 4 }

// RunNodeLease is the kubelet's heartbeat: every NodeLeaseRenewInterval of
// duration until ctx ends, it renews Lease kube-node-lease/<node>
// (creating it when missing, owned by the Node), so that `kubectl describe
// node` and the node lifecycle controller see the node alive.
//
// NOTE: it also registers the Node again when a client deleted it. The
// kubelet registers once per start and then only fails to update a deleted
// Node; skiff's node is always this machine, and its pods, its lease and
// kubectl need the object, so it comes back within one renew interval (as
// after a kubelet restart, with the registration's events).
func RunNodeLease(ctx context.Context, store *db.Store, n Node, f NodeFacts, b *events.Broadcaster, duration time.Duration) error {
	t := time.NewTicker(NodeLeaseRenewInterval(duration))
	defer t.Stop()
	for {
		if err := heartbeat(store, n, f, b, duration); err != nil {
			if errors.Is(err, db.ErrClosed) {
				return fmt.Errorf("renewing the node lease: %w", err)
			}
			logrus.WithError(err).Error("renewing the node lease")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// heartbeat makes sure the Node exists and renews its Lease.
func heartbeat(store *db.Store, n Node, f NodeFacts, b *events.Broadcaster, duration time.Duration) error {
	if _, err := store.Get(db.Nodes, "", n.Name); errors.Is(err, db.ErrNotFound) {
		logrus.WithField("node", n.Name).Info("node deleted by a client: registering it again")
		created, err := register(store, n, f)
		if err != nil {
			return err
		}
		if created {
			if err := recordRegistration(store, n, b); err != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	return store.Write(func(tx *db.Tx) error {
		return renewLease(tx, n.Name, duration, metav1.NowMicro())
	})
}

// renewLease writes the node's Lease with renewTime now, creating it (in a
// namespace that exists and is not terminating, as the API would admit it)
// when missing. Its ownerReference follows the Node's uid: a Node
// registered again owns the lease it finds.
func renewLease(tx *db.Tx, node string, duration time.Duration, now metav1.MicroTime) error {
	var owner []metav1.OwnerReference
	if obj, err := tx.Get(db.Nodes, "", node); err == nil {
		owner = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: obj.GetUID()}}
	} else if !errors.Is(err, db.ErrNotFound) {
		return err
	}
	obj, err := tx.Get(db.Leases, corev1.NamespaceNodeLease, node)
	if errors.Is(err, db.ErrNotFound) {
		ns, err := tx.Get(db.Namespaces, "", corev1.NamespaceNodeLease)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return err
		}
		namespace, _ := ns.(*corev1.Namespace)
		if err := kube.AdmitNamespace(namespace, corev1.NamespaceNodeLease, coordinationv1.Resource("leases"), node); err != nil {
			return err
		}
		return tx.Create(db.Leases, nodeLease(node, duration, now, owner))
	}
	if err != nil {
		return err
	}
	lease := obj.(*coordinationv1.Lease)
	want := nodeLease(node, duration, now, owner)
	lease.Spec.HolderIdentity = want.Spec.HolderIdentity
	lease.Spec.LeaseDurationSeconds = want.Spec.LeaseDurationSeconds
	lease.Spec.RenewTime = want.Spec.RenewTime
	if owner != nil {
		lease.OwnerReferences = owner
	}
	return tx.Update(db.Leases, lease)
}

// nodeLease is the Lease the kubelet's lease controller writes: held by
// the node, for duration, renewed now, owned by the Node when it exists.
func nodeLease(node string, duration time.Duration, now metav1.MicroTime, owner []metav1.OwnerReference) *coordinationv1.Lease {
	seconds := int32(duration / time.Second)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease, OwnerReferences: owner},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &node,
			LeaseDurationSeconds: &seconds,
			RenewTime:            &now,
		},
	}
}
