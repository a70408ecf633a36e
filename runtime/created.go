package runtime

import "github.com/containerd/containerd"

// createdContainer is a container Create made in this process that no
// Start nor Remove has tried yet. Only Start makes tasks, so unless a
// task's bundle says otherwise, none of it exists: Start spares the round
// trips to containerd that look for what an earlier skiffd or an
// interrupted Start left (the record and its labels, a task).
type createdContainer struct {
	container containerd.Container
	labels    map[string]string
}

// rememberCreated records that Create made id (with id's lock held).
func (r *Runtime) rememberCreated(id string, c containerd.Container, labels map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.created == nil {
		r.created = map[string]createdContainer{}
	}
	r.created[id] = createdContainer{container: c, labels: labels}
}

// takeCreated returns id's container if Create made it in this process and
// nothing tried to start or remove it since; either takes it out.
func (r *Runtime) takeCreated(id string) (createdContainer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.created[id]
	delete(r.created, id)
	return c, ok
}
