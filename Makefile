# skiff — the two commands: `make run` (install what is missing, build, run
# skiffd) and `make test` (every test). Both need root on Debian 12.

GO        ?= go
BIN       := bin
IMAGE_TAR := build/busybox-1.35.tar
DATA_DIR  ?= /var/lib/skiff
SKIFFD_FLAGS ?=
PKGS      := ./...

# What the binaries say they are (skiffd --version, /version): written in at
# link time. SOURCE_DATE_EPOCH, when set, makes the build date reproducible.
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GIT_COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
GIT_TREE_STATE ?= $(shell if [ -z "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then echo clean; else echo dirty; fi)
BUILD_DATE     ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO      := github.com/skiff-sh/skiff/internal/buildinfo
LDFLAGS        := -X $(BUILDINFO).gitVersion=$(VERSION) -X $(BUILDINFO).gitCommit=$(GIT_COMMIT) \
                  -X $(BUILDINFO).gitTreeState=$(GIT_TREE_STATE) -X $(BUILDINFO).buildDate=$(BUILD_DATE)

# SKIFFD_TAGS: containerd's plugin package links Go's plugin package unless
# no_dynamic_plugins is set, and a binary linking it exports every symbol
# and links libc dynamically: 17 MB more skiffd, mapped at every start.
# skiffd is a containerd client and loads no plugin. (The daemon tests'
# harness builds skiffd with the same tags.)
SKIFFD_TAGS := no_dynamic_plugins

# Where `make install` puts things; DESTDIR stages them (packaging, tests).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR  ?= $(PREFIX)/share/doc/skiff

.PHONY: all deps build test-image test unit deadcode integration scale helm-test conformance run bench bench-docker-setup bench-log-driver chaos clean install uninstall

all: build

# deps installs containerd, runc, the CNI plugins (pod networks) and
# Debian's static busybox (the test image is made from it) when missing.
deps:
	@missing=""; \
	command -v containerd >/dev/null || missing="$$missing containerd"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	[ -x /bin/busybox ] || missing="$$missing busybox-static"; \
	[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
	command -v iptables >/dev/null || missing="$$missing iptables"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	[ -f /usr/lib/python3/dist-packages/kubernetes/__init__.py ] || missing="$$missing python3-kubernetes"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# build makes skiffd (the daemon), skiff-log-driver (its containers' log
# driver, which skiffd finds beside itself) and skiff (the client: `skiff run`).
build:
	$(GO) build -tags '$(SKIFFD_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/skiffd ./cmd/skiffd
	$(GO) build -o $(BIN)/skiff-log-driver ./cmd/skiff-log-driver
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/skiff ./cmd/skiff

# install puts the binaries, the unit (its paths rewritten for PREFIX) and
# the README its Documentation= names in place; with no DESTDIR on a machine
# run by systemd it reloads systemd. It never touches the data dir.
install: build
	install -D -m 0755 $(BIN)/skiffd $(DESTDIR)$(BINDIR)/skiffd
	install -D -m 0755 $(BIN)/skiff-log-driver $(DESTDIR)$(BINDIR)/skiff-log-driver
	install -D -m 0755 $(BIN)/skiff $(DESTDIR)$(BINDIR)/skiff
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/usr/local/share/doc/skiff/|$(DOCDIR)/|g' \
		systemd/skiffd.service > $(DESTDIR)$(UNITDIR)/skiffd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/skiffd.service
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# uninstall removes what install put in place. A running skiffd is stopped
# first (its pods keep running: KillMode=process); /var/lib/skiff stays.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl disable --now skiffd.service 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(BINDIR)/skiffd $(DESTDIR)$(BINDIR)/skiff-log-driver $(DESTDIR)$(BINDIR)/skiff $(DESTDIR)$(UNITDIR)/skiffd.service
	rm -f $(DESTDIR)$(DOCDIR)/README.md
	rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# test-image builds the one-layer busybox image that tests and `make run`
# import as docker.io/library/busybox:1.35 (no registry needed).
test-image: $(IMAGE_TAR)
$(IMAGE_TAR): hack/busybox-image.sh
	@[ -x /bin/busybox ] || $(MAKE) deps
	bash hack/busybox-image.sh $@

test: deps test-image unit integration scale helm-test

unit: deadcode
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags failpoints ./failpoint/

# deadcode fails on a function nothing calls: neither skiffd nor any test,
# unit or integration (helpers that only the integration tests call are
# test code, not production). The tool comes from the Go module proxy.
DEADCODE         := $(BIN)/deadcode
DEADCODE_VERSION := v0.47.0
deadcode: $(DEADCODE)
	@dead="$$($(DEADCODE) -test -tags 'integration scale helm' $(PKGS))" || exit 1; \
	if [ -n "$$dead" ]; then echo "$$dead"; echo "deadcode: unreachable functions: delete them"; exit 1; fi

$(DEADCODE):
	GOBIN=$(CURDIR)/$(BIN) $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)

# Integration tests start private containerds (temporary root, state and
# socket) and run real containers: root is needed.
integration: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags integration -timeout 30m -p 2 -parallel 4 $(PKGS)

# scale runs the 5000-pod Job on its own: beside the other tests it would
# load the machine (and their shared containerd) for many minutes.
scale: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags 'integration scale' -timeout 45m -run '^TestJobScale5000$$' ./daemon/

# helm-test runs Helm 3 (install, test, upgrade, rollback, list, uninstall
# of a chart with hook Jobs, with both release drivers) against skiffd. Helm
# is built once from the Go module proxy and kept under build/ (about two
# minutes the first time; the test itself takes under a minute).
HELM_VERSION := v3.19.0
HELM         := build/helm-$(HELM_VERSION)/helm
helm-test: deps test-image $(HELM)
	SKIFF_HELM=$(CURDIR)/$(HELM) SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags 'integration helm' -timeout 10m -run '^TestHelm$$' ./daemon/

$(HELM):
	GOBIN=$(CURDIR)/$(dir $(HELM)) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# chaos is issue 16's "done when": skiffd killed -9 twenty times during each
# of three 200-pod Jobs and containerd restarted four times during a 50-pod
# Job, checked against containerd's event stream (long; make test runs the
# short TestChaos). SKIFF_CHAOS_SEED=<seed> replays a run.
chaos: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags 'integration chaos' -timeout 60m -v -run '^TestChaosDoneWhen$$' ./daemon/

# conformance runs Kubernetes' own e2e tests (the Job specs and the sig-node
# conformance specs) against a private skiffd: e2e.test, agnhost and pause
# are built from k8s.io/kubernetes (Go module proxy) once into build/e2e/,
# results go to build/conformance/ (hack/conformance.sh; CONFORMANCE.md).
conformance: deps
	bash hack/conformance.sh

# run serves https://<node>:6443 and writes the admin's kubeconfig at
# KUBECONFIG_OUT (skiffd's default, as k3s writes /etc/rancher/k3s/k3s.yaml).
KUBECONFIG_OUT ?= /etc/skiff/skiff.yaml
run: deps build test-image
	@echo "skiffd writes its kubeconfig when it serves; in another terminal: export KUBECONFIG=$(KUBECONFIG_OUT)"
	$(BIN)/skiffd --data-dir $(DATA_DIR) --import-image $(IMAGE_TAR) --write-kubeconfig $(KUBECONFIG_OUT) $(SKIFFD_FLAGS)

# bench prints, in one run, each of issue 15's figures beside its floor
# measured in the same run (BENCHMARKS.md): 200 `true` pods at parallelism 8
# through containerd directly, through skiffd on the pod network and on the
# host's network, and through `docker run --rm` when a Docker daemon with the
# test image answers (make bench-docker-setup); pod start latency; skiffd at
# rest and holding 10000 Jobs and 10000 finished Pods; the pod network's
# setup and teardown. It exits non-zero, naming each target missed
# ("target MISSED: …"); the load average is printed beside every figure.
# One package at a time (-p 1): the two would load each other's figures.
# The pods' benchmarks run first, on a machine nothing ran on yet: after
# BenchmarkConcurrentLists (a 2.4 GB peak) the machine is still reclaiming
# memory, and the throughput of a Job came out half again as slow.
BENCH_PODS := BenchmarkThroughput$$|BenchmarkPodLatency
bench: deps test-image
	@status=0; \
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -tags integration -run '^$$' -bench '$(BENCH_PODS)' -benchtime 1x -timeout 90m ./daemon/ || status=1; \
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -p 1 -tags integration -run '^$$' -bench . -skip '$(BENCH_PODS)' -benchtime 1x -timeout 90m ./daemon/ ./network/ || status=1; \
	exit $$status

# bench-docker-setup installs Debian's docker.io when dockerd is missing,
# starts dockerd when none answers (without its iptables rules and default
# bridge, so that it changes nothing on the host's network: the benchmark
# runs its containers on the host's network, as the floor's) and loads the
# test image into it. Only make bench uses Docker; make test never does.
# Stop the dockerd it started with: kill $$(cat build/dockerd.pid).
bench-docker-setup: test-image
	@if ! command -v dockerd >/dev/null; then \
		echo "installing docker.io"; \
		policy=/usr/sbin/policy-rc.d; made=""; \
		if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' > $$policy; chmod 0755 $$policy; made=1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; status=$$?; \
		[ -z "$$made" ] || rm -f $$policy; \
		[ $$status -eq 0 ] || exit $$status; \
	fi
	@if ! docker info >/dev/null 2>&1; then \
		mkdir -p build; \
		echo "starting dockerd (log: build/dockerd.log)"; \
		nohup dockerd --iptables=false --ip-masq=false --ip-forward=false --bridge=none \
			--pidfile $(CURDIR)/build/dockerd.pid > build/dockerd.log 2>&1 & \
		for i in $$(seq 1 100); do docker info >/dev/null 2>&1 && break; sleep 0.2; done; \
		docker info >/dev/null || { echo "dockerd does not answer: see build/dockerd.log"; exit 1; }; \
	fi
	@# Docker 20.10 loads no OCI layout: import the image's one layer (its
	@# largest blob) as the same name instead.
	layer=$$(tar -tvf $(IMAGE_TAR) --wildcards './blobs/sha256/*' | sort -k3 -n | tail -1 | awk '{print $$6}'); \
	tar -xOf $(IMAGE_TAR) "$$layer" | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["sh"]' - docker.io/library/busybox:1.35

# bench-log-driver measures one container's log driver process: exec to
# its first write, and PSS, RSS and private memory (smaps_rollup) with 1, 3
# and 20 drivers running (BENCHMARKS.md). SKIFF_LOG_DRIVER=<binary> measures
# another driver the same way, e.g. an older skiffd.
bench-log-driver:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 50x ./cmd/skiff-log-driver/

clean:
	rm -rf $(BIN) build
