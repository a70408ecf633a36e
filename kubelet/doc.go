// Package kubelet is the kubelet's role in skiffd, in one tree: everything
// that runs on "the node" rather than in the API server or a controller.
// skiff has one node, this machine; package kubelet describes it, registers
// it and keeps its status, collects its unused images, caps the containers it
// runs at once, and serves what the API asks of its containers (exec,
// attach, port forwards, logs). The pods themselves are run by the pod worker.
//
// The tree:
//
//	kubelet/              the node and the streaming half
//	    node.go           the machine: name, InternalIP, CPUs, memory (DescribeNode)
//	    node_status.go    the Node object: register, status every 5 min, the start-up events
//	    node_lease.go     the heartbeat: Lease kube-node-lease/<node> renewed, the Node registered again if deleted
//	    imagegc.go        image garbage collection (--image-gc-high/low-threshold)
//	    maxcontainers.go  --max-containers derived from the PID limit and memory
//	    streams.go        api.Streams: exec, attach (through the runtime and the log files)
//	    log.go            api.Streams' Log: which instance /log reads, when a follower moves on
//	    portforward.go    api.Streams' PortForward: localhost:port in the pod's network namespace
//	kubelet/streaming     the words of api.Streams (a leaf both sides import)
//	kubelet/admission     which pods the node lets in, in what order (pure)
//	kubelet/prober        a probe's timing, schedule and thresholds (pure)
//	kubelet/podworker     the pod worker: pods of this node → containers → pod status
//	kubelet/stats         containers' and the node's usage (kubectl top, /metrics)
//
// How it is reached:
//
//	api ──Streams (exec, attach, port-forward, log)──▶ kubelet ──▶ runtime (containerd), logs (files), network (sandboxes)
//	db ◀─pods, status, Node, events──── kubelet/podworker, kubelet (node status, image GC)
//	daemon wires them: it describes the node, registers it, starts the
//	heartbeat, the image collector, the pod worker and the sampler, and
//	hands kubelet.NewStreams to api.Config.
//
// As in Kubernetes, the API server knows nothing of containers: it checks an
// exec or attach request (the pod, its container, that it runs) or parses a
// /log request, and the kubelet does the rest — the API imports only
// kubelet/streaming, and nothing in this tree imports the API (deps_test.go).
// The store is the only other channel: the pod worker reads pods from it
// and writes their status, which the API serves and the Job controller
// counts.
//
// Which log /log serves: the instance is the container's restartCount (one
// less with ?previous); a container waiting to restart (CrashLoopBackOff)
// shows its last instance that has a file. A follower moves on to the next
// instance once the status counts the restart and its file exists, and ends
// when the pod is gone, finished or being deleted, or the container
// terminated and will not restart (kube.ContainerRestarts, which knows init
// containers and sidecars).
package kubelet
