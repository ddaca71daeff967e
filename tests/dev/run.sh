#!/usr/bin/env bash
# `make run`: the controller against $KUBECONFIG, or against a local apiserver started here.
# Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/../.."

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${KUBECONFIG:-}" ]; then
	dir=target/dev-cluster
	mkdir -p "$dir"
	rm -f "$dir/ready.json"
	echo "starting a local kube-apiserver (log: $dir/apiserver.log)"
	target/odh-test-apiserver --dir "$dir" --ready-file "$dir/ready.json" >"$dir/apiserver.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 1200); do
		[ -f "$dir/ready.json" ] && break
		kill -0 "${pids[0]}" 2>/dev/null || { tail -20 "$dir/apiserver.log"; exit 1; }
		sleep 0.1
	done
	[ -f "$dir/ready.json" ] || { echo "the apiserver did not become ready"; exit 1; }
	cat "$dir/ready.json"
	export KUBECONFIG="$PWD/$dir/kubeconfig"
fi

target/debug/odh-dev install-crds deploy/crds tests/crds
cert_dir=target/dev-cluster/webhook-certs
target/debug/odh-dev serving-cert "$cert_dir"
target/debug/odh-model-controller run --health-probe-bind-address=127.0.0.1:8081 --metrics-bind-address=127.0.0.1:8080 \
	--webhook-bind-address=127.0.0.1:9443 --webhook-cert-dir="$cert_dir" &
pids+=($!)
wait "${pids[-1]}"
