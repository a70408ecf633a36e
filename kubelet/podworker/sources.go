package podworker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// sources reads the ConfigMaps and Secrets pods take env and files from,
// and tells whoever waits on a namespace when one of its ConfigMaps or
// Secrets changed: a container waiting in CreateContainerConfigError, a
// volume that could not be set up, a volume to refresh.
//
// NOTE: the kubelet reads them through a cache refreshed about once a
// minute (its watch-based manager is faster); skiff reads the store, which
// is local, and wakes the waiters at once.
type sources struct {
	store  *db.Store
	tokens *tokens

	mu      sync.Mutex
	waiters map[string]chan struct{} // by namespace; closed on a change
}

func newSources(store *db.Store, tokens *tokens) *sources {
	return &sources{store: store, tokens: tokens, waiters: map[string]chan struct{}{}}
}

// changed returns a channel closed at the next change of a ConfigMap or
// Secret of namespace ns. Take it before reading, so that a change between
// the read and the wait is not missed.
func (s *sources) changed(ns string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.waiters[ns]
	if !ok {
		ch = make(chan struct{})
		s.waiters[ns] = ch
	}
	return ch
}

// notify wakes the waiters of namespace ns ("" = of every namespace).
func (s *sources) notify(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, ch := range s.waiters {
		if ns == "" || key == ns {
			close(ch)
			delete(s.waiters, key)
		}
	}
}

// follow watches ConfigMaps and Secrets until ctx ends, waking the waiters
// of each change's namespace. A watch that ends is started again, and
// everyone is woken, since changes may have been missed meanwhile.
func (s *sources) follow(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range []db.Resource{db.ConfigMaps, db.Secrets} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := s.followOne(ctx, r)
				if ctx.Err() != nil || errors.Is(err, db.ErrClosed) {
					return
				}
				logrus.WithError(err).WithField("resource", r.Name).Warn("watch of pod sources ended; watching again")
				s.notify("")
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	wg.Wait()
}

func (s *sources) followOne(ctx context.Context, r db.Resource) error {
	w, err := s.store.Watch(ctx, r, 0)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.Events() {
		s.notify(ev.Object.GetNamespace())
	}
	return w.Err()
}

// configMap reads a ConfigMap; a missing one is the kubelet's NotFound
// error (`configmap "x" not found`).
func (s *sources) configMap(ns, name string) (*corev1.ConfigMap, error) {
	obj, err := s.get(db.ConfigMaps, "configmap", ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ConfigMap), nil
}

// secret reads a Secret; a missing one is `secret "x" not found`.
func (s *sources) secret(ns, name string) (*corev1.Secret, error) {
	obj, err := s.get(db.Secrets, "secret", ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

// token is a pod's ServiceAccount token (tokens.token).
func (s *sources) token(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) (string, error) {
	return s.tokens.token(pod, source)
}

// services reads the Services of a container's environment (see
// sourceReader) as they are now: the kubelet gives a container the
// Services that exist when it starts.
func (s *sources) services(ns string, links bool) ([]*corev1.Service, error) {
	api, err := s.apiService()
	if err != nil {
		return nil, err
	}
	var out []*corev1.Service
	if api != nil {
		out = append(out, api)
	}
	if !links || s.store == nil {
		return out, nil
	}
	objs, _, err := s.store.List(db.Services, ns, labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		out = append(out, o.(*corev1.Service))
	}
	return out, nil
}

// apiService reads the kubernetes Service of the default namespace; a
// Manager without a store (unit tests of containers) has none.
func (s *sources) apiService() (*corev1.Service, error) {
	if s.store == nil {
		return nil, nil
	}
	obj, err := s.store.Get(db.Services, metav1.NamespaceDefault, kube.APIServiceName)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Service), nil
}

// get reads an object, naming it as the kubelet's managers do in errors.
func (s *sources) get(r db.Resource, singular, ns, name string) (db.Object, error) {
	obj, err := s.store.Get(r, ns, name)
	if errors.Is(err, db.ErrNotFound) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: singular}, name)
	}
	return obj, err
}
