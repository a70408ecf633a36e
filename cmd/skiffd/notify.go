package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/skiff-sh/skiff/daemon"
	"github.com/skiff-sh/skiff/internal/sdnotify"
)

// notifySystemd makes skiffd report to systemd when it runs as a
// Type=notify unit: the daemon's start-up steps as STATUS= lines, READY=1
// once its API answers, WATCHDOG=1 while it keeps answering, and
// STOPPING=1 when ctx ends. Without NOTIFY_SOCKET nothing is sent.
func notifySystemd(ctx context.Context, cfg *daemon.Config) {
	n := sdnotify.New()
	cfg.Status = n.Status
	ready := cfg.Ready
	cfg.Ready = func(listen, socket string) {
		if ready != nil {
			ready(listen, socket)
		}
		probe := livezProbe(listen, socket)
		go func() {
			if n.Ready(ctx, probe, servingStatus(listen, socket)) {
				n.Watchdog(ctx, probe)
			}
		}()
	}
	go func() {
		<-ctx.Done()
		n.Stopping("stopping; containers keep running")
	}()
}

func servingStatus(listen, socket string) string {
	var on []string
	for _, a := range []string{listen, socket} {
		if a != "" {
			on = append(on, a)
		}
	}
	return "serving on " + strings.Join(on, " and ")
}

// livezProbe asks skiffd's own /livez, over the socket if it has one: the
// API answers when the request gets any answer but a server error (a 429
// from a busy API is an answer too).
func livezProbe(listen, socket string) sdnotify.Probe {
	if listen == "" && socket == "" {
		return func(context.Context) error { return nil }
	}
	c := socketClient(socket)
	if socket == "" {
		// NOTE: skiffd asks its own listener whether it answers and trusts
		// nothing in the answer but its status: no certificate to verify.
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		c = client{http: &http.Client{Transport: tr}, base: "https://" + listen}
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/livez", nil)
		if err != nil {
			return err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode >= 500 {
			return fmt.Errorf("/livez answered %s", resp.Status)
		}
		return nil
	}
}
