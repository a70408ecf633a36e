// Package logs owns container log files: their kubelet-style layout on disk,
// the log driver process that the containerd shim starts for each container
// (it frames the container's stdout and stderr as CRI log lines), and the
// reader behind GET /api/v1/namespaces/{ns}/pods/{pod}/log (tail, since,
// limitBytes, timestamps and follow across container attempts).
//
// The writer and readers coordinate through flock(2) on the log file: the
// driver holds an exclusive lock for its whole life, so a reader that can take
// a shared lock knows the file is complete.
package logs
