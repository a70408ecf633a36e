package daemon

import (
	"io"

	"k8s.io/klog/v2"
)

// routeKlog sends what the Kubernetes libraries log through klog to w (the
// daemon gives logrus at Debug level) instead of stderr.
// NOTE: apimachinery's streaming code (exec, attach) reports every
// connection it sees closed at klog's error level, which would read as a
// failure of skiffd in the journal. klog writes a message to the outputs of
// its severity and of every lower one: only INFO's goes anywhere.
func routeKlog(w io.Writer) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	klog.SetOutputBySeverity("INFO", w)
}
