package kube

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PrepareLease is kube's lease strategy on create (old nil) and update:
// the fields of the CoordinatedLeaderElection gate, Beta but off by default
// in v1.34, are dropped unless the stored Lease has them.
func PrepareLease(lease, old *coordinationv1.Lease) {
	if old == nil || old.Spec.Strategy == nil {
		lease.Spec.Strategy = nil
	}
	if old == nil || old.Spec.PreferredHolder == nil {
		lease.Spec.PreferredHolder = nil
	}
}

// ValidateLease is kube's ValidateLeaseSpec (the metadata aside): a
// positive duration and transitions not negative. (Strategy and
// preferredHolder, dropped with their gate off, are not validated.)
func ValidateLease(lease *coordinationv1.Lease) field.ErrorList {
	var errs field.ErrorList
	spec, fld := &lease.Spec, field.NewPath("spec")
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}

// ValidateLeaseUpdate is kube's ValidateLeaseUpdate (the metadata aside):
// the spec as on create.
func ValidateLeaseUpdate(lease, _ *coordinationv1.Lease) field.ErrorList {
	return ValidateLease(lease)
}
