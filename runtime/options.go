package runtime

// DefaultFIFODir is where stdin FIFOs of attachable containers live unless
// WithFIFODir says otherwise.
const DefaultFIFODir = "/run/skiff/fifo"

// Option configures a Runtime (New).
type Option func(*options)

type options struct {
	registryConfig string
	fifoDir        string
	logDriverArg   func(logPath string) string
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

// WithFIFODir keeps the stdin FIFOs of Stdin+TTY containers under dir
// (default DefaultFIFODir).
func WithFIFODir(dir string) Option {
	return func(o *options) { o.fifoDir = dir }
}
