package podworker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/prober"
)

// instanceProbes runs the probes of one running container instance, one
// goroutine per probe, until ctx ends (the instance exited or is stopping).
type instanceProbes struct {
	r         *containerRun
	id        string
	startedAt time.Time

	mu        sync.Mutex
	started   bool
	startedCh chan struct{} // closed when the startup probe passes
}

// startProbes starts the container's probes against instance id.
func (r *containerRun) startProbes(ctx context.Context, id string) {
	c := r.spec
	if r.kind == kindInit || (c.StartupProbe == nil && c.LivenessProbe == nil && c.ReadinessProbe == nil) {
		return
	}
	p := &instanceProbes{r: r, id: id, startedAt: r.startedAt, startedCh: make(chan struct{})}
	if c.StartupProbe == nil || r.started {
		p.started = true
		close(p.startedCh)
	}
	for kind, probe := range map[prober.Kind]*corev1.Probe{prober.Startup: c.StartupProbe, prober.Liveness: c.LivenessProbe, prober.Readiness: c.ReadinessProbe} {
		if probe != nil {
			go p.loop(ctx, kind, probe)
		}
	}
}

func (p *instanceProbes) isStarted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// loop probes on the probe's schedule and acts on its verdicts.
func (p *instanceProbes) loop(ctx context.Context, kind prober.Kind, probe *corev1.Probe) {
	timing := prober.TimingOf(probe)
	state := prober.NewState(kind, timing)
	next := p.startedAt.Add(timing.InitialDelay)
	waitStart := p.startedCh
	if kind == prober.Startup || p.isStarted() {
		waitStart = nil
	}
	for {
		// NOTE: the Manager's clock, as the instance's start time is (the
		// runtime's, which the tests' clock stands in for).
		timer := time.NewTimer(max(next.Sub(p.r.w.m.now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-waitStart:
			// The startup probe passed: probe at once (the kubelet's manual trigger).
			waitStart = nil
		case <-timer.C:
		}
		timer.Stop()
		now := p.r.w.m.now()
		started := p.isStarted()
		if kind == prober.Startup && started {
			return
		}
		if state.ShouldProbe(now, p.startedAt, started) {
			res, output := p.r.runProbe(ctx, p.id, probe, timing.Timeout)
			if res == prober.Failure {
				p.r.event(corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", kind, output)
			}
			if res != prober.Unknown {
				if verdict, changed := state.Observe(res); changed {
					p.act(kind, verdict, probe)
				}
			}
		}
		next = state.NextProbeAt(now, p.startedAt)
	}
}

// act applies a verdict: readiness sets Ready; a passed startup probe
// marks the container Started; a failed liveness or startup probe kills
// the container, which then restarts as its restart policy says.
func (p *instanceProbes) act(kind prober.Kind, verdict prober.Result, probe *corev1.Probe) {
	r := p.r
	switch {
	case kind == prober.Readiness:
		r.setProbed(p.id, func(cs *corev1.ContainerStatus) { cs.Ready = verdict == prober.Success })
	case kind == prober.Startup && verdict == prober.Success:
		p.mu.Lock()
		p.started = true
		close(p.startedCh)
		p.mu.Unlock()
		r.setProbed(p.id, func(cs *corev1.ContainerStatus) {
			cs.Started = ptr(true)
			cs.Ready = r.spec.ReadinessProbe == nil
		})
		r.markStarted()
	case verdict == prober.Failure:
		grace := deletionGrace(&corev1.Pod{Spec: r.pod.Spec})
		if probe.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*probe.TerminationGracePeriodSeconds) * time.Second
		}
		r.log.WithField("probe", kind).Info("container failed its " + kind.String() + " probe; it will be killed")
		select {
		case r.kill <- probeKill{grace: grace, message: r.probeKillMessage(kind)}:
		default:
		}
	}
}

// setProbed updates the status of instance id while it runs.
func (r *containerRun) setProbed(id string, mutate func(cs *corev1.ContainerStatus)) {
	err := r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if cs.ContainerID == kube.ContainerID(id) && cs.State.Running != nil {
			mutate(cs)
		}
	})
	if err != nil {
		r.w.logError("recording a probe result", err)
	}
}

// probeKill is a failed liveness or startup probe's verdict: kill the
// instance with grace; message is the Killing event's.
type probeKill struct {
	grace   time.Duration
	message string
}

// probeKillMessage is the kubelet's Killing message for a container that
// failed its kind probe, saying whether it will be restarted.
func (r *containerRun) probeKillMessage(kind prober.Kind) string {
	who := "Container"
	if r.kind == kindSidecar {
		who = "Init container"
	}
	msg := fmt.Sprintf("%s %s failed %s probe", who, r.spec.Name, strings.ToLower(kind.String()))
	if kube.ContainerRestarts(&r.pod.Spec, r.spec.Name, 137) {
		msg += ", will be restarted"
	}
	return msg
}
