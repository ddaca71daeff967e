# The commands people type. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
CARGO ?= cargo
GO ?= go

APISERVER := target/odh-test-apiserver
K8S_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2; exit }' tests/apiserver/go.mod)
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
APISERVER_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean
TEST_APISERVER_DIR := target/test-apiserver

# Every plugin crate: plugins/<name>, plugins/examples/<name>, plugins/testing/<name>. The SDK
# and the libraries under plugins/lib are not plugins. Built into target/wasm, the same
# directory host/app/build.rs uses for the built-in ones, then copied to target/plugins.
WASM_PLUGINS := $(notdir $(patsubst %/Cargo.toml,%,$(wildcard plugins/*/Cargo.toml plugins/examples/*/Cargo.toml plugins/testing/*/Cargo.toml)))
WASM_PLUGINS := $(filter-out sdk,$(WASM_PLUGINS))
WASM_TARGET_DIR := target/wasm

.PHONY: all build test test-deps toolchain lint-toolchain run cluster plugins bench bench-gate lint audit fmt crds apiserver stop-test-apiserver clean static-binary

all: build

## toolchain: the pinned Rust with the wasm32-wasip2 target (rustup adds no target by itself)
toolchain:
	@tests/dev/toolchain.sh

lint-toolchain:
	@tests/dev/toolchain.sh lint

## build: the host binary and developer helpers
build: toolchain
	$(CARGO) build --workspace --bins

## apiserver: the kube-apiserver + etcd launcher used by tests and `make run`
apiserver: $(APISERVER)

$(APISERVER): $(wildcard tests/apiserver/*.go) tests/apiserver/go.mod tests/apiserver/go.sum
	cd tests/apiserver && $(GO) build -trimpath -ldflags "$(APISERVER_LDFLAGS)" -o ../../$(APISERVER) .

## plugins: every plugin to target/plugins/<name>.wasm
plugins: toolchain
	@mkdir -p target/plugins
	$(CARGO) build --profile wasm --target wasm32-wasip2 --target-dir $(WASM_TARGET_DIR) $(addprefix -p ,$(WASM_PLUGINS))
	@# Tests run this while other tests (and their child processes) read target/plugins: a file
	@# is replaced by a rename, never rewritten in place, and left alone when unchanged.
	@for p in $(WASM_PLUGINS); do \
		src=$(WASM_TARGET_DIR)/wasm32-wasip2/wasm/$$(echo $$p | tr - _).wasm; dst=target/plugins/$$p.wasm; \
		cmp -s $$src $$dst && continue; \
		cp $$src $$dst.tmp.$$$$ && mv -f $$dst.tmp.$$$$ $$dst || exit 1; \
	done

## test-deps: Debian's OCI distribution registry, for the oci:// plugin-source tests, and kubectl,
## for the tests that render the deploy overlays (built from the Go module proxy when missing)
test-deps:
	@tests/dev/kubectl.sh
	@command -v docker-registry >/dev/null || { echo "installing docker-registry (Debian package)"; \
		apt-get install -y -q docker-registry >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q docker-registry >/dev/null; }; }

# Every cargo command of `make test` selects the whole workspace with its tests, so all resolve
# the same features and share one build of each crate: a `-p` subset or a build without
# dev-dependencies resolves some dependencies' features differently (indexmap, typenum, ...),
# which rebuilds wasmtime, kube and the host once more each (minutes, and gigabytes of target/).
WORKSPACE_BINS := $(CARGO) build -q --workspace --bins --tests

## test: every test, unit and integration, against a real kube-apiserver
test: toolchain test-deps $(APISERVER) plugins
	@status=0; $(CARGO) test --workspace --no-fail-fast || status=$$?; \
		$(MAKE) --no-print-directory bench-gate || status=$$?; \
		$(MAKE) --no-print-directory stop-test-apiserver; \
		{ $(WORKSPACE_BINS) && tests/dev/run-check.sh; } || status=$$?; \
		exit $$status

## stop-test-apiserver: stop the apiserver shared by a test run (it also stops itself when idle)
stop-test-apiserver:
	@pid=$$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' $(TEST_APISERVER_DIR)/ready.json 2>/dev/null); \
		if [ -n "$$pid" ] && kill $$pid 2>/dev/null; then \
			for i in $$(seq 1 100); do kill -0 $$pid 2>/dev/null || break; sleep 0.1; done; \
		fi; true

## cluster: only the local apiserver, in the foreground (kubeconfig: target/dev-cluster/kubeconfig)
cluster: $(APISERVER)
	$(APISERVER) --dir target/dev-cluster

## run: the controller against $KUBECONFIG, or against a local apiserver it starts
run: build $(APISERVER)
	tests/dev/run.sh

## lint: formatting, the dependency audit, clippy; warnings are errors
lint: lint-toolchain
	$(CARGO) fmt --all -- --check
	@$(MAKE) --no-print-directory audit
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## audit: cargo-deny with deny.toml: licences, bans, sources; advisories when the RustSec database
## can be fetched, or from ODH_ADVISORY_DB=<git clone of rustsec/advisory-db>, else said skipped
audit: lint-toolchain
	@CARGO="$(CARGO)" tests/dev/audit.sh

fmt:
	$(CARGO) fmt --all

## crds: regenerate deploy/crds from the Rust types
crds: toolchain
	$(CARGO) run -q -p odh-model-controller -- crds --write deploy/crds

## bench: benchmarks (results in target/bench/). The benches that run the host binary run the
## image's static musl build when `make static-binary` made one (ODH_BENCH_HOST_BIN overrides);
## ODH_BENCH_MUSL=1 builds the in-process ones for musl too. Every JSON says which build it came
## from (`bench_process`, `host_binary`). With ODH_BENCH_UPSTREAM_BIN=<upstream's Go manager, built
## by ../shared/tools/build-upstream outside the repo>, also side by side with it, same run:
## admission (peer_admission.json) and the storm at 200 and 1,000 (peer_storm.json).
BENCH_HOST_BIN = $(or $(ODH_BENCH_HOST_BIN),$(if $(wildcard $(STATIC_BINARY)),$(CURDIR)/$(STATIC_BINARY)))
BENCH_TARGET = $(if $(ODH_BENCH_MUSL),--target $(STATIC_TARGET))
bench: plugins $(APISERVER)
	$(CARGO) bench -p odh-model-controller $(BENCH_TARGET) --bench plugin_runtime
	$(CARGO) bench -p odh-model-controller $(BENCH_TARGET) --bench admission
	$(CARGO) bench -p odh-model-controller $(BENCH_TARGET) --bench keys
	ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) $(CARGO) bench -p odh-model-controller --bench startup
	ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) $(CARGO) bench -p odh-model-controller --bench isvc_converge
	ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) ODH_BENCH_HOST_ARGS=--kube-api-qps=0 ODH_BENCH_LABEL=unlimited $(CARGO) bench -p odh-model-controller --bench isvc_converge
	ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) ODH_BENCH_WORKERS=4 $(CARGO) bench -p odh-model-controller --bench isvc_converge
	$(if $(ODH_BENCH_UPSTREAM_BIN),ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) $(CARGO) bench -p odh-model-controller --bench peer_admission)
	$(if $(ODH_BENCH_UPSTREAM_BIN),ODH_BENCH_HOST_BIN=$(BENCH_HOST_BIN) $(CARGO) bench -p odh-model-controller --bench peer_storm)

## bench-scale: the storm at 200, 1,000 and 5,000 InferenceServices, and with 10,000 cached
## Secrets and ConfigMaps (target/bench/isvc_converge_*.json)
bench-scale: plugins $(APISERVER)
	for n in 200 1000 5000; do ODH_BENCH_ISVCS=$$n $(CARGO) bench -p odh-model-controller --bench isvc_converge || exit 1; done
	ODH_BENCH_CACHED_OBJECTS=5000 ODH_BENCH_LABEL=cached10k $(CARGO) bench -p odh-model-controller --bench isvc_converge

## bench-gate: the compute-only benchmarks (plugin calls, admission through HTTPS, start-up), short
## and in the test profile, against the generous limits of host/app/benches/gate.json (part of make test)
BENCH_GATE_DIR := target/bench/gate
bench-gate: plugins $(APISERVER)
	@rm -rf $(BENCH_GATE_DIR)
	ODH_BENCH_OUT_DIR=$(CURDIR)/$(BENCH_GATE_DIR) BENCH_ITERATIONS=2000 BENCH_COMPILES=2 \
		ADMISSION_BENCH_REQUESTS=2000 ODH_BENCH_WARM_STARTS=3 \
		$(CARGO) bench --profile dev --workspace --bench plugin_runtime --bench admission --bench startup
	$(WORKSPACE_BINS)
	target/debug/odh-dev bench-gate host/app/benches/gate.json $(BENCH_GATE_DIR)

clean:
	$(CARGO) clean

.PHONY: deploy-manifests deploy undeploy image

## deploy-manifests: regenerate deploy/generated (RBAC, webhooks) from the built-in plugins
deploy-manifests: toolchain
	$(CARGO) run -q -p odh-model-controller -- deploy-manifests --dir deploy

# Which overlay `make deploy` applies: openshift (service-ca) or xks (cert-manager, webhook-only).
DEPLOY_OVERLAY ?= openshift
IMG ?= quay.io/opendatahub/odh-model-controller:odh-incubating
KUBECTL ?= kubectl
CONTAINER_TOOL ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)

## deploy: apply deploy/overlays/$(DEPLOY_OVERLAY) with image $(IMG) to the cluster of KUBECONFIG
# Server-side apply with --force-conflicts: over an upstream install, fields kubectl
# client-side apply or the platform operator own with other values (the image, a parameter)
# become ours instead of failing the deploy; fields kubectl alone applied that we do not set
# are removed (kubectl migrates its client-side ownership). See docs/operations.md.
deploy:
	@command -v $(KUBECTL) >/dev/null || { echo "kubectl is needed for make deploy"; exit 1; }
	$(KUBECTL) kustomize deploy/overlays/$(DEPLOY_OVERLAY) \
		| sed 's|quay.io/opendatahub/odh-model-controller:odh-incubating|$(IMG)|' \
		| $(KUBECTL) apply --server-side --force-conflicts --field-manager=odh-model-controller-deploy -f -

## undeploy: delete what `make deploy` applied (the plugins ConfigMap and the Account CRD too)
undeploy:
	@command -v $(KUBECTL) >/dev/null || { echo "kubectl is needed for make undeploy"; exit 1; }
	$(KUBECTL) kustomize deploy/overlays/$(DEPLOY_OVERLAY) | $(KUBECTL) delete --ignore-not-found -f -

# --- architectures (issue #36) ------------------------------------------------------------------
# ARCH=amd64|arm64|s390x|ppc64le (Go/OCI names, as TARGETARCH sets them) picks the Rust target
# `make static-binary` cross-compiles for, from an x86_64 machine, with Debian's cross gcc as C
# compiler (aws-lc, ring, jemalloc) and linker. arm64 is musl, as amd64; s390x and ppc64le have
# no musl standard library in rustup, so they are glibc, statically linked (+crt-static).
# Everything is set per target triple, so nothing here changes the native build.
ARCH ?= amd64
ARCHES := amd64 arm64 s390x ppc64le
TRIPLE_amd64 := x86_64-unknown-linux-musl
TRIPLE_arm64 := aarch64-unknown-linux-musl
TRIPLE_s390x := s390x-unknown-linux-gnu
TRIPLE_ppc64le := powerpc64le-unknown-linux-gnu
# How a foreign binary is run here (Debian's qemu-user-static).
QEMU_amd64 :=
QEMU_arm64 := qemu-aarch64-static
QEMU_s390x := qemu-s390x-static
QEMU_ppc64le := qemu-ppc64le-static
STATIC_QEMU = $(QEMU_$(ARCH))
# The static-pie's relative relocations packed (DT_RELR, which musl's start-up applies): the
# table read once at every start shrinks from 1.8 MiB of resident memory to 21 KiB
# (docs/performance.md, "Reconcile storm"). amd64 only until arm64's is checked under qemu.
static-binary: export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := -C link-arg=-Wl,-z,pack-relative-relocs
static-binary: export CC_aarch64_unknown_linux_musl := aarch64-linux-gnu-gcc
static-binary: export AR_aarch64_unknown_linux_musl := aarch64-linux-gnu-ar
static-binary: export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER := aarch64-linux-gnu-gcc
static-binary: export CC_s390x_unknown_linux_gnu := s390x-linux-gnu-gcc
static-binary: export AR_s390x_unknown_linux_gnu := s390x-linux-gnu-ar
static-binary: export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_LINKER := s390x-linux-gnu-gcc
static-binary: export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_RUSTFLAGS := -C target-feature=+crt-static
static-binary: export CC_powerpc64le_unknown_linux_gnu := powerpc64le-linux-gnu-gcc
static-binary: export AR_powerpc64le_unknown_linux_gnu := powerpc64le-linux-gnu-ar
static-binary: export CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_LINKER := powerpc64le-linux-gnu-gcc
static-binary: export CARGO_TARGET_POWERPC64LE_UNKNOWN_LINUX_GNU_RUSTFLAGS := -C target-feature=+crt-static
ifeq ($(ARCH),arm64)
# jemalloc's page size is fixed when it is built, and a cross build cannot probe it: 64 KiB
# works on 4 KiB and 64 KiB kernels alike (RHEL ships both for aarch64), 4 KiB only on the first.
static-binary: export JEMALLOC_SYS_WITH_LG_PAGE := 16
endif
ifeq ($(filter $(ARCH),$(ARCHES)),)
$(error ARCH=$(ARCH): one of $(ARCHES))
endif

## precompiled: the built-ins compiled for ARCH's image into PRECOMPILED_OUT (the Containerfile
## runs it after static-binary). A foreign binary compiles for itself under qemu-user: this
## machine's build has no Cranelift backend but its own (docs/decisions.md).
PRECOMPILED_OUT ?= target/precompiled-$(ARCH)
PRECOMPILE_TARGET_ppc64le := pulley64
precompiled:
	@tests/dev/cross-toolchain.sh $(ARCH) $(STATIC_TARGET)
	$(STATIC_QEMU) $(STATIC_BINARY) plugin precompile --target $(or $(PRECOMPILE_TARGET_$(ARCH)),$(STATIC_TARGET)) --out $(PRECOMPILED_OUT)

# What tests/dev/multiarch-check.sh and the Containerfile need to know of ARCH's build.
static-binary-path:
	@echo $(STATIC_BINARY)
static-binary-qemu:
	@echo $(STATIC_QEMU)

## multiarch-check: the four static binaries built and run under qemu-user (not in `make test`:
## about an hour on 2 cores): --version, every built-in inspected, a reconcile and an admission
## evaluated on precompiled code; arm64 also passes the run-check (ODH_MULTIARCH=arm64 for one)
multiarch-check: toolchain apiserver
	$(CARGO) build -q -p odh-test-support --bin odh-dev
	@tests/dev/multiarch-check.sh
.PHONY: precompiled static-binary-path static-binary-qemu multiarch-check
# --- end architectures ----------------------------------------------------------------------------

## FIPS=1 (static-binary, image, fips-check): the FIPS variant, cargo feature `fips`: every TLS
## endpoint and client, signature check and artifact digest through AWS-LC's FIPS module
## (aws-lc-fips-sys, built from source with CMake, Go, Perl and a C compiler, which
## tests/dev/fips-toolchain.sh installs when missing); the binary refuses to start unless the module
## is in FIPS mode (docs/operations.md, "The FIPS variant")
FIPS ?=
FIPS_CARGO_FLAGS := $(if $(filter 1 yes true,$(FIPS)),--features fips)
FIPS_TOOLCHAIN := $(if $(FIPS_CARGO_FLAGS),fips-toolchain)
FIPS_IMAGE_ARGS := $(if $(FIPS_CARGO_FLAGS),--build-arg FIPS=1)

# aws-lc-fips-sys's own CFLAGS (no other crate's C build sees them): the kernel headers musl-gcc
# does not search (tests/dev/fips-toolchain.sh links them).
ifneq ($(FIPS_CARGO_FLAGS),)
static-binary: export AWS_LC_FIPS_SYS_CFLAGS_x86_64_unknown_linux_musl := -idirafter $(CURDIR)/target/musl-kernel-headers
endif

.PHONY: fips-toolchain fips-check
fips-toolchain:
	@tests/dev/fips-toolchain.sh musl

## fips-check: the FIPS build (dev profile, glibc): it serves TLS 1.3 on its webhook port with an
## approved suite, logs FIPS mode, refuses clients offering only ChaCha20 or only X25519 and refuses
## to start when the module is not in FIPS mode (host/app/tests/fips_mode.rs); every unit test and
## the cosign/OCI tests (registry_oci) pass on the FIPS module. Not part of `make test`: the module's
## C build and a second build of everything above rustls take 10-15 minutes on 2 cores the first
## time. The whole workspace is selected, as in `make test`, so wasmtime is not built again.
fips-check: toolchain test-deps plugins $(APISERVER)
	@tests/dev/fips-toolchain.sh
	$(CARGO) test --locked --workspace --features odh-model-controller/fips --lib --test fips_mode --test registry_oci

## static-binary: the statically linked release host the image ships (the Containerfile runs it);
## ARCH=arm64|s390x|ppc64le cross-compiles it (default amd64)
STATIC_TARGET := $(TRIPLE_$(ARCH))
STATIC_BINARY := $(or $(CARGO_TARGET_DIR),target)/$(STATIC_TARGET)/release/odh-model-controller
static-binary: toolchain $(FIPS_TOOLCHAIN)
	@tests/dev/cross-toolchain.sh $(ARCH) $(STATIC_TARGET)
	$(CARGO) build --release --locked -p odh-model-controller --bin odh-model-controller --target $(STATIC_TARGET) $(FIPS_CARGO_FLAGS)
	@! readelf -l $(STATIC_BINARY) | grep -q 'program interpreter' || { echo "$(STATIC_BINARY) is not static"; exit 1; }
	@$(STATIC_QEMU) $(STATIC_BINARY) --version

## image: the controller image (Containerfile) as $(IMG), with podman or docker
image:
	@test -n "$(CONTAINER_TOOL)" || { echo "no container builder (podman or docker) found"; exit 1; }
	$(CONTAINER_TOOL) build -f Containerfile $(FIPS_IMAGE_ARGS) -t $(IMG) .
