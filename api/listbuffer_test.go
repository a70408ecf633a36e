package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestListBuffer(t *testing.T) {
	for name, tc := range map[string]struct {
		n          int
		wantPooled bool
	}{
		"empty":           {n: 0},
		"small":           {n: minPooledList - 1},
		"smallest pooled": {n: minPooledList, wantPooled: true},
		"largest pooled":  {n: maxPooledList, wantPooled: true},
		"too large":       {n: maxPooledList + 1},
	} {
		t.Run(name, func(t *testing.T) {
			var l listBuffer
			buf := l.get(tc.n)
			if len(buf) != 0 || cap(buf) < tc.n {
				t.Errorf("get(%d): len %d cap %d, want len 0 and cap ≥ %d", tc.n, len(buf), cap(buf), tc.n)
			}
			if got := l.pooled != nil; got != tc.wantPooled {
				t.Errorf("get(%d) pooled: %v, want %v", tc.n, got, tc.wantPooled)
			}
			l.release()
			if l.pooled != nil {
				t.Error("still holding a pooled buffer after release")
			}
		})
	}
}

// TestSpareListBuffer: a large list's buffer serves the next large list,
// unless a GC came between them.
func TestSpareListBuffer(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var first, second listBuffer
	a := first.get(minPooledList)
	first.release()
	if b := second.get(minPooledList); &a[:1][0] != &b[:1][0] {
		t.Error("the second list did not reuse the first one's buffer")
	}
	second.release()
	runtime.GC()
	if spareList.buf.Value() != nil {
		t.Error("the spare buffer outlived a GC")
	}
}

// TestPooledListsServeTheirOwnItems: lists large enough to copy their
// objects into pooled buffers, served at once and one after the other,
// each hold exactly their own objects, items larger than the response
// writer's buffer included.
func TestPooledListsServeTheirOwnItems(t *testing.T) {
	ts := newTestServer(t)
	// Two namespaces of 15 ConfigMaps of 80 KB: 1.2 MB each (pooled), each
	// item larger than writeBody's 64 KB buffer.
	for _, ns := range []string{"a", "b"} {
		if resp := ts.do(t, http.MethodPost, "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`); resp.code != http.StatusCreated {
			t.Fatalf("creating namespace %s: %d %s", ns, resp.code, resp.body)
		}
		for i := range 15 {
			data := strings.Repeat(ns+strconv.Itoa(i%10), 40<<10)
			body := fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"data":{"k":%q}}`, i, data)
			if resp := ts.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", body); resp.code != http.StatusCreated {
				t.Fatalf("creating a ConfigMap in %s: %d %s", ns, resp.code, resp.body)
			}
		}
	}
	want := map[string][]byte{}
	for _, ns := range []string{"a", "b"} {
		objs, rv, err := ts.store.List(configMapResource.store, ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(configMapResource.newList(objs, metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)})); err != nil {
			t.Fatal(err)
		}
		if buf.Len() < minPooledList {
			t.Fatalf("the list of %s is %d bytes: too small to be pooled", ns, buf.Len())
		}
		want[ns] = buf.Bytes()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				ns := []string{"a", "b"}[(g+i)%2]
				got, err := get(ts.URL + "/api/v1/namespaces/" + ns + "/configmaps")
				if err == nil && !bytes.Equal(got, want[ns]) {
					err = fmt.Errorf("the list of %s: %d bytes, not the %d encoded from its objects", ns, len(got), len(want[ns]))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// get is the body of a 200 answer to a GET of url.
func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return body, err
}
