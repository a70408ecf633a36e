// Package kube holds Kubernetes' rules about objects, each written once:
// the pod, Job and Service strategies (defaulting, validation, what an
// update keeps), namespace admission, and the facts every component reads
// off a pod the same way. It is a leaf: it imports k8s.io/api and
// apimachinery, and nothing of skiff.
package kube
