//go:build integration

package runtime_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// variant is an image made from the test image: its blobs by digest, and
// its manifest.
type variant struct {
	blobs     map[string][]byte
	manifest  string // digest
	mediaType string
}

// testImagePath is the test image tarball.
func testImagePath() string {
	if path := os.Getenv(runtimetest.ImageEnv); path != "" {
		return path
	}
	return "../build/busybox-1.35.tar"
}

// newVariant is the test image with a config of its own (author = author)
// and, when extraFile is set, a second layer holding /<extraFile>.
func newVariant(t *testing.T, author, extraFile string) variant {
	t.Helper()
	path := testImagePath()
	blob := func(d string) []byte { return readTarFile(t, path, "blobs/sha256/"+digest.Digest(d).Encoded()) }
	var index struct {
		Manifests []struct{ Digest, MediaType string }
	}
	if err := json.Unmarshal(readTarFile(t, path, "index.json"), &index); err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		SchemaVersion int              `json:"schemaVersion"`
		MediaType     string           `json:"mediaType"`
		Config        map[string]any   `json:"config"`
		Layers        []map[string]any `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := json.Unmarshal(blob(manifest.Config["digest"].(string)), &config); err != nil {
		t.Fatal(err)
	}
	base := manifest.Layers[0]["digest"].(string)
	v := variant{blobs: map[string][]byte{base: blob(base)}, mediaType: index.Manifests[0].MediaType}

	config["author"] = author
	if extraFile != "" {
		gz, diffID := layerWithFile(t, extraFile)
		v.blobs[digest.FromBytes(gz).String()] = gz
		manifest.Layers = append(manifest.Layers, map[string]any{
			"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest.FromBytes(gz), "size": len(gz),
		})
		rootfs := config["rootfs"].(map[string]any)
		rootfs["diff_ids"] = append(rootfs["diff_ids"].([]any), diffID)
	}
	configJSON := mustJSON(t, config)
	v.blobs[digest.FromBytes(configJSON).String()] = configJSON
	manifest.Config["digest"], manifest.Config["size"] = digest.FromBytes(configJSON), len(configJSON)
	manifestJSON := mustJSON(t, manifest)
	v.manifest = digest.FromBytes(manifestJSON).String()
	v.blobs[v.manifest] = manifestJSON
	return v
}

// layerWithFile is a gzipped layer holding the file /name, and its diff ID.
func layerWithFile(t *testing.T, name string) (gz []byte, diffID string) {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	content := []byte("from the extra layer\n")
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
	tw.Write(content)
	tw.Close()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw.Bytes())
	zw.Close()
	return buf.Bytes(), fmt.Sprintf("sha256:%x", sha256.Sum256(raw.Bytes()))
}

// layoutTar is v as an OCI layout tarball naming it name.
func (v variant) layoutTar(t *testing.T, name string) *bytes.Buffer {
	t.Helper()
	index := fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"mediaType":%q,"digest":%q,"size":%d,"annotations":{"io.containerd.image.name":%q}}]}`,
		v.mediaType, v.manifest, len(v.blobs[v.manifest]), name)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(file string, data []byte) {
		tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	write("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	write("index.json", []byte(index))
	for d, data := range v.blobs {
		write("blobs/sha256/"+digest.Digest(d).Encoded(), data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
