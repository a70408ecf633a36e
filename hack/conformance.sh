#!/usr/bin/env bash
# conformance.sh — runs Kubernetes' own end-to-end tests against skiffd.
#
#   hack/conformance.sh            build what is missing, start a private skiffd, run, report
#   hack/conformance.sh build      only build e2e.test and the test images (cached)
#
# Everything is built from source: k8s.io/kubernetes@$K8S_VERSION comes from
# the Go module proxy; its go.mod points the staging modules at
# ./staging/src/..., which the module zip does not hold, so those replaces
# become requirements on the published v0.X.Y modules. From that tree come
# e2e.test, the ginkgo CLI that runs it, agnhost, nonewprivs and pause; busybox is
# built from Debian's source package of it. The images are imported under the names the tests use
# (e2e.test --list-images prints them, from test/utils/image/manifest.go).
#
# The run: a skiffd built from this tree, with its own data dir, embedded
# containerd, pod network, Service range, socket and port, so it shares
# nothing with a skiffd or test run elsewhere on the machine. e2e.test gets
# the standard flags and nothing that bypasses a check. Results go to
# build/conformance/: junit_01.xml, summary.md (spec, result, first error),
# e2e.log and skiffd.log.
#
# Knobs (environment):
#   K8S_VERSION        Kubernetes release the suite comes from (default v1.34.12)
#   CONFORMANCE_FOCUS  ginkgo focus regexp (default: the Job specs and the sig-node conformance specs)
#   CONFORMANCE_SKIP   ginkgo skip regexp (default: disruptive, flaky, Alpha and [Feature:…] specs, as
#                      conformance runs skip them)
#
# It exits non-zero when a spec failed.
#   CONFORMANCE_TIMEOUT ginkgo's overall timeout (default 3h)
#   CONFORMANCE_NODES  specs run at once (ginkgo --nodes; default 4: most of a spec is waiting)
#   CONFORMANCE_SLOT   0–9 (default 0): which set of host-global names the private skiffd takes
#                      (bridge, subnets, port, /run directory), so that runs from several
#                      checkouts on one machine do not collide
set -euo pipefail
umask 022

K8S_VERSION=${K8S_VERSION:-v1.34.12}
STAGING_VERSION=v0.${K8S_VERSION#v1.}
FOCUS=${CONFORMANCE_FOCUS:-'\[sig-apps\] Job|\[sig-node\].*\[Conformance\]'}
SKIP=${CONFORMANCE_SKIP:-'\[Disruptive\]|\[Flaky\]|\[Alpha\]|\[Feature:[^]]*\]'}
TIMEOUT=${CONFORMANCE_TIMEOUT:-3h}
NODES=${CONFORMANCE_NODES:-4}
GO=${GO:-go}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=$ROOT/build/e2e/$K8S_VERSION   # e2e.test, agnhost, pause, image tarballs: kept between runs
SRC=$ROOT/build/e2e/src-$K8S_VERSION  # the rewritten k8s.io/kubernetes tree
OUT=$ROOT/build/conformance           # this run's results
# The private skiffd's host-global names: its own bridge, subnets, port and
# /run directory (unix socket paths must stay short).
SLOT=${CONFORMANCE_SLOT:-0}
case $SLOT in [0-9]) ;; *) echo "CONFORMANCE_SLOT must be 0–9, not '$SLOT'" >&2; exit 2 ;; esac
if [ "$SLOT" = 0 ]; then RUN_DIR=/run/skiff-conformance; else RUN_DIR=/run/skiff-conformance$SLOT; fi
BRIDGE=skiffconf$SLOT
POD_SUBNET=10.$((91 + 2 * SLOT)).0.0/16
SERVICE_CIDR=10.$((92 + 2 * SLOT)).0.0/16
PORT=${CONFORMANCE_PORT:-$((7443 + SLOT))}
NAMESPACE=skiff-conformance

log() { printf '%s conformance: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

# fetch_source: the k8s.io/kubernetes module, its staging replaces turned
# into requirements on the published modules of the same release.
fetch_source() {
	[ -f "$SRC/.prepared" ] && return
	log "fetching k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
	local dir
	dir=$(cd /tmp && GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || die "k8s.io/kubernetes@$K8S_VERSION: the module proxy gave no source"
	rm -rf "$SRC"
	mkdir -p "$(dirname "$SRC")"
	cp -r "$dir" "$SRC"
	chmod -R u+w "$SRC"
	# go.work names the staging trees too: the build is of go.mod alone.
	rm -f "$SRC/go.work" "$SRC/go.work.sum"
	awk -v v="$STAGING_VERSION" '
		/^replace \($/ { inreplace = 1 }
		inreplace && /=> \.\/staging\// { next }
		inreplace && /^\)$/ { inreplace = 0 }
		/^\tk8s\.io\/[a-z0-9-]+ v0\.0\.0$/ { sub(/v0\.0\.0$/, v) }
		{ print }' "$SRC/go.mod" >"$SRC/go.mod.new"
	mv "$SRC/go.mod.new" "$SRC/go.mod"
	if grep -q '=> \./staging/' "$SRC/go.mod"; then die "go.mod still replaces staging modules"; fi
	touch "$SRC/.prepared"
}

# build_go OUT PKG [test]: one binary from the rewritten tree, at the lowest
# priority (the machine's cores are shared), static so that it runs in any
# image.
build_go() {
	local out=$1 pkg=$2 kind=${3:-}
	[ -x "$out" ] && return
	log "building $pkg (nice -n 19; e2e.test takes ten minutes or more)"
	mkdir -p "$(dirname "$out")"
	local cmd=(build)
	[ "$kind" = test ] && cmd=(test -c)
	(cd "$SRC" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
		nice -n 19 $GO "${cmd[@]}" -trimpath -o "$out.tmp" "$pkg")
	mv "$out.tmp" "$out"
}

# build_pause: the pause binary from build/pause/linux/pause.c, static.
build_pause() {
	local out=$CACHE/pause tag
	[ -x "$out" ] && return
	tag=$(image_tag pause)
	log "building pause $tag"
	nice -n 19 gcc -Os -Wall -Werror -static -DVERSION="v$tag-skiff" \
		-o "$out.tmp" "$SRC/build/pause/linux/pause.c"
	mv "$out.tmp" "$out"
}

# image_names REPO: the names e2e.test uses for an image of the public
# registries (registry.k8s.io/e2e-test-images/agnhost:2.56, …; busybox has
# two tags), not those of the test registries that need credentials.
image_names() {
	"$CACHE/e2e.test" --list-images | grep -E "^registry\.k8s\.io/(e2e-test-images/)?$1:[^/]+$" | tr '\n' ' '
}
image_tag() { image_names "$1" | sed 's/.*://; s/ *$//'; }

# build_images: OCI tarballs of agnhost, pause and busybox, named as the
# tests name them.
build_images() {
	local busybox=$CACHE/busybox
	if [ ! -x /bin/bash-static ]; then
		log "installing bash-static (agnhost's bash)"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bash-static
	fi
	local root
	if [ ! -f "$CACHE/agnhost.tar" ]; then
		root=$(mktemp -d)
		busybox_root "$root" "$busybox"
		# agnhost's Dockerfile adds bash and curl to its alpine base (the
		# exec hook specs run curl); sh stays busybox's ash, as alpine's.
		rm -f "$root/bin/bash" && cp /bin/bash-static "$root/bin/bash"
		cp "$CACHE/agnhost" "$root/agnhost"
		add_dynamic /usr/bin/curl "$root"
		ln -s agnhost "$root/agnhost-2"
		mkdir -p "$root/uploads"
		cp "$SRC/test/images/agnhost/porter/localhost.crt" "$SRC/test/images/agnhost/porter/localhost.key" "$root/"
		# The user and group test/images/agnhost/Dockerfile adds (SupplementalGroups specs).
		echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$root/etc/passwd"
		printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$root/etc/group"
		bash "$ROOT/hack/oci-image.sh" "$root" "$(image_names agnhost)" '["/agnhost"]' '["pause"]' '' "$CACHE/agnhost.tar"
		rm -rf "$root"
	fi
	if [ ! -f "$CACHE/pause.tar" ]; then
		root=$(mktemp -d)
		cp "$CACHE/pause" "$root/pause"
		bash "$ROOT/hack/oci-image.sh" "$root" "$(image_names pause)" '["/pause"]' 'null' '65535:65535' "$CACHE/pause.tar"
		rm -rf "$root"
	fi
	if [ ! -f "$CACHE/nonewprivs.tar" ]; then
		root=$(mktemp -d)
		busybox_root "$root" "$busybox"
		mkdir -p "$root/usr/local/bin"
		cp "$CACHE/nnp" "$root/usr/local/bin/nnp"
		chmod 4755 "$root/usr/local/bin/nnp" # setuid root, as its Dockerfile makes it
		bash "$ROOT/hack/oci-image.sh" "$root" "$(image_names nonewprivs)" 'null' '["nnp"]' '' "$CACHE/nonewprivs.tar"
		rm -rf "$root"
	fi
	if [ ! -f "$CACHE/busybox.tar" ]; then
		root=$(mktemp -d)
		busybox_root "$root" "$busybox"
		bash "$ROOT/hack/oci-image.sh" "$root" "$(image_names busybox)" 'null' '["sh"]' '' "$CACHE/busybox.tar"
		rm -rf "$root"
	fi
}

# build_busybox: a static busybox built from the upstream release in
# Debian's source package (its .orig tarball), with upstream's defconfig, as
# the e2e images' busybox is upstream's.
#
# NOTE: Debian's binary packages revert upstream's busybox commit 9c143ce52
# (debian/patches/revert-9c143ce52…), so their ash drops environment
# variables whose names are not shell identifiers ("data-1", from envFrom)
# before it runs a command. The ConfigMap and Secret env specs run
# `sh -c env` and look for those; the read-only busybox spec looks for ash's
# own words ("/bin/sh: can't create /file: Read-only file system"). Only
# upstream's ash gives both. The source comes through apt from the machine's
# own Debian mirror (its deb entries, read as deb-src), into a private apt
# directory: the host's apt configuration is left as it is.
build_busybox() {
	local out=$CACHE/busybox
	[ -x "$out" ] && return
	log "building busybox from Debian's source package"
	local apt=$CACHE/apt work
	rm -rf "$apt"
	mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/src"
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		sed -n '/^Types:/s/\bdeb\b/deb-src/; p' "$f" >"$apt/sources.list.d/$(basename "$f")"
	done
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list >"$apt/sources.list"
	else
		: >"$apt/sources.list"
	fi
	local aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
		-o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1)
	apt-get "${aptopts[@]}" -qq update || die "apt-get update of the deb-src lists failed"
	(cd "$apt/src" && apt-get "${aptopts[@]}" -qq source --download-only busybox) ||
		die "apt-get source busybox failed"
	local orig
	orig=$(ls "$apt"/src/busybox_*.orig.tar.* 2>/dev/null | head -1)
	[ -n "$orig" ] || die "Debian's busybox source package has no .orig tarball"
	work=$(mktemp -d)
	tar -xf "$orig" -C "$work" --strip-components=1
	(cd "$work" && make -s defconfig >/dev/null &&
		sed -i 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' .config &&
		grep -q '^CONFIG_STATIC=y$' .config &&
		{ yes '' || true; } | make -s oldconfig >/dev/null && # yes ends by SIGPIPE: not a failure
		nice -n 19 make -s -j"$(nproc)" busybox >"$work.log" 2>&1) ||
		die "building busybox failed; see $work.log"
	env -i 'data-1=kept' "$work/busybox" sh -c env | grep -qx 'data-1=kept' ||
		die "the busybox built drops environment variables that are not shell names"
	mv "$work/busybox" "$out"
	rm -rf "$work" "$work.log"
}

# add_dynamic BINARY ROOT: a dynamically linked binary of this machine and
# the libraries it loads, at their paths, into ROOT (what the upstream
# images install with apk: curl, which the lifecycle hook specs run).
add_dynamic() {
	local bin=$1 root=$2 lib
	cp --parents -L "$bin" "$root"
	for lib in $(ldd "$bin" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		cp --parents -L "$lib" "$root"
	done
}

# busybox_root DIR BUSYBOX: a root file system of busybox and its applets
# (sh is its ash), root and nobody users, as the e2e busybox image has.
busybox_root() {
	local root=$1 busybox=$2 applet
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home" "$root/proc" "$root/sys" "$root/dev"
	chmod 1777 "$root/tmp"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
}

build_all() {
	fetch_source
	mkdir -p "$CACHE"
	build_go "$CACHE/e2e.test" ./test/e2e test
	build_go "$CACHE/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
	build_go "$CACHE/agnhost" ./test/images/agnhost
	build_go "$CACHE/nnp" ./test/images/nonewprivs
	build_pause
	build_busybox
	build_images
}

SKIFFD_PID=
# start_skiffd: a skiffd of this tree with a containerd of its own (nothing
# answers at --containerd-address, so it starts its embedded one under
# RUN_DIR), the three images imported. It listens on every address (pods
# reach the API through the kubernetes Service, at the node's address) and
# writes the admin's kubeconfig the suite uses. The RuntimeClass specs'
# handler, test-handler (the e2e framework's
# PreconfiguredRuntimeClassHandler), runs with runc, as kube-up configures
# containerd for the suite.
start_skiffd() {
	log "building skiffd"
	(cd "$ROOT" && make -s build)
	rm -rf "$OUT/data"
	mkdir -p "$OUT/data" "$RUN_DIR"
	"$ROOT/bin/skiffd" --data-dir "$OUT/data" \
		--containerd-address "$RUN_DIR/none.sock" --containerd-namespace "$NAMESPACE" \
		--socket "$RUN_DIR/skiff.sock" --listen ":$PORT" --write-kubeconfig "$OUT/kubeconfig" \
		--pod-subnet "$POD_SUBNET" --pod-bridge "$BRIDGE" --service-cidr "$SERVICE_CIDR" \
		--import-image "$CACHE/agnhost.tar" --import-image "$CACHE/pause.tar" --import-image "$CACHE/busybox.tar" \
		--import-image "$CACHE/nonewprivs.tar" --runtime-handler test-handler=io.containerd.runc.v2 \
		>"$OUT/skiffd.log" 2>&1 &
	SKIFFD_PID=$!
	local deadline=$((SECONDS + 300))
	until [ -f "$OUT/kubeconfig" ] && curl -fsSk "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
		kill -0 "$SKIFFD_PID" 2>/dev/null || die "skiffd exited; see $OUT/skiffd.log"
		[ $SECONDS -lt $deadline ] || die "skiffd not ready after 5 minutes; see $OUT/skiffd.log"
		sleep 1
	done
	log "skiffd ready on :$PORT (pid $SKIFFD_PID), kubeconfig $OUT/kubeconfig"
}

# stop_skiffd: the pods go first (containers outlive skiffd by design, and
# these must not), then skiffd and its embedded containerd, then the pod
# network's bridge and host rules.
stop_skiffd() {
	[ -n "$SKIFFD_PID" ] || return 0
	if kill -0 "$SKIFFD_PID" 2>/dev/null; then
		# Not --force: a pod object goes only once skiffd has stopped its
		# containers, which is what is waited for.
		kubectl --kubeconfig "$OUT/kubeconfig" delete pods --all --all-namespaces --grace-period=1 \
			--wait=true --timeout=3m >/dev/null 2>&1 || log "some pods were not deleted"
		kill -TERM "$SKIFFD_PID"
		wait "$SKIFFD_PID" || true
	fi
	SKIFFD_PID=
	# skiffd keeps its bridge and iptables rules across restarts, by design;
	# a finished run removes them.
	(cd "$ROOT" && $GO run ./hack/conformance-cleanup --data-dir "$OUT/data" --subnet "$POD_SUBNET" --bridge "$BRIDGE") ||
		log "cleaning up the pod network failed"
}

# run_suite: e2e.test under the ginkgo CLI with the standard flags (those
# of test/conformance/image/go-runner), NODES specs at a time ([Serial]
# ones alone at the end), then the summary.
SUITE_RC=0
run_suite() {
	log "running $NODES at a time: focus '$FOCUS' skip '$SKIP'"
	local rc=0
	"$CACHE/ginkgo" --nodes="$NODES" \
		--focus="$FOCUS" --skip="$SKIP" --timeout="$TIMEOUT" --no-color -v \
		"$CACHE/e2e.test" -- \
		--kubeconfig="$OUT/kubeconfig" \
		--provider=skeleton \
		--disable-log-dump \
		--report-dir="$OUT" \
		--repo-root="$SRC" \
		>"$OUT/e2e.log" 2>&1 || rc=$?
	log "the suite exited $rc"
	[ -f "$OUT/junit_01.xml" ] || die "no JUnit report; see $OUT/e2e.log"
	(cd "$ROOT" && $GO run ./hack/conformance-summary "$OUT/junit_01.xml") >"$OUT/summary.md"
	head -n1 "$OUT/summary.md" >&2
	SUITE_RC=$rc
}

main() {
	build_all
	[ "${1:-}" = build ] && return
	[ "$(id -u)" = 0 ] || die "run as root (skiffd runs containers)"
	rm -rf "$OUT"
	mkdir -p "$OUT"
	trap stop_skiffd EXIT
	start_skiffd
	run_suite
	return "$SUITE_RC" # a failed spec fails the target, after the cleanup
}

# Sourced (to use its functions by hand), it runs nothing.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
