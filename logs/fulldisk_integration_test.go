//go:build integration

package logs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/loopfs"
)

// TestDriverOnFullDisk: a driver whose disk fills up keeps only whole
// entries in its file, counts every line it could not write in the
// dropped-lines record, and writes again once space is freed.
func TestDriverOnFullDisk(t *testing.T) {
	disk := loopfs.Mount(t, 16<<20)
	path := filepath.Join(disk.Dir, "ns_p_uid", "c", "0.log")
	if err := Prepare(path); err != nil {
		t.Fatal(err)
	}
	d := startDriverProcess(t, path)
	total := 0
	writeLines := func(n int) {
		for range n {
			d.write(t, d.out, fmt.Sprintf("line-%05d %s\n", total, strings.Repeat("x", 200)))
			total++
		}
	}
	writeLines(100)
	waitForFile(t, path, "line-00099")
	disk.Fill(t)
	writeLines(2000)
	disk.Free(t)
	writeLines(1)
	waitForFile(t, path, fmt.Sprintf("line-%05d", total-1))
	writeLines(99)
	d.out.Close()
	d.errs.Close()
	<-d.exited

	kept := readStreams(t, path)[stdout] // fails on a torn entry
	seen := map[string]bool{}
	for _, e := range kept {
		if !strings.HasPrefix(e, "F:line-") || seen[e] {
			t.Fatalf("entry %q: want each line once, whole", e)
		}
		seen[e] = true
	}
	got, err := ReadDropped(context.Background(), path)
	if err != nil {
		t.Fatalf("ReadDropped: %v", err)
	}
	lost := int64(total - len(kept))
	t.Logf("%d of %d stdout lines kept; record %+v", len(kept), total, got)
	if got.Lines == 0 || got.Lines != lost {
		t.Errorf("record says %d lines dropped, the file misses %d", got.Lines, lost)
	}
	if !strings.Contains(got.Cause, "no space left on device") {
		t.Errorf("cause %q does not say the disk was full", got.Cause)
	}
	if !seen[fmt.Sprintf("F:line-%05d %s", total-1, strings.Repeat("x", 200))] {
		t.Error("the last line, written after space was freed, is missing")
	}
}
