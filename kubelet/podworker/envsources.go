package podworker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// sourceReader reads the ConfigMaps and Secrets of a pod's namespace
// (sources, or a test's fake). A missing object is a NotFound error.
type sourceReader interface {
	configMap(ns, name string) (*corev1.ConfigMap, error)
	secret(ns, name string) (*corev1.Secret, error)
	// token is the ServiceAccount token of a projected volume's source.
	token(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) (string, error)
	// services are the Services a container's environment is made of:
	// the "kubernetes" Service of the default namespace and, when links,
	// every Service of namespace ns.
	services(ns string, links bool) ([]*corev1.Service, error)
}

// envBuilder collects a container's variables in the order they are first
// defined; a later definition replaces the value of an earlier one, as the
// kubelet's map of variables does.
type envBuilder struct {
	names  []string
	values map[string]string
}

func (b *envBuilder) set(name, value string) {
	if _, ok := b.values[name]; !ok {
		b.names = append(b.names, name)
	}
	b.values[name] = value
}

func (b *envBuilder) lookup(name string) (string, bool) { v, ok := b.values[name]; return v, ok }

func (b *envBuilder) list() []string {
	out := make([]string, len(b.names))
	for i, n := range b.names {
		out[i] = n + "=" + b.values[n]
	}
	return out
}

// sourceError wraps an error reading a pod's sources as the waiting reason
// CreateContainerConfigError shows it.
func sourceError(err error) error {
	if err == nil {
		return nil
	}
	var ce *configError
	if errors.As(err, &ce) {
		return err
	}
	return &configError{err.Error()}
}

// addEnvFrom adds the variables of the container's envFrom sources, each
// key with the source's prefix, as the kubelet's makeEnvironmentVariables
// does: a missing optional source adds nothing, a missing required one
// fails with the kubelet's NotFound message (`configmap "x" not found`).
//
// NOTE: with RelaxedEnvironmentVariableValidation (GA in 1.34) the kubelet
// no longer skips keys that are not C identifiers, nor reports them in an
// InvalidEnvironmentVariableNames event: every key becomes a variable.
func addEnvFrom(b *envBuilder, pod *corev1.Pod, c *corev1.Container, src sourceReader) error {
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := src.configMap(pod.Namespace, from.ConfigMapRef.Name)
			if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
				continue
			}
			if err != nil {
				return sourceError(err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := src.secret(pod.Namespace, from.SecretRef.Name)
			if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
				continue
			}
			if err != nil {
				return sourceError(err)
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.set(from.Prefix+k, data[k])
		}
	}
	return nil
}

// configMapKeyValue resolves valueFrom.configMapKeyRef; skip is true for
// an optional reference to a missing ConfigMap or key.
func configMapKeyValue(pod *corev1.Pod, ref *corev1.ConfigMapKeySelector, src sourceReader) (value string, skip bool, err error) {
	cm, err := src.configMap(pod.Namespace, ref.Name)
	if apierrors.IsNotFound(err) && optional(ref.Optional) {
		return "", true, nil
	}
	if err != nil {
		return "", false, sourceError(err)
	}
	value, ok := cm.Data[ref.Key]
	if !ok {
		if optional(ref.Optional) {
			return "", true, nil
		}
		return "", false, &configError{fmt.Sprintf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)}
	}
	return value, false, nil
}

// secretKeyValue resolves valueFrom.secretKeyRef likewise.
func secretKeyValue(pod *corev1.Pod, ref *corev1.SecretKeySelector, src sourceReader) (value string, skip bool, err error) {
	s, err := src.secret(pod.Namespace, ref.Name)
	if apierrors.IsNotFound(err) && optional(ref.Optional) {
		return "", true, nil
	}
	if err != nil {
		return "", false, sourceError(err)
	}
	raw, ok := s.Data[ref.Key]
	if !ok {
		if optional(ref.Optional) {
			return "", true, nil
		}
		return "", false, &configError{fmt.Sprintf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)}
	}
	return string(raw), false, nil
}

// waitConfigRetry waits before the next try of a container that could not
// be configured (CreateContainerConfigError): the kubelet retries at its
// pod worker's fixed back-off (10 s, the base here) rather than doubling,
// and at once when the pod changes; skiff retries at once when a ConfigMap
// or Secret of the pod's namespace or the pod's labels or annotations
// change, so that a pod starts as soon as what it needs exists.
func (r *containerRun) waitConfigRetry(ctx context.Context) bool {
	sources, meta := r.w.m.sources.changed(r.pod.Namespace), r.metaChanged
	wake, done := make(chan struct{}), make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sources:
		case <-meta:
		case <-done:
			return
		}
		close(wake)
	}()
	return r.sleepOrWake(ctx, r.w.m.cfg.RestartBackoffBase, wake)
}
