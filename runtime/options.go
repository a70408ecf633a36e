package runtime

// DefaultFIFODir is where stdin FIFOs of attachable containers live unless
// WithFIFODir says otherwise.
const DefaultFIFODir = "/run/skiff/fifo"

// Option configures a Runtime (New).
type Option func(*options)

type options struct {
	containerdState string
	registryConfig  string
	fifoDir         string
	logDriverArg    func(logPath string) string
}

// WithRegistryConfig reads registry credentials from the docker config.json
// at path (its "auths" map) for every pull; a missing file means no
// credentials. The file is read at each pull, so edits apply at once.
func WithRegistryConfig(path string) Option {
	return func(o *options) { o.registryConfig = path }
}

// WithLogDriverArg sets how a container's log path becomes the one
// argument its log driver gets (`<logDriver> log-driver <arg>`), e.g. to
// carry a rotation policy (logs.Rotation.Arg). The default is the path.
func WithLogDriverArg(f func(logPath string) string) Option {
	return func(o *options) { o.logDriverArg = f }
}

// DefaultContainerdState is containerd's own default state directory.
const DefaultContainerdState = "/run/containerd"

// WithContainerdState names the state directory of the containerd in use
// (its config's `state`; default DefaultContainerdState): the shim bundles
// of tasks lie under it, and SweepLeftovers and Start remove those that
// containerd no longer lists.
func WithContainerdState(dir string) Option {
	return func(o *options) { o.containerdState = dir }
}

// WithFIFODir keeps the stdin FIFOs of Stdin+TTY containers under dir
// (default DefaultFIFODir).
func WithFIFODir(dir string) Option {
	return func(o *options) { o.fifoDir = dir }
}
