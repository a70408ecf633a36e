package podworker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// configError is a problem with the pod's own configuration, reported as
// the waiting reason CreateContainerConfigError.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// InstanceID is the containerd ID of one container instance. It is derived
// from the pod UID, container name and attempt so that an instance created
// just before a crash is found again (and not created twice) on recovery.
func InstanceID(uid, container string, attempt int) string {
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
	storage resource.Quantity // allocatable ephemeral-storage
}

// containerConfig translates one container of pod into the runtime's
// description of instance number attempt, on an image described by img: it
// gathers what the translation needs from the node, the pod's volumes and
// sandbox, its ConfigMaps and Secrets (containerInputs), then translates
// (translateContainer).
func (w *worker) containerConfig(pod *corev1.Pod, c *corev1.Container, attempt int, img runtime.ImageInfo) (runtime.ContainerConfig, error) {
	in, err := w.containerInputs(pod, c, attempt, img)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	return translateContainer(pod, c, in)
}

// containerInputs is what the translation of one container instance takes
// besides the pod and the container: all of it read or prepared beforehand,
// so that translateContainer does no I/O, as the kubelet's
// GenerateRunContainerOptions prepares what its generateContainerConfig
// translates.
type containerInputs struct {
	attempt int
	node    nodeInfo
	image   runtime.ImageInfo
	// env is the container's environment, resolved ("K=V", envFrom then
	// env, each value expanded).
	env []string
	// mounts are the container's volumeMounts as bind mounts of the pod's
	// volumes (subPaths prepared), then its termination log.
	mounts []runtime.Mount
	// sandbox is the pod's network; nil when the node runs no pod network
	// (the container keeps the pod's hostname and the runtime's defaults).
	sandbox *network.Sandbox
	seccomp seccompConfig
	// runtimeType is the pod's containerd runtime ("" = the default).
	runtimeType string
}

// containerInputs resolves the container's environment (reading its
// ConfigMaps and Secrets), prepares its volume mounts (subPaths) and its
// termination log file, and takes the node's facts and the pod's sandbox.
func (w *worker) containerInputs(pod *corev1.Pod, c *corev1.Container, attempt int, img runtime.ImageInfo) (containerInputs, error) {
	in := containerInputs{attempt: attempt, node: w.m.node, image: img,
		seccomp: seccompConfig{root: w.m.cfg.SeccompRoot, runtimeDefault: w.m.cfg.SeccompDefault}}
	var err error
	if in.env, err = resolveEnv(pod, c, in.node, w.m.sources); err != nil {
		return in, err
	}
	if in.mounts, err = volumeMounts(c, w.volumes, envLookup(in.env)); err != nil {
		return in, err
	}
	if m, ok, err := w.terminationLogMount(pod, c, attempt); err != nil {
		return in, err
	} else if ok {
		in.mounts = append(in.mounts, m)
	}
	in.sandbox = w.podSandbox()
	in.runtimeType = w.runtimeType
	return in, nil
}

// translateContainer is the runtime's description of one instance of
// container c of pod: a pure function of its arguments. A problem with the
// pod's own configuration (runAsNonRoot against a root image, a bad seccomp
// profile) is a *configError.
func translateContainer(pod *corev1.Pod, c *corev1.Container, in containerInputs) (runtime.ContainerConfig, error) {
	lookup := envLookup(in.env)
	limits := containerLimits(c)
	cfg := runtime.ContainerConfig{
		ID:         InstanceID(string(pod.UID), c.Name, in.attempt),
		Image:      c.Image,
		Command:    expandAll(c.Command, lookup),
		Args:       expandAll(c.Args, lookup),
		Env:        in.env,
		WorkingDir: c.WorkingDir,
		Hostname:   podHostname(pod),
		Labels: map[string]string{
			runtime.LabelManaged:       "true",
			runtime.LabelPodUID:        string(pod.UID),
			runtime.LabelPodName:       pod.Name,
			runtime.LabelPodNamespace:  pod.Namespace,
			runtime.LabelContainerName: c.Name,
			runtime.LabelAttempt:       strconv.Itoa(in.attempt),
		},
		LogPath:     kube.ContainerLogPath(in.node.logRoot, pod, c.Name, in.attempt),
		MemoryLimit: limits.memory,
		CPUShares:   limits.shares,
		CPUQuota:    limits.quota,
		CPUPeriod:   limits.period,
		Stdin:       c.Stdin,
		TTY:         c.TTY,
		Mounts:      in.mounts,
	}
	applySandbox(&cfg, in.sandbox)
	cfg.RuntimeType = in.runtimeType
	if err := applySecurity(&cfg, pod, c, in.image, in.seccomp); err != nil {
		return runtime.ContainerConfig{}, err
	}
	return cfg, nil
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

// resolveEnv turns the container's envFrom and env into "K=V" pairs,
// each env value expanded against the variables defined before it, as the
// kubelet's makeEnvironmentVariables does; ConfigMaps and Secrets are read
// through src.
func resolveEnv(pod *corev1.Pod, c *corev1.Container, node nodeInfo, src sourceReader) ([]string, error) {
	b := &envBuilder{values: map[string]string{}}
	// The Services' variables come first: the container's own
	// definitions override them (and may refer to them).
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	svcs, err := src.services(pod.Namespace, links)
	if err != nil {
		return nil, err
	}
	for _, e := range kube.ServiceLinkEnv(pod.Namespace, links, svcs) {
		b.set(e.Name, e.Value)
	}
	if err := addEnvFrom(b, pod, c, src); err != nil {
		return nil, err
	}
	for _, e := range c.Env {
		value, skip, err := envValue(pod, c, e, node, b.lookup, src)
		if err != nil {
			return nil, err
		}
		if !skip {
			b.set(e.Name, value)
		}
	}
	return b.list(), nil
}

// envValue resolves one env entry; skip is true for an optional reference
// to something missing.
func envValue(pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar, node nodeInfo, lookup func(string) (string, bool),
	src sourceReader) (value string, skip bool, err error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return expand(e.Value, lookup), false, nil
	case from.FieldRef != nil:
		v, err := fieldRefValue(pod, from.FieldRef.FieldPath, node)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, c, from.ResourceFieldRef, node)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		return configMapKeyValue(pod, from.ConfigMapKeyRef, src)
	case from.SecretKeyRef != nil:
		return secretKeyValue(pod, from.SecretKeyRef, src)
	}
	return "", false, &configError{fmt.Sprintf("unsupported valueFrom of env %q", e.Name)}
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
	case "status.podIP":
		return podIP(pod, node), nil
	case "status.podIPs":
		return podIPs(pod, node), nil
	}
	return "", &configError{fmt.Sprintf("unsupported fieldRef path %q", path)}
}

// podIPs is status.podIPs in the downward API: the pod's IPs, comma-separated.
func podIPs(pod *corev1.Pod, node nodeInfo) string {
	if len(pod.Status.PodIPs) == 0 {
		return podIP(pod, node)
	}
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return strings.Join(ips, ",")
}

// subscript parses `prefix['key']`.
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// resourceFieldValue resolves limits/requests the way the kubelet does
// (ExtractContainerResourceValue after defaultPodLimitsForDownwardAPI):
// the value divided by the divisor and rounded up, with the node's
// allocatable standing in for an unset limit and requests defaulting to
// the limits.
func resourceFieldValue(pod *corev1.Pod, own *corev1.Container, ref *corev1.ResourceFieldSelector, node nodeInfo) (string, error) {
	c := own
	if ref.ContainerName != "" && ref.ContainerName != own.Name {
		if c = findContainer(pod, ref.ContainerName); c == nil {
			return "", &configError{fmt.Sprintf("container %q not found for resourceFieldRef", ref.ContainerName)}
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var q resource.Quantity
	switch kind {
	case "limits":
		def := resource.Quantity{}
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU:
			def = node.cpu
		case corev1.ResourceMemory:
			def = node.memory
		case corev1.ResourceEphemeralStorage:
			def = node.storage
		}
		q = quantityOr(c.Resources.Limits, corev1.ResourceName(name), def)
	case "requests":
		q = kube.ContainerRequests(c)[corev1.ResourceName(name)]
	default:
		return "", &configError{fmt.Sprintf("unsupported container resource : %v", ref.Resource)}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(ceilDiv(q.MilliValue(), divisor.MilliValue()), 10), nil
	}
	return strconv.FormatInt(ceilDiv(q.Value(), divisor.Value()), 10), nil
}

// ceilDiv is a/b rounded up, for a ≥ 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
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
