#!/usr/bin/env bash
# Makes sure the tests that render the deploy overlays (`kubectl kustomize`) and dry-run them
# against the test apiserver have a kubectl: one on PATH (or $KUBECTL) is used as it is;
# otherwise kubectl is built with Go from tests/dev/kubectl (k8s.io/kubectl through the Go module
# proxy, pinned by its go.sum) into target/tools/kubectl, where the tests look next
# (odh_test_support::dev::kubectl). No prebuilt binary can be downloaded on these machines, and
# Debian's kubernetes-client (1.20) is too old for the overlays' kustomize features. Idempotent:
# quick when a kubectl is there; the first build takes minutes (Go's build cache then keeps it).
set -euo pipefail
cd "$(dirname "$0")/../.."

works() { "$1" version --client >/dev/null 2>&1; }
if [ -n "${KUBECTL:-}" ] && works "$KUBECTL"; then exit 0; fi
if command -v kubectl >/dev/null && works kubectl; then exit 0; fi
out=target/tools/kubectl
if [ -x "$out" ] && works "$out"; then exit 0; fi

if ! command -v go >/dev/null; then
	echo "error: no kubectl on PATH, and no Go to build one (tests/dev/kubectl): install Go or kubectl" >&2
	exit 1
fi
version=$(sed -n 's/^\tk8s.io\/kubectl v\(.*\)$/\1/p' tests/dev/kubectl/go.mod)
echo "building kubectl (k8s.io/kubectl v$version) into $out (a few minutes the first time)"
mkdir -p "$(dirname "$out")"
(cd tests/dev/kubectl && CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.${version#0.}" \
	-o "../../../$out" .)
works "$out"
