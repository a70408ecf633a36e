//go:build integration

package daemon_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEtcHostsManaged: every container of a pod on its own network, its
// init container and each restarted instance among them, sees the
// kubelet's /etc/hosts (the pod's IP and hostname, its hostAliases under
// kube's comment), before and after a kill -9 of skiffd; a container that
// mounts its own /etc/hosts sees that one.
func TestEtcHostsManaged(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client

	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "own-hosts"},
		Data: map[string]string{"hosts": "10.9.9.9\tmine\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := shPod("hosts", corev1.RestartPolicyAlways,
		`cat /etc/hosts; [ "$(cat /etc/hosts)" = "$(cat /data/init)" ] && echo same-as-init; sleep 1`,
		"cat /etc/hosts; sleep 3600")
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"alias.local", "alias"}}}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.35", Command: []string{"sh", "-c", "cat /etc/hosts > /data/init"},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "own", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "own-hosts"}}}})
	pod.Spec.Containers[1].VolumeMounts = append(pod.Spec.Containers[1].VolumeMounts,
		corev1.VolumeMount{Name: "own", MountPath: "/etc/hosts", SubPath: "hosts"})
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// restarted waits for c0 to restart more than after times, and returns
	// what its instance before the last printed.
	restarted := func(after int32) (int32, string) {
		t.Helper()
		var count int32
		waitPod(t, c, "hosts", 2*time.Minute, "c0 restarting", func(p *corev1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "c0" {
					count = cs.RestartCount
				}
			}
			return count > after
		})
		return count, readLog(t, s, "hosts", &corev1.PodLogOptions{Container: "c0", Previous: true})
	}
	count, log := restarted(0)
	got, err := c.CoreV1().Pods("default").Get(ctx, "hosts", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := got.Status.PodIP
	if ip == "" || ip == s.gateway {
		t.Fatalf("pod IP %q: not the pod's own", ip)
	}
	want := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n" +
		ip + "\thosts\n" +
		"\n# Entries added by HostAliases.\n" +
		"10.1.2.3\talias.local\talias\n"
	if log != want+"same-as-init\n" {
		t.Errorf("a restarted container's /etc/hosts:\n%s\nwant (and the init container's the same):\n%s", log, want)
	}
	if own := podLogOf(t, s, "hosts", "c1"); own != "10.9.9.9\tmine\n" {
		t.Errorf("the container mounting its own /etc/hosts sees %q", own)
	}

	s.kill()
	s.start()
	if _, log := restarted(count + 1); log != want+"same-as-init\n" {
		t.Errorf("after kill -9 of skiffd, a restarted container's /etc/hosts:\n%s\nwant:\n%s", log, want)
	}
}

// podLogOf is the current log of one container of a pod.
func podLogOf(t *testing.T, s *skiffd, pod, container string) string {
	t.Helper()
	return readLog(t, s, pod, &corev1.PodLogOptions{Container: container})
}

// TestEtcHostname: a container reads its pod's hostname in /etc/hostname,
// as containerd CRI mounts it (the busybox image has no such file of its
// own); a hostNetwork pod reads the node's, and a read-only root file
// system keeps the file read-only.
func TestEtcHostname(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	node, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	script := `cat /etc/hostname; (echo x >> /etc/hostname) 2>/dev/null && echo writable || echo read-only`
	own := shPod("own-net", corev1.RestartPolicyNever, script)
	own.Spec.Hostname = "named-host"
	hostNet := shPod("host-net", corev1.RestartPolicyNever, script)
	hostNet.Spec.HostNetwork = true
	readOnly := shPod("read-only", corev1.RestartPolicyNever, script)
	readOnly.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
	want := map[string]string{
		"own-net":   "named-host\nwritable\n",
		"host-net":  node + "\nwritable\n",
		"read-only": "read-only\nread-only\n",
	}
	for _, p := range []*corev1.Pod{own, hostNet, readOnly} {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, w := range want {
		waitPod(t, s.client, name, 2*time.Minute, "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := readLog(t, s, name, &corev1.PodLogOptions{}); got != w {
			t.Errorf("pod %s printed %q, want %q", name, got, w)
		}
	}
}
