// Package logs owns container log files: their kubelet-style layout on disk,
// the log driver process that the containerd shim starts for each container
// (it frames the container's stdout and stderr as CRI log lines), and the
// reader behind GET /api/v1/namespaces/{ns}/pods/{pod}/log (tail, since,
// limitBytes, timestamps and follow across container attempts).
//
// The driver rotates its file by size (Rotation, the kubelet's
// --container-log-max-size and --container-log-max-files): the full file
// becomes <attempt>.log.<timestamp> and a new <attempt>.log takes its place;
// entries never straddle two files, and readers go through the rotated files
// oldest first. It writes a P (partial) entry for text that a read returned
// without its newline, so that attach (Options.Live) shows prompts at once;
// readers otherwise join P entries back into lines.
//
// A full disk loses lines, never silently: an entry the file cannot take
// whole is not written (a torn one is cut off again), and the driver counts
// the lines it lost in whole or in part in the instance's dropped-lines
// record (<attempt>.dropped, made at full size by Prepare before the
// container starts, then overwritten in place, which needs no new block).
// ReadDropped gives the count once the driver is done.
//
// The writer and readers coordinate through flock(2) on the log file: the
// driver holds an exclusive lock on its current file, so a reader that can
// take a shared lock knows the file is complete; once it is, the path naming
// another file means the file was rotated, and the same path names the
// instance's file again otherwise (its driver ended).
//
// cmd/skiff-log-driver is RunDriver and nothing else, one process per
// running container: every package this one imports is loaded into each of
// them, so it imports the standard library only, and not its heavy parts
// (deps_test.go checks).
package logs
