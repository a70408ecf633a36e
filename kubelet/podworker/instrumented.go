package podworker

import (
	"context"
	"time"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// instrumentedRuntime records each call the pod worker makes to the
// container runtime in the kubelet's runtime operation metrics, named as
// the kubelet names the CRI call that does the same work (its
// instrumentedRuntimeService). Calls without a CRI counterpart (the image
// ensured before a create, waits, sweeps) are passed through unrecorded.
type instrumentedRuntime struct {
	Runtime
	metrics *Metrics
}

func (r instrumentedRuntime) ImageInfo(ctx context.Context, ref string) (_ runtime.ImageInfo, err error) {
	defer r.metrics.observeOperation("image_status", time.Now(), &err)
	return r.Runtime.ImageInfo(ctx, ref)
}

func (r instrumentedRuntime) Create(ctx context.Context, cfg runtime.ContainerConfig) (err error) {
	defer r.metrics.observeOperation("create_container", time.Now(), &err)
	return r.Runtime.Create(ctx, cfg)
}

func (r instrumentedRuntime) Start(ctx context.Context, id string) (_ time.Time, _ <-chan runtime.ExitStatus, err error) {
	defer r.metrics.observeOperation("start_container", time.Now(), &err)
	return r.Runtime.Start(ctx, id)
}

func (r instrumentedRuntime) Exec(ctx context.Context, id string, cfg runtime.ExecConfig) (_ int, err error) {
	defer r.metrics.observeOperation("exec_sync", time.Now(), &err)
	return r.Runtime.Exec(ctx, id, cfg)
}

func (r instrumentedRuntime) Stop(ctx context.Context, id string, grace time.Duration) (err error) {
	defer r.metrics.observeOperation("stop_container", time.Now(), &err)
	return r.Runtime.Stop(ctx, id, grace)
}

func (r instrumentedRuntime) Remove(ctx context.Context, id string) (err error) {
	defer r.metrics.observeOperation("remove_container", time.Now(), &err)
	return r.Runtime.Remove(ctx, id)
}

func (r instrumentedRuntime) List(ctx context.Context) (_ []runtime.Container, err error) {
	defer r.metrics.observeOperation("list_containers", time.Now(), &err)
	return r.Runtime.List(ctx)
}

func (r instrumentedRuntime) Inspect(ctx context.Context, id string) (_ runtime.Container, err error) {
	defer r.metrics.observeOperation("container_status", time.Now(), &err)
	return r.Runtime.Inspect(ctx, id)
}

// instrumentedNetwork is instrumentedRuntime for the pod network, which
// does here what the runtime's pod sandbox does under the kubelet: the
// sandbox's setup is run_podsandbox, its teardown (or its return to the
// pool) stop_podsandbox.
type instrumentedNetwork struct {
	Network
	metrics *Metrics
}

func (n instrumentedNetwork) Setup(ctx context.Context, pod network.Pod) (_ network.Sandbox, err error) {
	defer n.metrics.observeOperation("run_podsandbox", time.Now(), &err)
	return n.Network.Setup(ctx, pod)
}

func (n instrumentedNetwork) Teardown(ctx context.Context, uid string) (err error) {
	defer n.metrics.observeOperation("stop_podsandbox", time.Now(), &err)
	return n.Network.Teardown(ctx, uid)
}

func (n instrumentedNetwork) Release(ctx context.Context, uid string) (err error) {
	defer n.metrics.observeOperation("stop_podsandbox", time.Now(), &err)
	return n.Network.Release(ctx, uid)
}

func (n instrumentedNetwork) List() (_ []string, err error) {
	defer n.metrics.observeOperation("list_podsandbox", time.Now(), &err)
	return n.Network.List()
}
