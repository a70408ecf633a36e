package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/db"
)

// backupCommand is the first argument of `skiffd backup FILE|-`.
const backupCommand = "backup"

const backupUsage = "usage: skiffd backup [--socket PATH | --kubeconfig FILE [--server URL]] FILE|-"

// runBackup runs `skiffd backup`: it copies the running daemon's store
// into FILE (standard output for "-") through the root-only socket, or as
// the admin of a kubeconfig (the admin's client certificate). The
// copy is written beside FILE, checked, and renamed over it only whole.
func runBackup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("skiffd backup", flag.ContinueOnError)
	opts := clientFlags(fs) // only the API's admin may back up
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(backupUsage)
	}
	c, err := apiClient(*opts)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+api.BackupPath, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return fmt.Errorf("backing up: %s", statusMessage(resp.Status, data))
	}
	rv := resp.Header.Get(api.BackupResourceVersionHeader)
	if fs.Arg(0) == "-" {
		return copyWhole(stdout, resp)
	}
	path := fs.Arg(0)
	if err := writeBackupFile(path, resp); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "backed up resourceVersion %s (%s) to %s\n", rv, humanBytes(resp.ContentLength), path)
	return nil
}

// copyWhole copies resp's body to w and fails unless all of it came: the
// daemon cuts the connection when it cannot finish a copy.
func copyWhole(w io.Writer, resp *http.Response) error {
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("backing up: got %d bytes of %d", n, resp.ContentLength)
	}
	return nil
}

// writeBackupFile writes resp's body to a temporary file beside path, syncs
// and checks it, and renames it to path.
func writeBackupFile(path string, resp *http.Response) (retErr error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := copyWhole(f, resp); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	if _, err := db.CheckBackup(f.Name()); err != nil {
		return fmt.Errorf("backing up: the copy does not check: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("backing up: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself reaches the disk
		d.Close()
	}
	return nil
}
