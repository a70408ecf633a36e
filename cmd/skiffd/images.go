package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiff-sh/skiff/api"
)

// imagesCommand is the first argument of `skiffd images list|import`.
const imagesCommand = "images"

const imagesUsage = `usage: skiffd images list [--socket PATH | --server URL | --kubeconfig FILE] [--no-trunc] [-o table|json]
       skiffd images import [--socket PATH | --server URL | --kubeconfig FILE] FILE|-`

// runImages runs `skiffd images SUBCOMMAND ...`.
func runImages(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(imagesUsage)
	}
	switch args[0] {
	case "import":
		return runImagesImport(ctx, args[1:], stdout)
	case "list", "ls":
		return runImagesList(ctx, args[1:], stdout)
	}
	return errors.New(imagesUsage)
}

// clientFlags adds the flags that pick the daemon to talk to.
func clientFlags(fs *flag.FlagSet) *clientOptions {
	o := &clientOptions{}
	fs.StringVar(&o.socket, "socket", "/run/skiff/skiff.sock", "unix socket of the skiffd API")
	fs.StringVar(&o.server, "server", "", "URL of the skiffd API instead of the socket, e.g. https://127.0.0.1:6443 (with --kubeconfig for its CA and credentials)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the API with instead of the socket (its server, CA and credentials; --server overrides its server)")
	return o
}

// clientOptions say how a subcommand reaches skiffd.
type clientOptions struct {
	socket, server, kubeconfig string
}

func runImagesImport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("skiffd images import", flag.ContinueOnError)
	opts := clientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(imagesUsage)
	}
	c, err := apiClient(*opts)
	if err != nil {
		return err
	}
	in, size, err := openTarball(fs.Arg(0))
	if err != nil {
		return err
	}
	defer in.Close()
	var body io.Reader = in
	var p *progress
	if tty := terminal(stdout); tty != nil {
		p = newProgress(tty, "importing "+fs.Arg(0), size)
		body = p.reader(in)
	}
	names, err := importTarball(ctx, c, body)
	if p != nil {
		p.stop()
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(stdout, n)
	}
	return nil
}

// terminal is w if it is a terminal (progress is for people), else nil.
func terminal(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return w
	}
	return nil
}

// openTarball opens path, or standard input for "-", and says its size
// when it is a regular file (-1 otherwise).
func openTarball(path string) (io.ReadCloser, int64, error) {
	f := os.Stdin
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, 0, fmt.Errorf("opening image tarball: %w", err)
		}
	}
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	if path == "-" {
		return io.NopCloser(f), size, nil
	}
	return f, size, nil
}

// client talks to one skiffd API.
type client struct {
	http *http.Client
	base string // "http://host:port", no trailing slash
}

// apiClient talks to the API as the kubeconfig says (with --server as its
// server), else to --server with no credentials, else over the unix
// socket.
func apiClient(o clientOptions) (client, error) {
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags(o.server, o.kubeconfig)
		if err != nil {
			return client{}, err
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return client{}, err
		}
		return client{http: hc, base: strings.TrimSuffix(cfg.Host, "/")}, nil
	}
	if o.server != "" {
		return client{http: http.DefaultClient, base: strings.TrimSuffix(o.server, "/")}, nil
	}
	return socketClient(o.socket), nil
}

// socketClient talks to the API over its unix socket.
func socketClient(socket string) client {
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
	data, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("importing image: %w", err)
	}
	var res api.ImportResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("importing image: decoding answer: %w", err)
	}
	return res.Images, nil
}

// do sends req and returns the body of a 200 answer, else an error with
// the message of the Status the daemon answered.
func (c client) do(req *http.Request) ([]byte, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(statusMessage(resp.Status, data))
	}
	return data, nil
}

// statusMessage is the message of a metav1.Status body, else the HTTP status.
func statusMessage(httpStatus string, body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return httpStatus
}

func runImagesList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("skiffd images list", flag.ContinueOnError)
	opts := clientFlags(fs)
	output := fs.String("o", "table", "output format: table, or json (the API's ImageList)")
	noTrunc := fs.Bool("no-trunc", false, "show whole digests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || (*output != "table" && *output != "json") {
		return errors.New(imagesUsage)
	}
	c, err := apiClient(*opts)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+api.ImagesPath, nil)
	if err != nil {
		return err
	}
	data, err := c.do(req)
	if err != nil {
		return fmt.Errorf("listing images: %w", err)
	}
	if *output == "json" {
		_, err := stdout.Write(data)
		return err
	}
	var list api.ImageList
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("listing images: decoding answer: %w", err)
	}
	return writeImageTable(stdout, list.Items, *noTrunc, time.Now())
}

// writeImageTable prints images as `crictl images` does: aligned columns,
// short digests unless noTrunc, sizes in IEC units, last use relative to now.
func writeImageTable(w io.Writer, images []api.Image, noTrunc bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDIGEST\tSIZE\tLAST USED")
	for _, img := range images {
		digest := img.Digest
		if algo, hex, ok := strings.Cut(digest, ":"); ok && !noTrunc && len(hex) > 12 {
			digest = algo + ":" + hex[:12]
		}
		used := "never"
		if img.LastUsed != nil {
			used = duration.HumanDuration(now.Sub(img.LastUsed.Time)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", img.Name, digest, humanBytes(img.Size), used)
	}
	return tw.Flush()
}

// humanBytes writes n in IEC units with one decimal: "4.1 MiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
