package logs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of the kubelet's --container-log-max-size and
// --container-log-max-files.
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 5
)

// rotatedFormat is the timestamp suffix of a rotated file, <path>.<UTC time>.
//
// NOTE: the kubelet names rotated files <path>.20060102-150405 (local time,
// whole seconds: it rotates at most every 10 s). The driver rotates as
// soon as a file is full, so the suffix carries nanoseconds and UTC; it is
// fixed-width, so names sort in rotation order.
const rotatedFormat = "20060102-150405.000000000"

// errBadDriverArg marks a log driver argument that is neither an absolute
// path nor a file URL from Rotation.Arg.
var errBadDriverArg = errors.New("invalid log driver argument")

// Rotation is a container log's rotation policy, the kubelet's
// --container-log-max-size and --container-log-max-files: when the next
// entry would take the current file over MaxSize bytes, the driver renames
// it <path>.<timestamp> and goes on in a new file, keeping at most MaxFiles
// files (the current one included) and removing the oldest.
//
// NOTE: unlike the kubelet, rotated files stay uncompressed, so a reader
// reads them as they are; and a file never exceeds MaxSize unless one entry
// alone does (the kubelet checks sizes every 10 s).
type Rotation struct {
	MaxSize  int64 // bytes; <= 0 = never rotate
	MaxFiles int   // at least 2 when MaxSize > 0
}

// Validate reports a policy the driver cannot follow.
func (r Rotation) Validate() error {
	if r.MaxSize > 0 && r.MaxFiles < 2 {
		// NOTE: the kubelet's check and message.
		return fmt.Errorf("invalid MaxFiles %d, must be > 1", r.MaxFiles)
	}
	return nil
}

// Arg is the one argument the log driver of the file at path gets
// (`skiff-log-driver log-driver <arg>`): a file URL carrying the policy,
// file:///path?max-files=N&max-size=N. Without rotation it is path itself.
//
// NOTE: the shim passes every query parameter of the binary log URI as
// `key value` in Go map order, which is random: so everything the driver
// needs travels inside the one value.
func (r Rotation) Arg(path string) string {
	if r.MaxSize <= 0 {
		return path
	}
	q := url.Values{}
	q.Set("max-size", strconv.FormatInt(r.MaxSize, 10))
	q.Set("max-files", strconv.Itoa(r.MaxFiles))
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// ParseDriverArg is the inverse of Rotation.Arg: an absolute path (no
// rotation) or a file URL.
func ParseDriverArg(arg string) (path string, r Rotation, err error) {
	if filepath.IsAbs(arg) {
		return arg, Rotation{}, nil
	}
	u, err := url.Parse(arg)
	if err != nil {
		return "", Rotation{}, fmt.Errorf("%w %q: %w", errBadDriverArg, arg, err)
	}
	if u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return "", Rotation{}, fmt.Errorf("%w %q: want an absolute path or a file URL", errBadDriverArg, arg)
	}
	q := u.Query()
	if r.MaxSize, err = strconv.ParseInt(q.Get("max-size"), 10, 64); err != nil {
		return "", Rotation{}, fmt.Errorf("%w %q: max-size: %w", errBadDriverArg, arg, err)
	}
	if r.MaxFiles, err = strconv.Atoi(q.Get("max-files")); err != nil {
		return "", Rotation{}, fmt.Errorf("%w %q: max-files: %w", errBadDriverArg, arg, err)
	}
	if err := r.Validate(); err != nil {
		return "", Rotation{}, fmt.Errorf("%w %q: %w", errBadDriverArg, arg, err)
	}
	return u.Path, r, nil
}

// rotatedName is the name path gets when rotated at t.
func rotatedName(path string, t time.Time) string {
	return path + "." + t.UTC().Format(rotatedFormat)
}

// rotatedFiles lists the rotated files of the log at path, oldest first.
func rotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing rotated logs of %s: %w", path, err)
	}
	var names []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		if _, err := time.Parse(rotatedFormat, suffix); err == nil && len(suffix) == len(rotatedFormat) {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(names)
	return names, nil
}
