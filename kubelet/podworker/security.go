package podworker

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/runtime"
)

// securityContext is the effective security context of one container: the
// pod's settings with the container's over them, as the kubelet's
// DetermineEffectiveSecurityContext merges them.
func securityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	out := &corev1.SecurityContext{}
	if c.SecurityContext != nil {
		out = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return out
	}
	if out.RunAsUser == nil {
		out.RunAsUser = psc.RunAsUser
	}
	if out.RunAsGroup == nil {
		out.RunAsGroup = psc.RunAsGroup
	}
	if out.RunAsNonRoot == nil {
		out.RunAsNonRoot = psc.RunAsNonRoot
	}
	if out.SeccompProfile == nil {
		out.SeccompProfile = psc.SeccompProfile
	}
	if out.SELinuxOptions == nil {
		out.SELinuxOptions = psc.SELinuxOptions
	}
	return out
}

// imageUser splits an image's USER ("uid[:gid]" or "name[:group]") as
// containerd's CRI reports it: a numeric uid, or a user name; neither
// means root.
func imageUser(user string) (uid *int64, name string) {
	user, _, _ = strings.Cut(user, ":")
	if user == "" {
		return ptr(int64(0)), ""
	}
	if n, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &n, ""
	}
	return nil, user
}

// verifyRunAsNonRoot is the kubelet's check of runAsNonRoot against the
// user the container will run as, with its messages.
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, sc *corev1.SecurityContext, image string) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return &configError{fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)}
		}
		return nil
	}
	uid, name := imageUser(image)
	switch {
	case uid != nil && *uid == 0:
		return &configError{fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)}
	case uid == nil:
		return &configError{fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, podName, c.Name)}
	}
	return nil
}

// processUser is the identity the container runs as: nil keeps the
// image's user. supplementalGroups and fsGroup are added to its groups.
func processUser(pod *corev1.Pod, sc *corev1.SecurityContext, image string) (*runtime.User, error) {
	var groups []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		for _, g := range psc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
		if psc.FSGroup != nil {
			groups = append(groups, uint32(*psc.FSGroup))
		}
	}
	if sc.RunAsUser == nil && sc.RunAsGroup == nil && len(groups) == 0 {
		return nil, nil
	}
	u := &runtime.User{Groups: groups}
	if sc.RunAsUser != nil {
		u.UID = uint32(*sc.RunAsUser)
	} else {
		uid, name := imageUser(image)
		if uid == nil {
			// NOTE: runtime.User is numeric; the image's user name is only
			// resolved by runtime when no identity is given at all.
			return nil, &configError{fmt.Sprintf("image user %q is not numeric: set runAsUser to combine it with runAsGroup, supplementalGroups or fsGroup", name)}
		}
		u.UID = uint32(*uid)
		if _, g, ok := strings.Cut(image, ":"); ok && sc.RunAsGroup == nil {
			if gid, err := strconv.ParseUint(g, 10, 32); err == nil {
				u.GID = ptr(uint32(gid))
			}
		}
	}
	if sc.RunAsGroup != nil {
		u.GID = ptr(uint32(*sc.RunAsGroup))
	}
	return u, nil
}

// seccompConfig is the node's seccomp setup: where the Localhost profiles
// are, and what a container that names no profile gets.
type seccompConfig struct {
	root string
	// runtimeDefault: RuntimeDefault for a container naming no profile
	// (the kubelet's seccompDefault); Unconfined otherwise.
	runtimeDefault bool
}

// applySecurity fills the security settings of cfg from the container's
// effective security context; the image's USER (img.User) decides
// runAsNonRoot.
func applySecurity(cfg *runtime.ContainerConfig, pod *corev1.Pod, c *corev1.Container, img runtime.ImageInfo, sec seccompConfig) error {
	sc := securityContext(pod, c)
	if err := verifyRunAsNonRoot(pod, c, sc, img.User); err != nil {
		return err
	}
	user, err := processUser(pod, sc, img.User)
	if err != nil {
		return err
	}
	cfg.User = user
	cfg.Privileged = sc.Privileged != nil && *sc.Privileged
	cfg.ReadOnlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	// NOTE: the kubelet's AddNoNewPrivileges: only an explicit
	// allowPrivilegeEscalation: false sets no_new_privs.
	cfg.NoNewPrivileges = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	if caps := sc.Capabilities; caps != nil {
		for _, a := range caps.Add {
			cfg.CapAdd = append(cfg.CapAdd, string(a))
		}
		for _, d := range caps.Drop {
			cfg.CapDrop = append(cfg.CapDrop, string(d))
		}
	}
	cfg.UnmaskedProc = sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount
	cfg.Seccomp, err = seccomp(sc.SeccompProfile, sec)
	if err != nil {
		return err
	}
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			cfg.Sysctls[s.Name] = s.Value
		}
	}
	return nil
}

// seccomp translates a seccomp profile. None is Unconfined, as the kubelet
// gives it unless its seccompDefault is set (Kubernetes' e2e "should
// support seccomp default which is unconfined" reads Seccomp: 0).
func seccomp(p *corev1.SeccompProfile, sec seccompConfig) (runtime.Seccomp, error) {
	if p == nil {
		if sec.runtimeDefault {
			return runtime.Seccomp{Type: runtime.SeccompRuntimeDefault}, nil
		}
		return runtime.Seccomp{Type: runtime.SeccompUnconfined}, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return runtime.Seccomp{Type: runtime.SeccompRuntimeDefault}, nil
	case corev1.SeccompProfileTypeUnconfined:
		return runtime.Seccomp{Type: runtime.SeccompUnconfined}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || !isLocalPath(*p.LocalhostProfile) {
			return runtime.Seccomp{}, &configError{"localhostProfile must be a relative path inside the seccomp profile root"}
		}
		return runtime.Seccomp{Type: runtime.SeccompLocalhost, LocalhostPath: filepath.Join(sec.root, *p.LocalhostProfile)}, nil
	}
	return runtime.Seccomp{}, &configError{fmt.Sprintf("unknown seccomp profile type %q", p.Type)}
}
