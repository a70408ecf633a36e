package logs

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseEntry(t *testing.T) {
	for name, tc := range map[string]struct {
		line    string
		want    entry
		wantErr bool
	}{
		"full": {
			line: "2024-01-02T03:04:05.5Z stdout F hello world",
			want: entry{time: t0, stream: stdout, text: []byte("hello world")},
		},
		"partial stderr": {
			line: "2024-01-02T03:04:05.500000000Z stderr P abc ",
			want: entry{time: t0, stream: stderr, partial: true, text: []byte("abc ")},
		},
		"empty text": {
			line: "2024-01-02T03:04:05.5Z stdout F ",
			want: entry{time: t0, stream: stdout, text: []byte("")},
		},
		"no text separator": {
			line: "2024-01-02T03:04:05.5Z stdout F",
			want: entry{time: t0, stream: stdout},
		},
		"extra tags": {
			line: "2024-01-02T03:04:05.5Z stdout P:x:y text",
			want: entry{time: t0, stream: stdout, partial: true, text: []byte("text")},
		},
		"zone offset": {
			line: "2024-01-02T05:04:05.5+02:00 stdout F x",
			want: entry{time: t0, stream: stdout, text: []byte("x")},
		},
		"bad time":      {line: "yesterday stdout F x", wantErr: true},
		"bad stream":    {line: "2024-01-02T03:04:05.5Z stdin F x", wantErr: true},
		"no stream":     {line: "2024-01-02T03:04:05.5Z", wantErr: true},
		"no tag":        {line: "2024-01-02T03:04:05.5Z stdout ", wantErr: true},
		"empty":         {line: "", wantErr: true},
		"docker format": {line: `{"log":"x\n","stream":"stdout","time":"2024-01-02T03:04:05Z"}`, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseEntry([]byte(tc.line))
			if tc.wantErr {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("parseEntry(%q) error = %v, want errMalformed", tc.line, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.time.Equal(tc.want.time) {
				t.Errorf("time = %v, want %v", got.time, tc.want.time)
			}
			got.time, tc.want.time = time.Time{}, time.Time{}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(entry{})); diff != "" {
				t.Errorf("parseEntry(%q) (-want,+got):\n%s", tc.line, diff)
			}
		})
	}
}

func TestAppendEntryRoundTrip(t *testing.T) {
	line := appendEntry(nil, t0, stderr, true, []byte("a b"))
	if want := "2024-01-02T03:04:05.5Z stderr P a b\n"; string(line) != want {
		t.Fatalf("appendEntry = %q, want %q", line, want)
	}
	e, err := parseEntry(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !e.time.Equal(t0) || e.stream != stderr || !e.partial || string(e.text) != "a b" {
		t.Errorf("round trip = %+v", e)
	}
}
