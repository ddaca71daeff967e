#!/usr/bin/env bash
# `make run`: the controller with its default plugins against $KUBECONFIG, or against a local
# apiserver started here. With the local apiserver it also shows what the controller does: the
# webhooks registered against this host, a sample InferenceService applied, and what the
# controller made of it (a cluster of your own is left alone: nothing is registered or
# applied there). Ctrl-C stops everything this script started and removes the registrations.
#
# Settings (environment): POD_NAMESPACE (default opendatahub: the plugins ConfigMap and the
# protected application namespace), ODH_RUN_DEMO_NAMESPACE (odh-demo), ODH_RUN_HEALTH
# (127.0.0.1:8081), ODH_RUN_METRICS (127.0.0.1:8080), ODH_RUN_WEBHOOK (127.0.0.1:9443),
# ODH_RUN_CLUSTER_DIR (target/dev-cluster, for the local apiserver), ODH_RUN_HOST_BIN (the
# controller binary, target/debug/odh-model-controller; e.g. `make static-binary`'s).
set -euo pipefail
cd "$(dirname "$0")/../.."

export POD_NAMESPACE=${POD_NAMESPACE:-opendatahub}
demo=${ODH_RUN_DEMO_NAMESPACE:-odh-demo}
health=${ODH_RUN_HEALTH:-127.0.0.1:8081}
metrics=${ODH_RUN_METRICS:-127.0.0.1:8080}
webhook=${ODH_RUN_WEBHOOK:-127.0.0.1:9443}
dir=${ODH_RUN_CLUSTER_DIR:-target/dev-cluster}
# Where `make build` put the binaries: cargo's target directory, wherever CARGO_TARGET_DIR moves it.
bin=${CARGO_TARGET_DIR:-target}/debug
host_bin=${ODH_RUN_HOST_BIN:-$bin/odh-model-controller}

pids=()
cleanup() {
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

local_cluster=
if [ -z "${KUBECONFIG:-}" ]; then
	local_cluster=yes
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
	export KUBECONFIG="$PWD/$dir/kubeconfig"
fi

"$bin/odh-dev" install-crds deploy/crds tests/crds
"$bin/odh-dev" ensure-namespace "$POD_NAMESPACE"
[ -n "$local_cluster" ] && "$bin/odh-dev" ensure-namespace "$demo"
cert_dir=$dir/webhook-certs
"$bin/odh-dev" serving-cert "$cert_dir"
# On the local apiserver the controller registers its own webhooks, pointed at this process.
sync=()
[ -n "$local_cluster" ] && sync=(--sync-webhook-configurations --webhook-url="https://$webhook")
"$host_bin" run --health-probe-bind-address="$health" --metrics-bind-address="$metrics" \
	--plugin-cache-dir=target/plugin-cache "${sync[@]}" \
	--webhook-bind-address="$webhook" --webhook-cert-dir="$cert_dir" &
pids+=($!)

# Ready: plugins loaded, caches synced, the webhook server serving its certificate.
ready() {
	local reply
	{ exec 3<>"/dev/tcp/${health%:*}/${health##*:}"; } 2>/dev/null || return 1
	printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
	read -r reply <&3 || true
	exec 3>&-
	[[ $reply == *" 200 "* ]]
}
for _ in $(seq 1 600); do
	kill -0 "${pids[-1]}" 2>/dev/null || { echo "the controller stopped"; exit 1; }
	ready && break
	sleep 0.1
done
ready || { echo "the controller did not become ready"; exit 1; }

if [ -z "$local_cluster" ]; then
	echo "the controller is ready (KUBECONFIG=$KUBECONFIG); Ctrl-C stops it"
	wait "${pids[-1]}"
	exit
fi
"$bin/odh-dev" apply "$demo" tests/dev/samples/inference-service.yaml
"$bin/odh-dev" wait-for "$demo" v1 ConfigMap demo-model-metrics-dashboard
"$bin/odh-dev" wait-for "$demo" route.openshift.io/v1 Route demo-model
echo "the sample is reconciled; in namespace $demo:"
"$bin/odh-dev" show "$demo"
cat <<INFO

The controller runs with its default plugins (POD_NAMESPACE=$POD_NAMESPACE). Look at:
  export KUBECONFIG=$KUBECONFIG
  kubectl -n $demo get inferenceservices,routes,services,servicemonitors,configmaps
  a plugin of yours (odh-model-controller plugin new, docs/plugin-authors.md §5): write its
  entry in a plugins.yaml, then
  kubectl -n $POD_NAMESPACE create configmap odh-model-controller-plugins --from-file=plugins.yaml
  kubectl -n $POD_NAMESPACE get configmap odh-model-controller-plugins-status -o yaml
      (one key per plugin the ConfigMap names; docs/plugins-configmap.md)
  curl -s http://$metrics/metrics | grep -E '^(controller_runtime_reconcile_total|odh_plugin_calls_total)'
  curl -s http://$health/readyz
Admission goes through this host's webhooks (it registered them: kubectl get
mutatingwebhookconfigurations,validatingwebhookconfigurations): an InferenceService in
$POD_NAMESPACE is denied (a protected namespace). Ctrl-C stops everything.
INFO
wait "${pids[-1]}"
