//go:build integration

package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configUpdates is how many ConfigMap updates BenchmarkConfigMapUpdate times.
const configUpdates = 20

// BenchmarkConfigMapUpdate measures the time from a ConfigMap update (the
// moment before the PUT) to the new content seen by a running pod in its
// configMap volume: the container polls the file every 5 ms and prints a
// new value, and the log line's timestamp (written by the log driver as it
// reads the line) is when the pod saw it. Kubernetes' kubelet takes up to
// its sync period plus its cache's TTL (about a minute by default).
func BenchmarkConfigMapUpdate(b *testing.B) {
	for i := 0; i < b.N; i++ {
		lat := configMapUpdateLatency(b)
		p := percentiles(lat)
		b.ReportMetric(ms(p.median), "update-to-pod-median-ms")
		b.ReportMetric(ms(p.p90), "update-to-pod-p90-ms")
		fmt.Printf("ConfigMap update to a running pod's volume, %d updates: median %s p90 %s\n",
			len(lat), p.median.Round(time.Millisecond), p.p90.Round(time.Millisecond))
	}
}

func configMapUpdateLatency(b *testing.B) []time.Duration {
	s := newSkiffd(b)
	s.start()
	defer s.stop()
	ctx := context.Background()
	c := s.client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"v": "0"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pod := scriptPod("poller", `old=; while :; do n=$(cat /cfg/v); [ "$n" != "$old" ] && echo "$n"; old=$n; usleep 5000; done`)
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "live"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitPod(b, c, "poller", 60*time.Second, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	seen := followTimestamps(b, s, "poller")
	if v := <-seen; v.value != "0" {
		b.Fatalf("first line %q, want 0", v.value)
	}
	var lat []time.Duration
	for i := 1; i <= configUpdates; i++ {
		cm.Data["v"] = strconv.Itoa(i)
		start := time.Now()
		if _, err := c.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case v := <-seen:
			if v.value != cm.Data["v"] {
				b.Fatalf("the pod saw %q, want %q", v.value, cm.Data["v"])
			}
			lat = append(lat, v.at.Sub(start))
		case <-time.After(time.Minute):
			b.Fatalf("update %d not seen in a minute", i)
		}
	}
	return lat
}

// logLine is one line of a pod's log with its timestamp.
type logLine struct {
	at    time.Time
	value string
}

// followTimestamps streams the pod's log lines with their timestamps.
func followTimestamps(b *testing.B, s *skiffd, pod string) <-chan logLine {
	rc, err := s.client.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rc.Close() })
	out := make(chan logLine, 100)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			ts, value, _ := strings.Cut(sc.Text(), " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err == nil {
				out <- logLine{at: at, value: value}
			}
		}
	}()
	return out
}

// secretPods is how many pods BenchmarkSecretVolumePods starts.
const secretPods = 100

// BenchmarkSecretVolumePods starts 100 pods (8 created at a time, each
// sleeping) that all mount the same Secret, and the same 100 pods without
// the volume, each set against its own fresh skiffd, and reports for both:
// the time from the first POST until every pod runs, skiffd's anonymous
// resident memory then, and the node's shared memory (tmpfs) taken.
func BenchmarkSecretVolumePods(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, withSecret := range []bool{false, true} {
			name := map[bool]string{false: "without", true: "with-secret"}[withSecret]
			took, rss, shmem := secretVolumePods(b, withSecret)
			b.ReportMetric(took.Seconds(), name+"-start-s")
			b.ReportMetric(float64(rss)/(1<<20), name+"-skiffd-rss-MiB")
			b.ReportMetric(float64(shmem)/(1<<10), name+"-shmem-KiB")
			fmt.Printf("%d pods %s a Secret volume: all running in %s, skiffd RssAnon %.1f MiB, shmem +%d KiB\n",
				secretPods, name, took.Round(time.Millisecond), float64(rss)/(1<<20), shmem>>10)
		}
	}
}

func secretVolumePods(b *testing.B, withSecret bool) (took time.Duration, rss, shmem int64) {
	s := newSkiffd(b)
	s.start()
	defer s.stop()
	defer s.deleteEverything()
	ctx := context.Background()
	c := s.client
	if _, err := c.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		StringData: map[string]string{"token": strings.Repeat("t", 1024), "ca.crt": strings.Repeat("c", 2048)}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	shmemBefore := meminfo(b, "Shmem")
	start := time.Now()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := 0; i < secretPods; i++ {
		p := scriptPod(fmt.Sprintf("p%d", i), "exec sleep 3600")
		p.Spec.TerminationGracePeriodSeconds = ptr(int64(0))
		if withSecret {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "shared"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	waitFor(b, 10*time.Minute, "every pod running", func() (bool, error) {
		list, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == secretPods, nil
	})
	took = time.Since(start)
	return took, rssOf(b, s.cmd.Process.Pid), max(meminfo(b, "Shmem")-shmemBefore, 0)
}

// meminfo is a /proc/meminfo field, in bytes.
func meminfo(b *testing.B, field string) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/meminfo", field)
	return 0
}
