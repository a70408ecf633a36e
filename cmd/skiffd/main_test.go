package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestSetupLogging(t *testing.T) {
	defer logrus.SetFormatter(logrus.StandardLogger().Formatter)
	defer logrus.SetLevel(logrus.GetLevel())
	tests := map[string]struct {
		level, format string
		wantJSON      bool
		wantErr       string
	}{
		"text":           {level: "info", format: "text"},
		"json":           {level: "debug", format: "json", wantJSON: true},
		"unknown format": {level: "info", format: "logfmt", wantErr: `--log-format "logfmt": want text or json`},
		"unknown level":  {level: "loud", format: "text", wantErr: "not a valid logrus Level"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			logrus.SetFormatter(&logrus.TextFormatter{})
			err := setupLogging(tt.level, tt.format)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, isJSON := logrus.StandardLogger().Formatter.(*logrus.JSONFormatter)
			if isJSON != tt.wantJSON {
				t.Errorf("JSON formatter: %v, want %v", isJSON, tt.wantJSON)
			}
		})
	}
}

// TestVersionWithoutContainerd: the version prints, and says why
// containerd's does not, when no containerd answers.
func TestVersionWithoutContainerd(t *testing.T) {
	var out bytes.Buffer
	missing := filepath.Join(t.TempDir(), "containerd.sock")
	if err := runVersion(context.Background(), []string{"--containerd-address", missing}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"skiffd dev\n", "kubernetes:  v1.34.0+skiff.dev\n", "containerd:  ", missing + ": connect: no such file or directory"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%q lacks %q", out.String(), want)
		}
	}
	if err := runVersion(context.Background(), []string{"extra"}, &out); err == nil {
		t.Error("skiffd version extra: no error")
	}
}
