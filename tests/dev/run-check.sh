#!/usr/bin/env bash
# `make run` walked through as the README tells a new user (`make test` runs this): start it,
# see the sample's objects the controller made, see a webhook of this host answer through the
# apiserver, stop it with Ctrl-C, and find nothing left running. Ports and the cluster
# directory are its own, so a `make run` of yours is not disturbed.
set -euo pipefail
cd "$(dirname "$0")/../.."

export ODH_RUN_HEALTH=127.0.0.1:18081 ODH_RUN_METRICS=127.0.0.1:18080 ODH_RUN_WEBHOOK=127.0.0.1:19443
export ODH_RUN_CLUSTER_DIR=target/run-check-cluster POD_NAMESPACE=opendatahub ODH_RUN_DEMO_NAMESPACE=odh-demo
unset KUBECONFIG
log=target/run-check.log
rm -rf "$ODH_RUN_CLUSTER_DIR"
run=
fail() {
	[ -n "$run" ] && kill -INT -- "-$run" 2>/dev/null && wait "$run" 2>/dev/null
	echo "run-check: $*" >&2
	echo "--- $log" >&2
	tail -40 "$log" >&2
	exit 1
}

# Its own process group, so the Ctrl-C below reaches the script as a terminal's would.
setsid tests/dev/run.sh >"$log" 2>&1 &
run=$!
for _ in $(seq 1 1800); do
	grep -q "Ctrl-C stops everything" "$log" && break
	kill -0 "$run" 2>/dev/null || fail "make run stopped"
	sleep 0.1
done
grep -q "Ctrl-C stops everything" "$log" || fail "the sample was not reconciled in 3 minutes"

for object in "InferenceService/demo-model (finalizers: odh.inferenceservice.finalizers)" \
	"Route/demo-model" "Service/demo-model-metrics" "ServiceMonitor/demo-model-metrics" \
	"ConfigMap/demo-model-metrics-dashboard"; do
	grep -qF "  $object" "$log" || fail "missing from the shown objects: $object"
done

# The validating webhook of this host, called by the apiserver: the application namespace is
# protected.
export KUBECONFIG=$PWD/$ODH_RUN_CLUSTER_DIR/kubeconfig
if denied=$("${CARGO_TARGET_DIR:-target}"/debug/odh-dev apply "$POD_NAMESPACE" tests/dev/samples/inference-service.yaml 2>&1); then
	fail "an InferenceService in $POD_NAMESPACE was admitted"
fi
grep -q "specified namespace is protected" <<<"$denied" || fail "unexpected answer: $denied"

apiserver=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$ODH_RUN_CLUSTER_DIR/ready.json")
kill -INT -- "-$run"
wait "$run" || true
for pid in $apiserver $(pgrep -f "health-probe-bind-address=$ODH_RUN_HEALTH" || true); do
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "process $pid is still running after Ctrl-C"
done
echo "run-check: make run starts, reconciles its sample, admits through its webhooks and stops"
