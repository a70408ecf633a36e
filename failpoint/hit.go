//go:build !failpoints

package failpoint

// Hit does nothing: this build has no failpoints.
func Hit(string) {}

// Enabled reports whether this build has failpoints.
const Enabled = false
