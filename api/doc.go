// Package api serves the Kubernetes REST API of skiff's node over HTTP:
// batch/v1 Jobs and CronJobs and core/v1 Pods, and what goes with them (Events in core/v1
// and events.k8s.io/v1, Namespaces, the Node, Services with their Endpoints
// and discovery.k8s.io/v1 EndpointSlices), plus skiff's own image import
// endpoint. It speaks to the store (package db); what happens in the
// containers (exec, attach, port-forward, logs) it reaches through the kubelet's narrow
// Streams interface, and it never sees containerd. Kubernetes' object rules are not here:
// it calls package kube for them, as the controllers do, for every kind it
// serves.
//
// # Request flow
//
//	HTTP ─ withLogging ─ withRequestMetrics ─ withRecovery ─┬─ /metrics (metrics.go; no API seat)
//	                                                        └─ withRequestTimeout ─ withMaxInFlight ─ mux
//	                                                           (routes.go, the one route table)
//	  │
//	  ├─ discovery, /version, OpenAPI v2 and v3 (generated from k8s.io/api types)
//	  ├─ generic resource handlers, one set for every kind, driven by a *resource
//	  │     read.go    GET, list (pages from one snapshot), ?watch=true (watch.go)
//	  │     write.go   POST (create), PUT (update), /status
//	  │     patch.go   json, merge, strategic-merge and apply patches (apply.go)
//	  │     delete.go  DELETE, deletecollection: grace, preconditions, propagation
//	  │     table.go   Table answers for kubectl get (each kind's columns and cells)
//	  │     storedlist.go, storedtable.go  JSON lists and Tables written from the
//	  │                stored JSON (a Table reads only its cells' fields: jsoncursor.go)
//	  ├─ pod subresources: log (log.go), exec and attach (exec.go),
//	  │     portforward (portforward.go), all four through the narrow Streams
//	  │     interface; proxy, ephemeralcontainers, eviction
//	  ├─ empty lists of the workload kinds a node never holds (absentkinds.go)
//	  ├─ metrics.k8s.io/v1beta1 PodMetrics and NodeMetrics (resourcemetrics.go,
//	  │     through the narrow ResourceMetrics interface)
//	  └─ POST /skiff/v1/images (images.go, through Images)
//
// # Resources
//
// A *resource (resources.go) names a kind (group, version, plural, short
// names, store bucket) and holds its policy hooks: prepareCreate,
// validateCreate, prepareUpdate, validateUpdate, validateStatusUpdate, the
// spec that moves metadata.generation, the default propagation and the
// deletion grace. Each kind's file (pods.go, jobs.go, services.go, …) wires
// those hooks to kube: kube.PodStrategy, kube.PrepareJobForCreate,
// kube.ValidateServiceUpdate and so on. A handler never knows which kind it
// serves beyond its *resource.
//
// A create (createObject) follows kube-apiserver's order: clear the system
// metadata, choose the name (generateName, retried when taken) and UID,
// prepare (defaults), record managedFields for the field manager, validate
// the metadata (kube.ValidateObjectMeta) and the object, then in one store
// transaction admit it (kube.AdmitNamespace; a Service's ClusterIP is
// allocated there too) and store it. An update (updateObject) reads, changes,
// checks resourceVersion and uid preconditions, keeps what the client may not
// change, bumps the generation when the spec moved, validates and writes, all
// in one transaction. A dry run takes the same path and stops short of the
// write.
//
// # Errors
//
// Every failure reaches the client as a metav1.Status with kube-apiserver's
// code, reason and message. statusFor (errors.go) is the one place where the
// store's sentinel errors (db.ErrNotFound, ErrAlreadyExists, ErrConflict,
// ErrExpired, …) become Status errors; validation answers 422 Invalid with
// kube's field causes; a panic in a handler is a 500 Status (middleware.go).
//
// # Streams
//
// Watches, log follows, exec, attach and port-forward are long-running: they end when the
// request's context does. The daemon's http.Server gives requests a
// BaseContext cancelled on shutdown, so that they end then too. The API
// parses a /log request (the container, as kube-apiserver picks it, and the
// query) and Streams.Log does the rest, as the kubelet does behind
// kube-apiserver: which instance's file it reads and when a follower moves on
// to the next one are the kubelet's knowledge (package kubelet, log.go).
package api
