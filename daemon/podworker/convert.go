package podworker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/runtime"
)

// configError is a problem with the pod's own configuration, reported as
// the waiting reason CreateContainerConfigError.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// instanceID is the containerd ID of one container instance. It is derived
// from the pod UID, container name and attempt so that an instance created
// just before a crash is found again (and not created twice) on recovery.
func instanceID(uid, container string, attempt int) string {
	sum := sha256.Sum256([]byte(uid + "/" + container + "/" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:16])
}

// nodeInfo is what container configs need to know about this node.
type nodeInfo struct {
	name    string
	hostIP  string
	logRoot string
	cpu     resource.Quantity // allocatable, for resourceFieldRef without a limit
	memory  resource.Quantity
}

// containerConfig translates one container of pod into the runtime's
// description of instance number attempt.
func containerConfig(pod *corev1.Pod, c *corev1.Container, attempt int, node nodeInfo) (runtime.ContainerConfig, error) {
	env, err := resolveEnv(pod, c, node)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	lookup := envLookup(env)
	hostname := podHostname(pod)
	return runtime.ContainerConfig{
		ID:         instanceID(string(pod.UID), c.Name, attempt),
		Image:      c.Image,
		Command:    expandAll(c.Command, lookup),
		Args:       expandAll(c.Args, lookup),
		Env:        env,
		WorkingDir: c.WorkingDir,
		Hostname:   hostname,
		Labels: map[string]string{
			runtime.LabelManaged:       "true",
			runtime.LabelPodUID:        string(pod.UID),
			runtime.LabelPodName:       pod.Name,
			runtime.LabelPodNamespace:  pod.Namespace,
			runtime.LabelContainerName: c.Name,
			runtime.LabelAttempt:       strconv.Itoa(attempt),
		},
		LogPath: logs.Path(node.logRoot, pod.Namespace, pod.Name, string(pod.UID), c.Name, attempt),
	}, nil
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}

// envLookup looks names up in a "K=V" list, the last definition winning.
func envLookup(env []string) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// resolveEnv turns the container's env into "K=V" pairs in order, each value
// expanded against the variables defined before it, as the kubelet does.
func resolveEnv(pod *corev1.Pod, c *corev1.Container, node nodeInfo) ([]string, error) {
	env := make([]string, 0, len(c.Env))
	defined := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := defined[k]; return v, ok }
	for _, e := range c.Env {
		var value string
		switch {
		case e.ValueFrom == nil:
			value = expand(e.Value, lookup)
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldRefValue(pod, e.ValueFrom.FieldRef.FieldPath, node)
			if err != nil {
				return nil, err
			}
			value = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := resourceFieldValue(pod, c, e.ValueFrom.ResourceFieldRef, node)
			if err != nil {
				return nil, err
			}
			value = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			if optional(e.ValueFrom.ConfigMapKeyRef.Optional) {
				continue
			}
			return nil, &configError{fmt.Sprintf("configmap %q not found", e.ValueFrom.ConfigMapKeyRef.Name)}
		case e.ValueFrom.SecretKeyRef != nil:
			if optional(e.ValueFrom.SecretKeyRef.Optional) {
				continue
			}
			return nil, &configError{fmt.Sprintf("secret %q not found", e.ValueFrom.SecretKeyRef.Name)}
		}
		defined[e.Name] = value
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

func optional(b *bool) bool { return b != nil && *b }

// fieldRefValue resolves the downward API field paths the kubelet supports in env.
func fieldRefValue(pod *corev1.Pod, path string, node nodeInfo) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return node.name, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return node.hostIP, nil
	case "status.podIP", "status.podIPs":
		return podIP(pod, node), nil
	}
	return "", &configError{fmt.Sprintf("unsupported fieldRef path %q", path)}
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// resourceFieldValue resolves limits/requests the way the kubelet does: the
// value divided by the divisor and rounded up, with the node's allocatable
// standing in for an unset limit.
func resourceFieldValue(pod *corev1.Pod, own *corev1.Container, ref *corev1.ResourceFieldSelector, node nodeInfo) (string, error) {
	c := own
	if ref.ContainerName != "" && ref.ContainerName != own.Name {
		c = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
		if c == nil {
			return "", &configError{fmt.Sprintf("container %q not found for resourceFieldRef", ref.ContainerName)}
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = c.Resources.Limits
	case "requests":
		list = c.Resources.Requests
	default:
		return "", &configError{fmt.Sprintf("unsupported resourceFieldRef %q", ref.Resource)}
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok && kind == "limits" {
		switch name {
		case "cpu":
			q = node.cpu
		case "memory":
			q = node.memory
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == "cpu" {
		v := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
		if kind == "limits" && v == 0 {
			v = 1
		}
		return strconv.FormatInt(v, 10), nil
	}
	v := (q.Value() + divisor.Value() - 1) / divisor.Value()
	return strconv.FormatInt(v, 10), nil
}

// pullPolicy is the container's imagePullPolicy, defaulted as the API does.
func pullPolicy(c *corev1.Container) runtime.PullPolicy {
	switch c.ImagePullPolicy {
	case corev1.PullAlways:
		return runtime.PullAlways
	case corev1.PullNever:
		return runtime.PullNever
	case corev1.PullIfNotPresent:
		return runtime.PullIfNotPresent
	}
	ref := c.Image
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if !strings.Contains(ref, ":") || strings.HasSuffix(ref, ":latest") {
		if !strings.Contains(c.Image, "@") {
			return runtime.PullAlways
		}
	}
	return runtime.PullIfNotPresent
}
