package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// listOptions are the query parameters of a list or watch.
type listOptions struct {
	label     labels.Selector
	field     fields.Selector
	limit     int64
	cont      string // the key (namespace/name) after which the page starts
	rv        string
	watch     bool
	bookmarks bool
	// sendInitial (sendInitialEvents=true): the current state first, then
	// a bookmark marking its end (client-go's watch-list).
	sendInitial bool
	timeout     time.Duration // 0 = none
}

// parseListOptions reads the list/watch query of a request for rs.
func parseListOptions(r *http.Request, rs *resource) (listOptions, error) {
	q := r.URL.Query()
	opts := listOptions{rv: q.Get("resourceVersion")}
	var err error
	if opts.label, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if opts.field, err = parseFieldSelector(q.Get("fieldSelector"), rs); err != nil {
		return opts, err
	}
	if opts.watch, err = boolParam(q.Get("watch"), "watch"); err != nil {
		return opts, err
	}
	if opts.bookmarks, err = boolParam(q.Get("allowWatchBookmarks"), "allowWatchBookmarks"); err != nil {
		return opts, err
	}
	if opts.sendInitial, err = boolParam(q.Get("sendInitialEvents"), "sendInitialEvents"); err != nil {
		return opts, err
	}
	if opts.sendInitial && !opts.watch {
		return opts, apierrors.NewBadRequest("sendInitialEvents is forbidden for list")
	}
	if opts.limit, err = intParam(q.Get("limit"), "limit"); err != nil {
		return opts, err
	}
	secs, err := intParam(q.Get("timeoutSeconds"), "timeoutSeconds")
	if err != nil {
		return opts, err
	}
	opts.timeout = time.Duration(secs) * time.Second
	if c := q.Get("continue"); c != "" {
		key, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || len(key) == 0 {
			return opts, apierrors.NewBadRequest("continue key is not valid: invalid continue token")
		}
		opts.cont = string(key)
	}
	if _, err := parseRV(opts.rv); err != nil {
		return opts, err
	}
	return opts, nil
}

// parseFieldSelector parses a field selector, refusing fields rs does not
// support as kube-apiserver does.
func parseFieldSelector(s string, rs *resource) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	for _, req := range sel.Requirements() {
		if !rs.hasField(req.Field) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return sel, nil
}

// hasField reports whether rs supports the field in field selectors.
func (rs *resource) hasField(name string) bool {
	_, ok := rs.fields(rs.store.New())[name]
	return ok
}

// parseRV parses a resourceVersion parameter ("" = 0).
func parseRV(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

func boolParam(v, name string) (bool, error) {
	switch v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, apierrors.NewBadRequest(fmt.Sprintf("invalid value %q for %s: must be true or false", v, name))
}

func intParam(v, name string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid value %q for %s: must be a non-negative integer", v, name))
	}
	return n, nil
}

// continueToken is the opaque token that resumes a list after key.
func continueToken(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}
