package podworker

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/runtime"
)

// DefaultRuntimeHandlers are the RuntimeClass handlers every node
// configures: "runc", containerd's runc shim, as containerd's CRI
// configures it by default.
func DefaultRuntimeHandlers() map[string]string {
	return map[string]string{"runc": runtime.DefaultRuntimeType}
}

// podRuntimeType is the containerd runtime that runs the pod's containers:
// "" (containerd's default, runc) for a pod naming no RuntimeClass, else
// the runtime the node maps its class's handler to. A class that is gone,
// or whose handler the node does not configure, is the error the kubelet
// reports when it cannot make the pod's sandbox: the kubelet looks the
// class up (its runtimeclass manager), containerd's CRI the handler.
//
// A pod whose containers already ran (adopted after a restart) keeps the
// runtime they were created with, as a kubelet's pod keeps its sandbox
// whatever becomes of its class.
func (w *worker) podRuntimeType(pod *corev1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil {
		return "", nil
	}
	for _, instances := range w.adopted {
		for _, c := range instances {
			if c.RuntimeType != "" {
				return c.RuntimeType, nil
			}
		}
	}
	obj, err := w.m.cfg.Store.Get(db.RuntimeClasses, "", *name)
	if errors.Is(err, db.ErrNotFound) {
		// NOTE: the kubelet's lister names the resource in the singular.
		return "", apierrors.NewNotFound(nodev1.Resource("runtimeclass"), *name)
	}
	if err != nil {
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	handler := obj.(*nodev1.RuntimeClass).Handler
	if rt, ok := w.m.cfg.RuntimeHandlers[handler]; ok {
		return rt, nil
	}
	// NOTE: the kubelet shows containerd CRI's answer to RunPodSandbox as
	// its gRPC client prints it.
	return "", fmt.Errorf("rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for %q is configured", handler)
}
