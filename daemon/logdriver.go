package daemon

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skiff-sh/skiff/logs"
)

// findLogDriver returns the absolute path of the log driver the shims are
// to run for every container: configured (--log-driver), or
// logs.DriverBinary beside this executable, where make build and make
// install put it. skiffd does not start without it: no container could.
//
// NOTE: a running container keeps the driver process it started with, so
// an upgrade that moves the driver leaves running containers' logs alone.
func findLogDriver(configured string) (string, error) {
	path := configured
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the log driver beside skiffd: %w", err)
		}
		path = filepath.Join(filepath.Dir(exe), logs.DriverBinary)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("log driver %s: %w", configured, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("log driver: %w (make build and make install put %s beside skiffd; --log-driver names another)", err, logs.DriverBinary)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("log driver %s: not an executable file (mode %v)", path, st.Mode())
	}
	return path, nil
}
