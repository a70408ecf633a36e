# skiff — the two commands: `make run` (install what is missing, build, run
# skiffd) and `make test` (every test). Both need root on Debian 12.

GO        ?= go
BIN       := bin
IMAGE_TAR := build/busybox-1.35.tar
DATA_DIR  ?= /var/lib/skiff
SKIFFD_FLAGS ?=
PKGS      := ./...

.PHONY: all deps build test-image test unit integration scale chaos run bench clean

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
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build:
	$(GO) build -o $(BIN)/skiffd ./cmd/skiffd

# test-image builds the one-layer busybox image that tests and `make run`
# import as docker.io/library/busybox:1.35 (no registry needed).
test-image: $(IMAGE_TAR)
$(IMAGE_TAR): hack/busybox-image.sh
	@[ -x /bin/busybox ] || $(MAKE) deps
	bash hack/busybox-image.sh $@

test: deps test-image unit integration scale

unit:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags failpoints ./failpoint/

# Integration tests start private containerds (temporary root, state and
# socket) and run real containers: root is needed.
integration: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags integration -timeout 30m -p 2 -parallel 4 $(PKGS)

# scale runs the 5000-pod Job on its own: beside the other tests it would
# load the machine (and their shared containerd) for many minutes.
scale: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags 'integration scale' -timeout 30m -run '^TestJobScale5000$$' ./daemon/

# chaos is issue 16's "done when": skiffd killed -9 twenty times during each
# of three 200-pod Jobs and containerd restarted four times during a 50-pod
# Job, checked against containerd's event stream (long; make test runs the
# short TestChaos). SKIFF_CHAOS_SEED=<seed> replays a run.
chaos: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -count=1 -tags 'integration chaos' -timeout 60m -v -run '^TestChaosDoneWhen$$' ./daemon/

run: deps build test-image
	$(BIN)/skiffd --data-dir $(DATA_DIR) --import-image $(IMAGE_TAR) $(SKIFFD_FLAGS)

# bench compares 100 Job pods through skiffd with the same containers run
# directly through containerd (see BENCHMARKS.md).
bench: deps test-image
	SKIFF_TEST_IMAGE=$(CURDIR)/$(IMAGE_TAR) $(GO) test -tags integration -run '^$$' -bench . -benchtime 1x -timeout 30m ./daemon/

clean:
	rm -rf $(BIN) build
