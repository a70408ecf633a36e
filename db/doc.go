// Package db is skiff's object store: Kubernetes API objects kept as JSON in
// one bbolt file, a single resourceVersion counter, and a persisted log of
// committed changes that feeds watches, live and after a restart.
//
// Bucket tree:
//
//	meta/
//	    rv         → uint64 BE: the last assigned resourceVersion
//	    compacted  → uint64 BE: the newest resourceVersion trimmed from changes/ (absent = 0)
//	objects/
//	    <resource>/                  (Resource.Name: "jobs", "cronjobs", "pods", "events", "namespaces", "nodes",
//	                                 "services", "endpoints", "endpointslices", "configmaps", "secrets",
//	                                 "serviceaccounts", "roles", "rolebindings", "clusterroles",
//	                                 "clusterrolebindings", "podtemplates", "leases",
//	                                 "runtimeclasses";
//	                                 created on first write; cluster-scoped ones have namespace "")
//	        <namespace> NUL <name>  → uint64 BE resourceVersion ‖ object JSON
//	changes/
//	    <resourceVersion uint64 BE> → "<ADDED|MODIFIED|DELETED> <resource> <len(prev)>\n" ‖ prev ‖ object JSON
//	                                  (prev: the objects/ value the change replaced, empty for ADDED)
//
// Object JSON carries neither resourceVersion (the 8-byte prefix does) nor
// apiVersion/kind: returned objects have an empty TypeMeta.
//
// Every change (create, update, delete) takes the next resourceVersion, so
// the resourceVersions in changes/ are exactly (compacted, rv]; each write
// transaction trims the oldest entries beyond the retained count. Since each
// change keeps the value it replaced, the state as of any resourceVersion
// ≥ compacted can be rebuilt by undoing the later changes (Tx.ListAt): that
// is how paginated and exact lists read one consistent snapshot.
//
// Writes are serialized by the store and published to watchers from bbolt's
// OnCommit, in resourceVersion order; a watcher never sees uncommitted state
// and never blocks a writer (its queue is in memory and capped). Writes
// that arrive while a commit is on its way to the disk share the next one
// (group commit, commit.go): one fsync for all of them, each still all or
// nothing.
//
// A full disk: a commit that cannot get its pages onto the disk (ENOSPC,
// EDQUOT) is rolled back whole by bbolt and fails with ErrNoSpace; reads go
// on, and an existing store opens without writing, so skiffd starts on a
// full disk. A write that changes nothing is rolled back rather than
// committed. Writable reports whether the disk takes writes, probing it
// while it was full.
package db
