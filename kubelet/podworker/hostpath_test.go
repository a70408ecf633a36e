package podworker

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(dir, "missing")
	typ := func(t corev1.HostPathType) *corev1.HostPathType { return &t }
	tests := map[string]struct {
		path    string
		typ     *corev1.HostPathType
		wantErr string
		created os.FileMode // the type of what must exist afterwards
	}{
		"unset, missing: created as a directory": {path: missing + "1", created: os.ModeDir},
		"unset, a file":                          {path: file},
		"directory":                              {path: dir, typ: typ(corev1.HostPathDirectory)},
		"directory, a file":                      {path: file, typ: typ(corev1.HostPathDirectory), wantErr: "hostPath type check failed: " + file + " is not a directory"},
		"directory, missing":                     {path: missing, typ: typ(corev1.HostPathDirectory), wantErr: "hostPath type check failed: " + missing + " is not a directory"},
		"directory or create":                    {path: missing + "2/sub", typ: typ(corev1.HostPathDirectoryOrCreate), created: os.ModeDir},
		"directory or create, a file":            {path: file, typ: typ(corev1.HostPathDirectoryOrCreate), wantErr: "hostPath type check failed: " + file + " is not a directory"},
		"file":                                   {path: file, typ: typ(corev1.HostPathFile)},
		"file, missing":                          {path: missing, typ: typ(corev1.HostPathFile), wantErr: "hostPath type check failed: " + missing + " is not a file"},
		"socket, missing":                        {path: missing, typ: typ(corev1.HostPathSocket), wantErr: "hostPath type check failed: " + missing + " is not a socket file"},
		"file, a directory":                      {path: dir, typ: typ(corev1.HostPathFile), wantErr: "hostPath type check failed: " + dir + " is not a file"},
		"file or create":                         {path: missing + "3", typ: typ(corev1.HostPathFileOrCreate), created: 0},
		"file or create without its parent":      {path: missing + "4/f", typ: typ(corev1.HostPathFileOrCreate), wantErr: "open " + missing + "4/f: no such file or directory"},
		"socket":                                 {path: sock, typ: typ(corev1.HostPathSocket)},
		"socket, a file":                         {path: file, typ: typ(corev1.HostPathSocket), wantErr: "hostPath type check failed: " + file + " is not a socket file"},
		"char device":                            {path: "/dev/null", typ: typ(corev1.HostPathCharDev)},
		"char device, a file":                    {path: file, typ: typ(corev1.HostPathCharDev), wantErr: "hostPath type check failed: " + file + " is not a character device"},
		"block device, a char device":            {path: "/dev/null", typ: typ(corev1.HostPathBlockDev), wantErr: "hostPath type check failed: /dev/null is not a block device"},
		"invalid type":                           {path: file, typ: typ("Pipe"), wantErr: "Pipe is an invalid volume type"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkHostPath(tc.path, tc.typ)
			if got := errString(err); got != tc.wantErr {
				t.Fatalf("error %q, want %q", got, tc.wantErr)
			}
			if tc.wantErr != "" {
				return
			}
			fi, err := os.Stat(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.created == os.ModeDir && !fi.IsDir() {
				t.Errorf("%s is not a directory", tc.path)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
