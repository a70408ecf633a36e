package db

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestGetHandsOutCopies: a Get served from the decoded objects is a copy:
// what the caller changes in it is not what the next Get returns.
func TestGetHandsOutCopies(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("default", "p", map[string]string{"a": "1"}))
	first := mustGetPod(t, s, "default", "p")
	first.Labels["a"] = "changed"
	first.Spec.Containers[0].Image = "changed"
	again := mustGetPod(t, s, "default", "p")
	if again.Labels["a"] != "1" || again.Spec.Containers[0].Image != "busybox:1.35" {
		t.Fatalf("a second Get returned the first caller's changes: labels %v, image %q", again.Labels, again.Spec.Containers[0].Image)
	}
	if again.ResourceVersion != first.ResourceVersion || again.ResourceVersion == "" {
		t.Fatalf("resourceVersion %q, first %q", again.ResourceVersion, first.ResourceVersion)
	}
}

// TestGetAfterRolledBackWrite: a write that is rolled back assigned a
// resourceVersion that the next write assigns again, to other content; a
// Get after the commit must return the committed content, not what the
// rolled-back write read back.
func TestGetAfterRolledBackWrite(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("default", "p", nil))
	rollback := errors.New("roll back")
	var rolledBackRV string
	err := s.Write(func(tx *Tx) error {
		pod := newPod("default", "p", nil)
		pod.Spec.Containers[0].Image = "rolled-back"
		if err := tx.Update(Pods, pod); err != nil {
			return err
		}
		got, err := tx.Get(Pods, "default", "p")
		if err != nil {
			return err
		}
		if img := got.(*corev1.Pod).Spec.Containers[0].Image; img != "rolled-back" {
			t.Errorf("inside the write, Get returned image %q", img)
		}
		rolledBackRV = got.GetResourceVersion()
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("rolled-back write: %v", err)
	}
	pod := newPod("default", "p", nil)
	pod.Spec.Containers[0].Image = "committed"
	if err := s.Write(func(tx *Tx) error { return tx.Update(Pods, pod) }); err != nil {
		t.Fatal(err)
	}
	if pod.ResourceVersion != rolledBackRV {
		t.Fatalf("the test needs the commit to reuse the rolled-back resourceVersion: %s, %s", rolledBackRV, pod.ResourceVersion)
	}
	if img := mustGetPod(t, s, "default", "p").Spec.Containers[0].Image; img != "committed" {
		t.Fatalf("Get after the commit returned image %q, want %q", img, "committed")
	}
}

// TestDecodedCacheIsBounded: reading more objects than the cache keeps
// leaves it at its bound, and every read still right.
func TestDecodedCacheIsBounded(t *testing.T) {
	s, _ := openStore(t)
	err := s.Write(func(tx *Tx) error {
		for i := range maxDecoded + 50 {
			if err := tx.Create(Pods, newPod("default", podName(i), nil)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := range maxDecoded + 50 {
			if got := mustGetPod(t, s, "default", podName(i)); got.Name != podName(i) {
				t.Fatalf("round %d: Get %s returned %s", round, podName(i), got.Name)
			}
		}
	}
	if n := len(s.decoded.entries); n != maxDecoded {
		t.Fatalf("%d decoded objects kept, bound %d", n, maxDecoded)
	}
}

func podName(i int) string { return "p-" + strconv.Itoa(i) }

// TestDecodedCacheBoundsBytes: large objects are read right and never
// kept; objects under that size are kept up to the bytes' bound.
func TestDecodedCacheBoundsBytes(t *testing.T) {
	s, _ := openStore(t)
	const count, pad = 200, 40 << 10
	err := s.Write(func(tx *Tx) error {
		big := newPod("default", "big", nil)
		big.Annotations = map[string]string{"pad": strings.Repeat("b", maxDecodedObject)}
		if err := tx.Create(Pods, big); err != nil {
			return err
		}
		for i := range count {
			pod := newPod("default", podName(i), nil)
			pod.Annotations = map[string]string{"pad": strings.Repeat("p", pad)}
			if err := tx.Create(Pods, pod); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGetPod(t, s, "default", "big"); len(got.Annotations["pad"]) != maxDecodedObject {
		t.Fatalf("the large pod read back with %d bytes of padding", len(got.Annotations["pad"]))
	}
	if _, kept := s.decoded.entries[decodedKey{Pods.Name, "default", "big"}]; kept {
		t.Fatalf("a pod of over %d bytes was kept decoded", maxDecodedObject)
	}
	for i := range count {
		if got := mustGetPod(t, s, "default", podName(i)); len(got.Annotations["pad"]) != pad {
			t.Fatalf("%s read back with %d bytes of padding", podName(i), len(got.Annotations["pad"]))
		}
	}
	if s.decoded.bytes > maxDecodedBytes || len(s.decoded.entries) == 0 || len(s.decoded.entries) >= count {
		t.Fatalf("%d decoded objects kept, of %d bytes (bound %d)", len(s.decoded.entries), s.decoded.bytes, maxDecodedBytes)
	}
	sum := 0
	for _, e := range s.decoded.entries {
		sum += e.size
	}
	if sum != s.decoded.bytes || len(s.decoded.order) != len(s.decoded.entries) {
		t.Fatalf("bookkeeping: entries sum to %d bytes, counted %d; %d in order, %d kept", sum, s.decoded.bytes, len(s.decoded.order), len(s.decoded.entries))
	}
}
