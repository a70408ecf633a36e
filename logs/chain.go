package logs

import (
	"errors"
	"fmt"
	"os"
)

// openChain opens the files of the log at path that come after the file
// prev (nil = all of them), oldest first: rotated files, then the current
// one, which is last. It is an error if path does not exist.
//
// The current file is opened first and the rotated ones listed after, so a
// rotation in between shows as a rotated file that is the current one:
// that one and any later are left out (the reader reaches them by
// following the current file). A rotated file removed before it is opened
// is skipped: it was the oldest and is gone. If prev is no longer among the
// rotated files it was removed too, and the chain starts at the oldest left.
func openChain(path string, prev os.FileInfo) (files []*os.File, err error) {
	cur, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	defer func() {
		if err != nil {
			closeFiles(append(files, cur))
			files = nil
		}
	}()
	curInfo, err := cur.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening log: %w", err)
	}
	names, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		names = namesAfter(names, prev)
	}
	for _, name := range names {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return files, fmt.Errorf("opening rotated log: %w", err)
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			return files, fmt.Errorf("opening rotated log: %w", err)
		}
		if os.SameFile(st, curInfo) {
			files = files[:len(files)-1]
			f.Close()
			break
		}
	}
	return append(files, cur), nil
}

// namesAfter returns the names that follow the file prev, or all of them
// when prev has none of the names any more.
func namesAfter(names []string, prev os.FileInfo) []string {
	for i, name := range names {
		if st, err := os.Stat(name); err == nil && os.SameFile(st, prev) {
			return names[i+1:]
		}
	}
	return names
}

// isReplaced reports whether path names another file than f now: f was
// rotated. A missing path (the pod's logs being removed) is no rotation.
func isReplaced(path string, f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("checking rotation of %s: %w", path, err)
	}
	cur, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking rotation of %s: %w", path, err)
	}
	return !os.SameFile(st, cur), nil
}

// closeFiles closes every file.
func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
