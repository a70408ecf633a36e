package daemon

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestRouteKlog(t *testing.T) {
	var buf bytes.Buffer
	routeKlog(&buf)
	klog.Errorf("Error on socket receive: %s", "closed")
	klog.Flush()
	if n := strings.Count(buf.String(), "Error on socket receive: closed"); n != 1 {
		t.Errorf("a klog error came out %d times:\n%s", n, buf.String())
	}
}
