package runtime

// ShimSocket exposes shimSocket to the integration tests.
func ShimSocket(r *Runtime, id string) string { return r.shimSocket(id) }
