package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/api"
)

// imagesCommand is the first argument of `skiffd images import FILE|-`.
const imagesCommand = "images"

// runImages runs `skiffd images SUBCOMMAND ...`; only import exists.
func runImages(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return errors.New("usage: skiffd images import [--socket PATH | --server URL] FILE|-")
	}
	fs := flag.NewFlagSet("skiffd images import", flag.ContinueOnError)
	socket := fs.String("socket", "/run/skiff/skiff.sock", "unix socket of the skiffd API")
	server := fs.String("server", "", "URL of the skiffd API instead of the socket, e.g. http://127.0.0.1:7070")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: skiffd images import [--socket PATH | --server URL] FILE|-")
	}
	in, err := openTarball(fs.Arg(0))
	if err != nil {
		return err
	}
	defer in.Close()
	names, err := importTarball(ctx, apiClient(*socket, *server), in)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(stdout, n)
	}
	return nil
}

// openTarball opens path, or standard input for "-".
func openTarball(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening image tarball: %w", err)
	}
	return f, nil
}

// client posts to one skiffd API.
type client struct {
	http *http.Client
	base string // "http://host:port", no trailing slash
}

// apiClient talks to server if set, else over the unix socket.
func apiClient(socket, server string) client {
	if server != "" {
		return client{http: http.DefaultClient, base: strings.TrimSuffix(server, "/")}
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return client{http: &http.Client{Transport: tr}, base: "http://skiffd"}
}

// importTarball streams a tarball to POST api.ImagesPath and returns the
// imported image names, or the message of the Status the daemon answered.
func importTarball(ctx context.Context, c client, tarball io.Reader) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+api.ImagesPath, tarball)
	if err != nil {
		return nil, fmt.Errorf("importing image: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("importing image: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("importing image: reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("importing image: %s", statusMessage(resp.Status, data))
	}
	var res api.ImportResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("importing image: decoding answer: %w", err)
	}
	return res.Images, nil
}

// statusMessage is the message of a metav1.Status body, else the HTTP status.
func statusMessage(httpStatus string, body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return httpStatus
}
