// Package events records core/v1 Events as Kubernetes components do
// (client-go's event recorder): the controllers and the pod worker report
// what they did on an object; the events are written to the store
// asynchronously, repeats are folded into one Event with a count, and
// events expire an hour after they were last seen.
package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/db"
)

// Defaults of Config.
const (
	DefaultQueueSize     = 1000
	DefaultTTL           = time.Hour // kube-apiserver's --event-ttl
	DefaultSweepInterval = time.Minute
)

// Config configures a Broadcaster; zero fields take their defaults.
type Config struct {
	Store *db.Store
	// QueueSize bounds the events waiting to be written; an event recorded
	// while the queue is full is dropped (and logged).
	QueueSize int
	// TTL is how long an Event lives after it was last seen.
	TTL time.Duration
	// SweepInterval is how often expired Events are deleted.
	SweepInterval time.Duration
	// Linger is how long an event that finds the queue empty waits for
	// others to be written with it, in one transaction (0: none). A pod's
	// start records three or four events within milliseconds; written as
	// they come, each is a commit (an fsync) beside the start itself.
	Linger time.Duration
	Clock  clock.WithTicker // nil = real
}

// Broadcaster writes the events of its Recorders to the store. Create it
// with NewBroadcaster, start it with Run; its Recorders may be used before
// Run starts (events wait in the queue).
type Broadcaster struct {
	cfg   Config
	queue chan *corev1.Event

	mu       sync.Mutex
	lastNano int64 // the newest name suffix handed out, for unique names
	dropped  int   // events dropped because the queue was full

	// series is the dedupe cache, owned by the Run goroutine.
	series *seriesCache
}

// NewBroadcaster returns a Broadcaster writing to cfg.Store.
func NewBroadcaster(cfg Config) *Broadcaster {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Broadcaster{cfg: cfg, queue: make(chan *corev1.Event, cfg.QueueSize), series: newSeriesCache()}
}

// Run writes queued events and deletes expired ones until ctx ends. Events
// still queued then are dropped: Events are best effort, as in Kubernetes.
func (b *Broadcaster) Run(ctx context.Context) error {
	sweep := b.cfg.Clock.NewTicker(b.cfg.SweepInterval)
	defer sweep.Stop()
	b.sweep()
	// pending is a batch the full disk refused: it is written again after
	// delay, and the queue waits meanwhile (filling up, then dropping).
	var pending []*corev1.Event
	delay := retryBase
	for {
		queue, retry := b.queue, (<-chan time.Time)(nil)
		if pending != nil {
			queue, retry = nil, b.cfg.Clock.After(delay)
		}
		select {
		case <-ctx.Done():
			return nil
		case ev := <-queue:
			if !b.linger(ctx) {
				return nil
			}
			pending = b.write(b.drain(ev))
		case <-retry:
			pending = b.write(pending)
			delay = min(2*delay, retryMax)
		case <-sweep.C():
			b.sweep()
		}
		if pending == nil {
			delay = retryBase
		}
	}
}

// Back-off of a batch of events that the full disk refused.
const (
	retryBase = 100 * time.Millisecond
	retryMax  = 10 * time.Second // client-go's recorder waits 10s between tries
)

// linger waits Config.Linger; false when ctx ends first.
func (b *Broadcaster) linger(ctx context.Context) bool {
	if b.cfg.Linger <= 0 {
		return true
	}
	select {
	case <-b.cfg.Clock.After(b.cfg.Linger):
		return true
	case <-ctx.Done():
		return false
	}
}

// maxBatch bounds the events written in one transaction.
const maxBatch = 256

// drain returns first and whatever else is queued, up to maxBatch.
func (b *Broadcaster) drain(first *corev1.Event) []*corev1.Event {
	batch := []*corev1.Event{first}
	for len(batch) < maxBatch {
		select {
		case ev := <-b.queue:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// NewRecorder returns a Recorder whose events come from source
// (Component "job-controller", or "kubelet" with Host the node name).
func (b *Broadcaster) NewRecorder(source corev1.EventSource) *Recorder {
	return &Recorder{b: b, source: source}
}

// enqueue queues ev without blocking; false if the queue is full.
func (b *Broadcaster) enqueue(ev *corev1.Event) bool {
	select {
	case b.queue <- ev:
		return true
	default:
		b.mu.Lock()
		b.dropped++
		b.mu.Unlock()
		return false
	}
}

// nameSuffix is the time part of a new Event's name, strictly increasing
// so that two events on one object never collide.
func (b *Broadcaster) nameSuffix(t time.Time) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastNano = max(t.UnixNano(), b.lastNano+1)
	return b.lastNano
}

// Recorder records events from one source. Safe for concurrent use; it
// never blocks.
type Recorder struct {
	b      *Broadcaster
	source corev1.EventSource
}

// Event records that something of eventtype (corev1.EventTypeNormal or
// EventTypeWarning) happened to obj for reason; the message is messageFmt
// formatted with args (used as is without args). obj is a stored object
// (a *batchv1.Job, *corev1.Pod, …) or a *corev1.ObjectReference (e.g. to
// a container: fieldPath "spec.containers{name}").
func (r *Recorder) Event(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	msg := messageFmt
	if len(args) > 0 {
		msg = fmt.Sprintf(messageFmt, args...)
	}
	ref, err := Reference(obj)
	if err != nil {
		logrus.WithError(err).WithField("reason", reason).Error("dropping event")
		return
	}
	ev := r.makeEvent(ref, eventtype, reason, msg)
	if !r.b.enqueue(ev) {
		logrus.WithFields(logrus.Fields{"object": ref.Kind + " " + ref.Namespace + "/" + ref.Name, "reason": reason}).
			Warn("event queue full: dropping event")
	}
}

// makeEvent is a new Event as client-go's recorder makes one: named
// "<object>.<hex nanoseconds>", in the object's namespace ("default" for
// cluster-scoped objects), count 1.
func (r *Recorder) makeEvent(ref *corev1.ObjectReference, eventtype, reason, msg string) *corev1.Event {
	now := r.b.cfg.Clock.Now()
	t := metav1.NewTime(now)
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%v.%x", ref.Name, r.b.nameSuffix(now)),
			Namespace: ns,
		},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             msg,
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		Type:                eventtype,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
}

// scheme knows the kinds of the objects events are recorded on.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building the event scheme: %v", err))
		}
	}
	return s
}()

// Reference is the ObjectReference of obj, as client-go's
// reference.GetReference makes it: kind and apiVersion (from the scheme,
// since stored objects carry no TypeMeta), namespace, name, uid and
// resourceVersion. An *ObjectReference is returned as is.
func Reference(obj runtime.Object) (*corev1.ObjectReference, error) {
	if ref, ok := obj.(*corev1.ObjectReference); ok {
		return ref, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("referencing %T: %w", obj, err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			return nil, fmt.Errorf("referencing %T: %w", obj, err)
		}
		gvk = gvks[0]
	}
	return &corev1.ObjectReference{
		Kind:            gvk.Kind,
		APIVersion:      gvk.GroupVersion().String(),
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}, nil
}
