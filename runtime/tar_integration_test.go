//go:build integration

package runtime_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path"
	"testing"
)

// readTarFile returns the content of name in the tarball at tarPath.
func readTarFile(t *testing.T, tarPath, name string) []byte {
	t.Helper()
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s not in %s", name, tarPath)
		}
		if err != nil {
			t.Fatal(err)
		}
		if path.Clean(h.Name) == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}
