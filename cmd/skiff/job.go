package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifest is a Job manifest as the user wrote it: sent as it is, so that
// the server validates every field of it (fieldValidation=Strict), as
// `kubectl create` does.
type manifest struct {
	json      []byte // the one object, as JSON
	namespace string // its metadata.namespace, "" if unset
}

// readManifest reads one batch/v1 Job from path ("-": in).
func readManifest(path string, in io.Reader) (manifest, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return manifest{}, fmt.Errorf("reading the Job manifest: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs [][]byte
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return manifest{}, fmt.Errorf("%s: %w", path, err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue // an empty document, as between two ---
		}
		docs = append(docs, raw)
	}
	if len(docs) != 1 {
		return manifest{}, fmt.Errorf("%s holds %d objects: skiff run takes one Job", path, len(docs))
	}
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(docs[0], &head); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", path, err)
	}
	if head.APIVersion != "batch/v1" || head.Kind != "Job" {
		return manifest{}, fmt.Errorf("%s is a %s %s: skiff run takes a batch/v1 Job", path, head.APIVersion, head.Kind)
	}
	return manifest{json: docs[0], namespace: head.Metadata.Namespace}, nil
}

// jobSpec is a Job to build from flags, as `kubectl create job` and
// `kubectl run` build theirs.
type jobSpec struct {
	image        string
	name         string // "" = generated from the image's name
	completions  int
	parallelism  int
	backoffLimit int // < 0 = the API's default
	command      bool
	args         []string
}

// job builds the Job: one container named after the image, restartPolicy
// Never; args become the container's args (appended to the image's
// entrypoint), or its command with command set.
func (s jobSpec) job() *batchv1.Job {
	base := imageBase(s.image)
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		Spec: batchv1.JobSpec{
			Completions: ptr(int32(s.completions)),
			Parallelism: ptr(int32(s.parallelism)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: base, Image: s.image}},
			}},
		},
	}
	if s.name != "" {
		job.Name = s.name
	} else {
		job.GenerateName = base + "-"
	}
	if s.backoffLimit >= 0 {
		job.Spec.BackoffLimit = ptr(int32(s.backoffLimit))
	}
	if s.command {
		job.Spec.Template.Spec.Containers[0].Command = s.args
	} else {
		job.Spec.Template.Spec.Containers[0].Args = s.args
	}
	return job
}

// imageBase is the image's last path element without tag or digest, made a
// DNS label ("docker.io/library/busybox:1.35" → "busybox"), or "job".
func imageBase(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	name, _, _ = strings.Cut(name, ":")
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, name)
	name = strings.Trim(name, "-")
	// NOTE: room for generateName's five random characters.
	if len(name) > validation.DNS1123LabelMaxLength-6 {
		name = strings.TrimRight(name[:validation.DNS1123LabelMaxLength-6], "-")
	}
	if name == "" || len(validation.IsDNS1123Label(name)) > 0 {
		return "job"
	}
	return name
}

func ptr[T any](v T) *T { return &v }
