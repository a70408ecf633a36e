package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// podExec serves GET and POST /api/v1/namespaces/{ns}/pods/{name}/exec:
// ?command= (repeated) run in ?container= with the streams the client asks
// for; the outcome (exit code) goes on the error stream.
func (s *server) podExec(w http.ResponseWriter, r *http.Request) {
	cmd := r.URL.Query()["command"]
	pod, container, opts, err := s.streamRequest(r, "exec")
	if err == nil && len(cmd) == 0 {
		err = apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	if err != nil {
		refuseStream(w, r, opts, err)
		return
	}
	sess, ok := openSession(w, r, opts)
	if !ok {
		return
	}
	code, err := s.cfg.Streams.Exec(sess.ctx, pod, container, cmd, sess.io)
	if err != nil {
		streamLog(pod, container).WithError(err).Info("exec failed")
	}
	sess.finish(execStatus(cmd, code, err))
}

// podAttach serves GET and POST /api/v1/namespaces/{ns}/pods/{name}/attach:
// the client's streams joined to ?container='s main process.
func (s *server) podAttach(w http.ResponseWriter, r *http.Request) {
	pod, container, opts, err := s.streamRequest(r, "attach")
	if err != nil {
		refuseStream(w, r, opts, err)
		return
	}
	sess, ok := openSession(w, r, opts)
	if !ok {
		return
	}
	st := &metav1.Status{Status: metav1.StatusSuccess}
	if err := s.cfg.Streams.Attach(sess.ctx, pod, container, sess.io); err != nil {
		streamLog(pod, container).WithError(err).Info("attach failed")
		se := apierrors.NewInternalError(fmt.Errorf("error attaching to container: %w", err))
		st = &se.ErrStatus
	}
	sess.finish(st)
}

// streamRequest checks an exec or attach request (subresource) before the
// upgrade: the pod, its container (as kube-apiserver picks it), the
// streams, and that the container runs. When only the last fails, the
// streams are returned with the error.
func (s *server) streamRequest(r *http.Request, subresource string) (*corev1.Pod, string, streamOptions, error) {
	if s.cfg.Streams == nil {
		return nil, "", streamOptions{}, apierrors.NewServiceUnavailable("exec and attach are not available")
	}
	v := mux.Vars(r)
	obj, err := s.store.Get(db.Pods, v["namespace"], v["name"])
	if err != nil {
		return nil, "", streamOptions{}, statusFor(err, podResource.groupResource(), v["name"])
	}
	pod := obj.(*corev1.Pod)
	container, err := streamContainer(pod, r.URL.Query().Get("container"))
	if err != nil {
		return nil, "", streamOptions{}, err
	}
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		return nil, "", streamOptions{}, err
	}
	if cs := kube.PodContainerStatus(&pod.Status, container); cs == nil || cs.State.Running == nil {
		return nil, "", opts, containerNotRunning(pod, container, subresource)
	}
	return pod, container, opts, nil
}

// refuseStream answers an exec or attach that cannot start.
func refuseStream(w http.ResponseWriter, r *http.Request, opts streamOptions, err error) {
	var re *streaming.RefusalError
	if !errors.As(err, &re) || !wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		writeError(w, r, err)
		return
	}
	// NOTE: kube-apiserver translates v5 WebSocket sessions to SPDY for the
	// kubelet itself: the client is upgraded when the kubelet refuses, and
	// the refusal (the SPDY client's error) comes on the error channel.
	if sess, ok := openSession(w, r, opts); ok {
		se := apierrors.NewInternalError(fmt.Errorf("unable to upgrade connection: %s", re.Message))
		sess.finish(&se.ErrStatus)
	}
}

// streamContainer is the container an exec or attach goes to.
// NOTE: kube-apiserver's streamLocation: the named container (regular,
// init or ephemeral), else the pod's only container.
func streamContainer(pod *corev1.Pod, name string) (string, error) {
	if name != "" {
		if c, _ := kube.FindContainer(&pod.Spec, name); c == nil {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
		}
		return name, nil
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, containerNames(pod.Spec.Containers))
	if len(pod.Spec.InitContainers) > 0 {
		msg += fmt.Sprintf(" or one of the init containers: [%s]", containerNames(pod.Spec.InitContainers))
	}
	return "", apierrors.NewBadRequest(msg)
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

// containerNotRunning is the kubelet's answer to an exec or attach of a
// container without a running process (kubelet_pods.go's GetExec and
// GetAttach word it differently).
func containerNotRunning(pod *corev1.Pod, container, subresource string) error {
	if subresource == "attach" {
		return &streaming.RefusalError{Message: fmt.Sprintf("container %s not found in pod %s_%s", container, pod.Name, pod.Namespace)}
	}
	return &streaming.RefusalError{Message: fmt.Sprintf("container not found (%q)", container)}
}

// execStatus is the outcome of an exec as the kubelet reports it: Success,
// NonZeroExitCode with the code as the ExitCode cause, or an InternalError
// when the command could not run.
func execStatus(cmd []string, code int, err error) *metav1.Status {
	switch {
	case err != nil:
		se := apierrors.NewInternalError(fmt.Errorf("error executing command in container: %w", err))
		return &se.ErrStatus
	case code != 0:
		// NOTE: the message is containerd CRI's, wrapped by the kubelet.
		return &metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
				{Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(code)},
			}},
		}
	}
	return &metav1.Status{Status: metav1.StatusSuccess}
}

func streamLog(pod *corev1.Pod, container string) *logrus.Entry {
	return logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "container": container})
}
